// The message list: a conversation's stored messages, and the turn being streamed. The
// person's messages are shown as typed; the agent's as Markdown (./markdown.js) once
// they are whole (while one streams, its text grows as plain text).

import { clear, h, timeElement } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { routeName } from "./words.js";

const EMPTY_TEXT =
  "Start a conversation. The agent keeps a bounded memory of each conversation and " +
  "remembers what you tell it about yourself across conversations.";

/** The `<ol>` of messages. */
export class MessageList {
  constructor(root) {
    this.root = root;
    // follow a growing answer only while the reader is at the end: someone who scrolled
    // up to read stays where they are
    this.following = true;
    root.addEventListener("scroll", () => {
      this.following = root.scrollHeight - root.scrollTop - root.clientHeight < 40;
    });
  }

  /** Show a conversation's stored messages (the hydration DTO's) after `lead` (the note
   * of its folded messages, when there is one), or the empty state. */
  show(messages, lead = null) {
    clear(this.root);
    if (lead) this.root.append(lead);
    else if (!messages.length) {
      this.root.append(h("li", { class: "empty", text: EMPTY_TEXT }));
      return;
    }
    for (const message of messages) {
      const item = bubble(message.role, message.text, message.createdAt);
      if (message.id) item.dataset.messageId = message.id;
      this.root.append(item);
    }
    this.scrollToEnd();
  }

  /** Bring a stored message into view and mark it (a search hit); false when the
   * conversation no longer holds it (folded into its summary). */
  reveal(messageId) {
    const item = [...this.root.querySelectorAll("[data-message-id]")].find(
      (node) => node.dataset.messageId === messageId,
    );
    if (!item) return false;
    for (const old of this.root.querySelectorAll(".found")) old.classList.remove("found");
    item.classList.add("found");
    item.scrollIntoView({ block: "center" });
    this.following = false;
    return true;
  }

  /** Show the person's message; returns its element (removed again if the turn is refused). */
  addUser(text) {
    this.root.querySelector(":scope > .empty")?.remove();
    const item = bubble("user", text, new Date().toISOString());
    this.root.append(item);
    this.scrollToEnd();
    return item;
  }

  /** Show the review a reloaded conversation waits for: its goal as the person's
   * message (memory keeps nothing of a turn until it ends), and the agent's line that
   * says the form below waits. */
  showWaitingReview(review) {
    this.root.querySelector(":scope > .empty")?.remove();
    if (typeof review.goal === "string" && review.goal.trim()) {
      const item = bubble("user", review.goal, null);
      item.dataset.pending = "review";
      this.root.append(item);
    }
    const view = new TurnView("tasklist", () => {});
    view.finish({ status: "interrupted", route: "tasklist", text: "" }, [], null);
    this.root.append(view.item);
    this.scrollToEnd();
    return view;
  }

  /** Show what the person answered a review (a line of the page, not of memory). */
  addDecision(text) {
    const item = h("li", { class: "decision", text });
    this.root.append(item);
    this.scrollToEnd();
    return item;
  }

  /** Start the agent's answer to a turn (or to a review's decision). */
  startTurn(route) {
    const view = new TurnView(route, () => this.following && this.scrollToEnd());
    this.root.append(view.item);
    this.scrollToEnd();
    return view;
  }

  scrollToEnd() {
    this.root.scrollTop = this.root.scrollHeight;
    this.following = true;
  }
}

function bubble(role, text, createdAt) {
  return h(
    "li",
    { class: `message ${role}`, attrs: { "data-role": role } },
    h(
      "div",
      { class: "meta" },
      h("span", { class: "who", text: role === "user" ? "You" : "Agent" }),
      createdAt ? timeElement(createdAt) : null,
    ),
    role === "user"
      ? h("div", { class: "text", text })
      : h("div", { class: "text markdown" }, renderMarkdown(text)),
  );
}

/** The agent's answer while it streams, then its outcome. `data-state` says where it is:
 * streaming, done, review (waiting for a decision), stopped or failed. */
export class TurnView {
  constructor(route, onGrow) {
    this.onGrow = onGrow;
    this.streamed = false;
    this.lines = new Map();
    this.route = h("span", { class: "route", hidden: !route, text: routeName(route) });
    this.text = h("div", { class: "text" });
    this.body = document.createTextNode("");
    this.text.append(this.body);
    this.progress = h("ul", { class: "progress", attrs: { "aria-label": "Progress" } });
    this.notes = h("ul", { class: "memory-notes", attrs: { "aria-label": "Memory" } });
    this.item = h(
      "li",
      {
        class: "message assistant",
        attrs: { "data-role": "assistant", "data-state": "streaming" },
      },
      h("div", { class: "meta" }, h("span", { class: "who", text: "Agent" }), this.route),
      this.progress, // what the turn did comes first: a workflow's answer arrives last
      this.text,
      this.notes,
    );
  }

  setRoute(route) {
    this.route.textContent = routeName(route);
    this.route.hidden = false;
  }

  /** Append streamed answer text (one text node grows: no markup is ever parsed). */
  appendToken(text) {
    this.body.appendData(text);
    this.streamed = true;
    this.onGrow();
  }

  /** Add a progress line, or replace the line with the same key. */
  showProgress({ key, text, failed }) {
    let line = this.lines.get(key);
    if (!line) {
      line = h("li");
      this.lines.set(key, line);
      this.progress.append(line);
    }
    line.textContent = text;
    line.classList.toggle("failed", Boolean(failed));
    this.onGrow();
  }

  /** The turn ended: its text (when nothing streamed: workflows answer in one piece),
   * a status note and the memory notes. */
  finish(result, notes, statusNote) {
    const text = result.text || this.body.data;
    if (text) {
      // whole now: shown as Markdown (a streamed text is replaced by its rendering)
      this.text.replaceChildren(renderMarkdown(text));
      this.text.classList.add("markdown");
    }
    if (result.route) this.setRoute(result.route);
    if (statusNote) this.note(statusNote, "warn");
    for (const note of notes) this.note(note.text, note.tone);
    const waiting = result.status === "interrupted";
    if (waiting) this.note("Waiting for your review, below.", "info");
    this.item.dataset.state = waiting ? "review" : "done";
    this.onGrow();
  }

  /** Add memory notes read after the turn ended (the DTO's summary version). */
  note(text, tone = "info") {
    const item = h("li", { class: `note ${tone}`, text });
    this.notes.append(item);
    this.onGrow();
    return item;
  }

  fail(message) {
    this.note(message, "warn");
    this.item.dataset.state = "failed";
    this.onGrow();
  }

  stopped() {
    this.note("Stopped: nothing from this turn was kept in memory", "info");
    this.item.dataset.state = "stopped";
  }
}
