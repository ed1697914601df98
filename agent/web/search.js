// The sidebar's search of earlier conversations (GET /api/search): each hit with its
// date, its conversation's title and a snippet with the searched words marked (built
// as text nodes and <mark> elements, never as HTML). A hit opens its conversation at
// the line; a conversation pruned from the list is said to be so, with its archived
// lines shown here.

import { ApiError, requestJson } from "./api.js";
import { clear, h, plural, shortDate } from "./dom.js";

const SNIPPET_CHARS = 160;
const PRUNED =
  "This conversation is no longer in the list (only the 10 most recently active are " +
  "kept), so it cannot be opened; its archived lines:";

/** The words of a query worth marking (two characters or more), longest first. */
export function queryWords(query) {
  const words = String(query || "")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length >= 2);
  return [...new Set(words)].sort((a, b) => b.length - a.length);
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A window of `text` around the first searched word, with "…" where it was cut. */
export function snippet(text, words, limit = SNIPPET_CHARS) {
  const flat = String(text || "").replace(/\s+/g, " ").trim();
  if (flat.length <= limit) return flat;
  const lower = flat.toLowerCase();
  const at = Math.min(...words.map((w) => lower.indexOf(w)).filter((i) => i >= 0), flat.length);
  const start = at === flat.length ? 0 : Math.max(0, at - Math.floor(limit / 3));
  const end = Math.min(flat.length, start + limit);
  return `${start > 0 ? "…" : ""}${flat.slice(start, end)}${end < flat.length ? "…" : ""}`;
}

/** `text` as nodes: the searched words in <mark>, the rest as text. */
export function markedText(text, words) {
  if (!words.length) return [text];
  const pattern = new RegExp(words.map(escapeRegExp).join("|"), "giu");
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) nodes.push(text.slice(last, match.index));
    nodes.push(h("mark", { text: match[0] }));
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}

export class Search {
  /**
   * @param {{isListed: (id: string) => boolean,
   *          onOpen: (conversationId: string, messageId: string) => void}} actions
   */
  constructor(actions) {
    this.actions = actions;
    this.form = document.getElementById("search-form");
    this.input = document.getElementById("search-text");
    this.results = document.getElementById("search-results");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.search(this.input.value);
    });
    this.input.addEventListener("input", () => {
      if (!this.input.value.trim()) this.close();
    });
  }

  close() {
    clear(this.results);
    this.results.hidden = true;
  }

  async search(query) {
    const text = query.trim();
    if (!text) return this.close();
    let body;
    try {
      body = await requestJson("GET", `/api/search?q=${encodeURIComponent(text)}`);
    } catch (error) {
      // a refused query (too long) or a server without search: said here, in words
      const message =
        error instanceof ApiError && error.status === 404
          ? "Search is not available on this server."
          : error instanceof ApiError
            ? error.message
            : "The search failed.";
      this.show([h("p", { class: "form-error small", text: message })]);
      return;
    }
    this.render(text, Array.isArray(body && body.results) ? body.results : []);
  }

  show(nodes) {
    clear(this.results);
    this.results.append(
      h(
        "div",
        { class: "search-head" },
        h("span", { class: "muted small", text: "Search" }),
        h("button", {
          type: "button",
          class: "ghost small-button",
          text: "Close",
          attrs: { "data-role": "close-search" },
          on: {
            click: () => {
              this.input.value = "";
              this.close();
            },
          },
        }),
      ),
      ...nodes,
    );
    this.results.hidden = false;
  }

  render(query, hits) {
    const words = queryWords(query);
    if (!hits.length) {
      this.show([h("p", { class: "muted small", text: `Nothing found for “${query}”.` })]);
      return;
    }
    const list = h(
      "ul",
      { class: "search-hits" },
      hits.map((hit) =>
        h(
          "li",
          {},
          h(
            "button",
            {
              type: "button",
              class: "search-hit",
              attrs: { "data-conversation-id": String(hit.conversationId || "") },
              on: { click: () => this.open(hit, hits, words) },
            },
            h(
              "span",
              { class: "search-meta" },
              h("time", { text: shortDate(hit.createdAt), attrs: { datetime: hit.createdAt } }),
              h("span", { class: "search-title", text: String(hit.title || "") }),
            ),
            h("span", { class: "search-snippet" }, ...markedText(snippet(hit.text, words), words)),
          ),
        ),
      ),
    );
    this.show([h("p", { class: "muted small", text: plural(hits.length, "line") }), list]);
  }

  open(hit, hits, words) {
    if (this.actions.isListed(hit.conversationId)) {
      this.actions.onOpen(hit.conversationId, hit.messageId);
      return;
    }
    const lines = hits.filter((other) => other.conversationId === hit.conversationId);
    this.show([
      h("p", { class: "small", attrs: { "data-role": "pruned-hit" }, text: PRUNED }),
      h("p", { class: "search-title", text: String(hit.title || "") }),
      h(
        "ul",
        { class: "archived-lines" },
        lines.map((line) =>
          h(
            "li",
            {},
            h("span", {
              class: "muted small",
              text: `${shortDate(line.createdAt)} · ${line.role === "user" ? "You" : "Agent"}: `,
            }),
            ...markedText(String(line.text || ""), words),
          ),
        ),
      ),
    ]);
  }
}
