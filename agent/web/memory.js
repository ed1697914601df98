// The memory panel: what the open conversation keeps (summary, pinned decisions, open
// questions, from the hydration DTO) and the long-term items of the session (GET
// /api/memories?history=true), which can be added, deleted one by one, or deleted all
// at once. Each item says where it came from (the line it was said in, which opens that
// conversation there); the items a later statement changed fold away as history, each
// with what replaced it, until they are forgotten.

import { ApiError, requestJson } from "./api.js";
import { clear, confirmButton, h, plural, shortDate } from "./dom.js";
import { conversationLines, prunedLines } from "./search.js";

const NO_LONG_TERM = "Long-term memory is not available on this server.";
const NO_SUMMARY =
  "None yet: once the conversation passes 8 messages, older turns are folded into a summary.";
const UNLISTED = "a conversation no longer listed";
const SOURCE_LINES = 10;
const MAX_QUERY_CHARS = 500;
const LINES_GONE =
  "Its lines are no longer kept: the conversation was deleted, or is past the retention period.";

export class MemoryPanel {
  /**
   * @param {{notice: (error: Error) => void,
   *          titleOf: (conversationId: string) => string | null,
   *          onOpen: (conversationId: string, messageId: string) => void}} actions
   *   `notice` shows an error that is not about the form (the page's notice); `titleOf`
   *   names a listed conversation (null: not in the list); `onOpen` opens one at a line
   */
  constructor({ notice, titleOf, onOpen }) {
    this.notice = notice;
    this.titleOf = titleOf;
    this.onOpen = onOpen;
    this.conversation = document.getElementById("conversation-memory");
    this.list = document.getElementById("long-term-list");
    this.status = document.getElementById("long-term-status");
    this.history = document.getElementById("long-term-history");
    this.historyCount = document.getElementById("long-term-history-count");
    this.historyList = document.getElementById("long-term-history-list");
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

  /** Read the session's long-term items and their history (after every turn: a turn may
   * add some, or change some into history). */
  async loadLongTerm() {
    try {
      this.showLongTerm(await requestJson("GET", "/api/memories?history=true"));
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
   * Show the long-term items and their history, or why there are none to show.
   * @param {{memories: object[], history?: object[], limit: number} | {unavailable: string}} state
   */
  showLongTerm(state) {
    clear(this.list);
    clear(this.historyList);
    clear(this.forgetAll);
    if ("unavailable" in state) {
      this.status.textContent = state.unavailable;
      this.form.hidden = true;
      this.history.hidden = true;
      return;
    }
    this.form.hidden = false;
    const items = state.memories;
    const history = Array.isArray(state.history) ? state.history : [];
    this.status.textContent = items.length
      ? `${plural(items.length, "item")} of at most ${state.limit}, used in every conversation.`
      : "Nothing yet. Tell the agent about yourself (“remember that …”), or add an item here.";
    for (const item of items) this.list.append(this.itemRow(item, "Delete"));
    // the fold keeps its open state across reloads: only its list is replaced
    this.history.hidden = !history.length;
    this.historyCount.textContent = plural(history.length, "changed item");
    const current = new Map(items.map((item) => [item.id, item]));
    for (const item of history) {
      this.historyList.append(this.itemRow(item, "Forget", changeLine(item, current)));
    }
    if (items.length || history.length) {
      const also = history.length ? ` and ${history.length} in history` : "";
      this.forgetAll.append(
        confirmButton({
          label: "Delete all",
          question: `Delete all ${plural(items.length, "item")}${also}?`,
          confirmLabel: "Delete all",
          className: "danger",
          action: () => this.forgetEverything(),
        }),
      );
    }
  }

  /** An item as a list row: its kind, text, what changed it (history), where it came
   * from, and the button that forgets it. */
  itemRow(item, action, change = null) {
    return h(
      "li",
      { class: "long-term-item", attrs: { "data-id": item.id, "data-kind": item.kind } },
      h("span", { class: `kind kind-${kindClass(item.kind)}`, text: item.kind }),
      h(
        "div",
        { class: "item-body" },
        h("span", { class: "item-text", text: item.text }),
        change,
        this.provenance(item),
      ),
      h("button", {
        type: "button",
        class: "ghost small-button",
        text: action,
        attrs: { "aria-label": `${action}: ${item.text}` },
        on: { click: () => this.forget(item.id) },
      }),
    );
  }

  /** "said on DATE in TITLE: “quote”", the title a link to the line; "added by you on
   * DATE" for an item added here. */
  provenance(item) {
    const source = item.provenance || {};
    const at = source.at || item.createdAt;
    const when = h("time", { text: shortDate(at), attrs: { datetime: at, title: at } });
    const conversationId = source.conversationId || item.conversationId;
    if (!conversationId) {
      return h(
        "p",
        { class: "provenance", attrs: { "data-role": "provenance" } },
        "added by you on ",
        when,
      );
    }
    const title = this.titleOf(conversationId);
    const lines = h("div", { class: "source-lines", hidden: true });
    // a link, not a button: it flows in the sentence (a button would wrap as a block)
    const where = source.messageId
      ? h("a", {
          href: `#c=${encodeURIComponent(conversationId)}`,
          text: title ?? UNLISTED,
          title: "Show the line it was said in",
          attrs: { "data-role": "provenance-link" },
          on: {
            click: (event) => {
              event.preventDefault();
              this.openSource(source, item.text, lines);
            },
          },
        })
      : h("span", { text: title ?? UNLISTED });
    return h(
      "div",
      { class: "provenance", attrs: { "data-role": "provenance" } },
      h(
        "p",
        {},
        "said on ",
        when,
        " in ",
        where,
        source.quote ? ": " : null,
        source.quote ? h("span", { class: "quote", text: `“${source.quote}”` }) : null,
      ),
      lines,
    );
  }

  /** Open the conversation at the line an item came from; one pruned from the list shows
   * its archived lines under the item instead (a second click hides them). */
  async openSource(source, text, holder) {
    if (this.titleOf(source.conversationId) !== null) {
      this.onOpen(source.conversationId, source.messageId);
      return;
    }
    if (!holder.hidden) {
      holder.hidden = true;
      return;
    }
    const query = (source.quote || text).slice(0, MAX_QUERY_CHARS);
    let nodes;
    try {
      const lines = await conversationLines(source.conversationId, query, SOURCE_LINES);
      nodes = lines.length
        ? prunedLines(lines[0].title, lines, [], source.messageId)
        : [h("p", { class: "muted small", text: LINES_GONE })];
    } catch (error) {
      const message = error instanceof ApiError ? error.message : "The search failed.";
      nodes = [h("p", { class: "form-error small", text: message })];
    }
    holder.replaceChildren(...nodes);
    holder.hidden = false;
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

/** When a history item changed, and what replaced it: the replacing item's text while it
 * holds, else that it no longer holds. */
function changeLine(item, current) {
  const by = item.supersededBy ? current.get(item.supersededBy) : undefined;
  return h(
    "p",
    { class: "item-change", attrs: { "data-role": "change" } },
    "changed on ",
    h("time", { text: shortDate(item.invalidAt), attrs: { datetime: item.invalidAt } }),
    by ? ": replaced by " : ": no longer holds",
    by ? h("span", { class: "replacement", text: `“${by.text}”` }) : null,
  );
}

function kindClass(kind) {
  return ["boundary", "preference", "goal", "style", "fact"].includes(kind) ? kind : "other";
}
