// The message list: a conversation's stored messages, and the turn being streamed.

import { clear, h, timeElement } from "./dom.js";
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

  /** Show a conversation's stored messages (the hydration DTO's), or the empty state. */
  show(messages) {
    clear(this.root);
    if (!messages.length) {
      this.root.append(h("li", { class: "empty", text: EMPTY_TEXT }));
      return;
    }
    for (const message of messages) {
      this.root.append(bubble(message.role, message.text, message.createdAt));
    }
    this.scrollToEnd();
  }

  /** Show the person's message; returns its element (removed again if the turn is refused). */
  addUser(text) {
    this.root.querySelector(":scope > .empty")?.remove();
    const item = bubble("user", text, new Date().toISOString());
    this.root.append(item);
    this.scrollToEnd();
    return item;
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
    h("div", { class: "text", text }),
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
    if (!this.streamed && result.text) this.body.appendData(result.text);
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
