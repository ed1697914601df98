// The sidebar's search of earlier conversations (GET /api/search): the lines found, one
// result per turn (what you said and the answer, when both matched), each with its
// date, its conversation's title and snippets with the searched words marked (built as
// text nodes and <mark> elements, never as HTML). A result opens its conversation at
// the line; a conversation pruned from the list is said to be so, with its archived
// lines shown here. A line whose statement a later one changed ("I moved to Porto" after
// "I live in Lisbon") is marked so, in words.

import { ApiError, requestJson } from "./api.js";
import { clear, h, plural, shortDate } from "./dom.js";

const SNIPPET_CHARS = 160;
const CHANGED = "A later statement changed what this line says (see History in the memory panel)";
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

function flatten(text) {
  return String(text || "").replace(/\s+/g, " ").trim();
}

/** Where `part` occurs in `text`, as [start, end) ranges. */
function occurrences(text, part) {
  const found = [];
  for (let at = part ? text.indexOf(part) : -1; at >= 0; at = text.indexOf(part, at + 1)) {
    found.push([at, at + part.length]);
  }
  return found;
}

/**
 * A window of `text` around the first searched word, with "…" where it was cut. With
 * `echoed` (the line the text answers), a word inside a copy of that line does not
 * count, and a text whose every searched word is in such a copy has no snippet (null):
 * an answer that repeats the question would only show the same words twice.
 */
export function snippet(text, words, { limit = SNIPPET_CHARS, echoed = "" } = {}) {
  const flat = flatten(text);
  const lower = flat.toLowerCase();
  const copies = occurrences(lower, flatten(echoed).toLowerCase());
  const matches = words
    .flatMap((word) => occurrences(lower, word))
    .filter(([at]) => !copies.some(([start, end]) => at >= start && at < end))
    .map(([at]) => at);
  if (echoed && !matches.length) return null;
  if (flat.length <= limit) return flat;
  const at = matches.length ? Math.min(...matches) : 0;
  const start = Math.max(0, at - Math.floor(limit / 3));
  const end = Math.min(flat.length, start + limit);
  return `${start > 0 ? "…" : ""}${flat.slice(start, end)}${end < flat.length ? "…" : ""}`;
}

/** The turn of a line: a user line and its answer share one (`<turn>-u`, `<turn>-a`). */
function turnOf(hit) {
  const id = String(hit.messageId || "");
  return `${hit.conversationId}/${/-[ua]$/.test(id) ? id.slice(0, -2) : id}`;
}

const ROLE_ORDER = { user: 0, assistant: 1 };

/** Hits as one result per turn (in the order of each turn's best hit), its lines in the
 * order they were said. */
export function turnResults(hits) {
  const turns = new Map();
  for (const hit of hits) {
    const key = turnOf(hit);
    if (!turns.has(key)) turns.set(key, []);
    turns.get(key).push(hit);
  }
  return [...turns.values()].map((lines) =>
    lines.sort((a, b) => (ROLE_ORDER[a.role] ?? 2) - (ROLE_ORDER[b.role] ?? 2)),
  );
}

const SPEAKERS = { user: "You", assistant: "Agent", summary: "Summary" };

/** The mark of a line whose statement a later one changed (words, not colour only). */
export function changedMark() {
  return h("span", { class: "changed-mark", text: "changed since", title: CHANGED });
}

/** An archived line as a list item: its date and speaker, then its text, words marked. */
export function archivedLine(line, words) {
  return h(
    "li",
    { attrs: { "data-role": line.role } },
    h("span", {
      class: "muted small",
      text: `${shortDate(line.createdAt)} · ${SPEAKERS[line.role] || line.role}: `,
    }),
    line.superseded ? changedMark() : null,
    ...markedText(String(line.text || ""), words),
  );
}

/**
 * The archived lines of one conversation that share words with `query` (GET /api/search
 * with its id), most relevant first.
 * @throws {ApiError}
 */
export async function conversationLines(conversationId, query, limit) {
  const params = new URLSearchParams({ q: query, conversationId, limit: String(limit) });
  const body = await requestJson("GET", `/api/search?${params}`);
  return Array.isArray(body && body.results) ? body.results : [];
}

/** A conversation pruned from the list, said to be so, with its archived `lines` (the
 * one of id `found` marked). */
export function prunedLines(title, lines, words, found = null) {
  return [
    h("p", { class: "small", attrs: { "data-role": "pruned-hit" }, text: PRUNED }),
    h("p", { class: "search-title", text: String(title || "") }),
    h(
      "ul",
      { class: "archived-lines" },
      lines.map((line) => {
        const item = archivedLine(line, words);
        if (found && line.messageId === found) item.classList.add("found");
        return item;
      }),
    ),
  ];
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
    const results = turnResults(hits);
    const list = h(
      "ul",
      { class: "search-hits" },
      results.map((lines) => {
        const [first] = lines;
        const said = lines.find((line) => line.role === "user");
        return h(
          "li",
          {},
          h(
            "button",
            {
              type: "button",
              class: "search-hit",
              attrs: { "data-conversation-id": String(first.conversationId || "") },
              on: { click: () => this.open(first, hits, words) },
            },
            h(
              "span",
              { class: "search-meta" },
              h("time", {
                text: shortDate(first.createdAt),
                attrs: { datetime: first.createdAt, title: first.createdAt },
              }),
              h("span", { class: "search-title", text: String(first.title || "") }),
              lines.some((line) => line.superseded) ? changedMark() : null,
            ),
            ...lines.map((line) => {
              const echoed = line.role === "assistant" && said ? said.text : "";
              const text = snippet(line.text, words, { echoed });
              if (text === null) return null;
              return h(
                "span",
                { class: "search-snippet", attrs: { "data-role": line.role } },
                h("span", { class: "muted", text: `${SPEAKERS[line.role] || line.role}: ` }),
                ...markedText(text, words),
              );
            }),
          ),
        );
      }),
    );
    this.show([h("p", { class: "muted small", text: plural(results.length, "result") }), list]);
  }

  open(hit, hits, words) {
    if (this.actions.isListed(hit.conversationId)) {
      this.actions.onOpen(hit.conversationId, hit.messageId);
      return;
    }
    const lines = hits.filter((other) => other.conversationId === hit.conversationId);
    this.show(prunedLines(hit.title, lines, words));
  }
}
