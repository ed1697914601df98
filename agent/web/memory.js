// The memory panel: what the open conversation keeps (summary, pinned decisions, open
// questions, from the hydration DTO) and the long-term items of the session (GET
// /api/memories), which can be added, deleted one by one, or deleted all at once.

import { ApiError, requestJson } from "./api.js";
import { clear, confirmButton, h, plural, shortDate } from "./dom.js";

const NO_LONG_TERM = "Long-term memory is not available on this server.";
const NO_SUMMARY =
  "None yet: once the conversation passes 8 messages, older turns are folded into a summary.";

export class MemoryPanel {
  /**
   * @param {{notice: (error: Error) => void}} options how to show an error that is not
   *   about the form (the page's notice)
   */
  constructor({ notice }) {
    this.notice = notice;
    this.conversation = document.getElementById("conversation-memory");
    this.list = document.getElementById("long-term-list");
    this.status = document.getElementById("long-term-status");
    this.forgetAll = document.getElementById("forget-all");
    this.form = document.getElementById("remember-form");
    this.text = document.getElementById("remember-text");
    this.kind = document.getElementById("remember-kind");
    this.error = document.getElementById("remember-error");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      const text = this.text.value.trim();
      if (!text) this.setError("Write what the agent should remember first.");
      else this.remember(text, this.kind.value || null);
    });
  }

  // -- long-term items: the API ---------------------------------------------------------

  /** Read the session's long-term items (after every turn: a turn may add or retire some). */
  async loadLongTerm() {
    try {
      this.showLongTerm(await requestJson("GET", "/api/memories"));
    } catch (error) {
      const missing = error instanceof ApiError && error.status === 404;
      this.showLongTerm({ unavailable: missing ? NO_LONG_TERM : error.message || NO_LONG_TERM });
    }
  }

  async remember(text, kind) {
    try {
      await requestJson("POST", "/api/memories", kind ? { text, kind } : { text });
    } catch (error) {
      // a refused text (a secret, a one-off request) says why: shown by the form
      if (error instanceof ApiError && error.status < 500) this.setError(error.message);
      else this.notice(error);
      return;
    }
    this.text.value = "";
    this.setError("");
    await this.loadLongTerm();
  }

  async forget(id) {
    try {
      await requestJson("DELETE", `/api/memories/${encodeURIComponent(id)}`);
    } catch (error) {
      // already gone (deleted in another tab): the reload below shows that
      if (!(error instanceof ApiError && error.code === "memory_not_found")) this.notice(error);
    }
    await this.loadLongTerm();
  }

  async forgetEverything() {
    try {
      await requestJson("DELETE", "/api/memories");
    } catch (error) {
      this.notice(error);
    }
    await this.loadLongTerm();
  }

  // -- rendering --------------------------------------------------------------------------

  /** Show a conversation's memory (its hydration DTO), or a draft's (null). */
  showConversation(dto) {
    clear(this.conversation);
    if (!dto) {
      this.conversation.append(h("p", { class: "muted", text: "A new chat has no memory yet." }));
      return;
    }
    const version =
      dto.summaryPreview && Number.isInteger(dto.summaryVersion)
        ? ` (version ${dto.summaryVersion})`
        : "";
    this.conversation.append(
      h("h4", { text: `Summary${version}` }),
      dto.summaryPreview
        ? h("p", { class: "summary-preview", text: dto.summaryPreview })
        : h("p", { class: "muted small", text: NO_SUMMARY }),
      h("h4", { text: "Pinned decisions" }),
      listOrNone(dto.pinnedDecisions, "pinned-decisions", "None yet."),
    );
    if (Array.isArray(dto.openQuestions)) {
      this.conversation.append(
        h("h4", { text: "Open questions" }),
        listOrNone(dto.openQuestions, "open-questions", "None."),
      );
    }
    const kept = Array.isArray(dto.messages) ? dto.messages.length : 0;
    this.conversation.append(
      h("p", {
        class: "muted small",
        text: `${plural(kept, "recent message")} kept verbatim (at most 8).`,
      }),
    );
  }

  /**
   * Show the long-term items, or why there are none to show.
   * @param {{memories: object[], limit: number} | {unavailable: string}} state
   */
  showLongTerm(state) {
    clear(this.list);
    clear(this.forgetAll);
    if ("unavailable" in state) {
      this.status.textContent = state.unavailable;
      this.form.hidden = true;
      return;
    }
    this.form.hidden = false;
    const items = state.memories;
    this.status.textContent = items.length
      ? `${plural(items.length, "item")} of at most ${state.limit}, used in every conversation.`
      : "Nothing yet. Tell the agent about yourself (“remember that …”), or add an item here.";
    for (const item of items) this.list.append(this.itemRow(item));
    if (items.length) {
      this.forgetAll.append(
        confirmButton({
          label: "Delete all",
          question: `Delete all ${plural(items.length, "item")}?`,
          confirmLabel: "Delete all",
          className: "danger",
          action: () => this.forgetEverything(),
        }),
      );
    }
  }

  itemRow(item) {
    const when = item.updatedAt || item.createdAt;
    return h(
      "li",
      { class: "long-term-item", attrs: { "data-id": item.id, "data-kind": item.kind } },
      h("span", { class: `kind kind-${kindClass(item.kind)}`, text: item.kind }),
      h("span", { class: "item-text", text: item.text }),
      h("time", { text: shortDate(when), attrs: { datetime: when, title: when } }),
      h("button", {
        type: "button",
        class: "ghost small-button",
        text: "Delete",
        attrs: { "aria-label": `Delete: ${item.text}` },
        on: { click: () => this.forget(item.id) },
      }),
    );
  }

  setError(message) {
    this.error.textContent = message || "";
    this.error.hidden = !message;
  }
}

function listOrNone(items, className, none) {
  if (!Array.isArray(items) || !items.length) return h("p", { class: "muted small", text: none });
  return h(
    "ol",
    { class: className },
    items.map((text) => h("li", { text: String(text) })),
  );
}

function kindClass(kind) {
  return ["boundary", "preference", "goal", "style", "fact"].includes(kind) ? kind : "other";
}
