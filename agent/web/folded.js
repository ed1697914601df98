// The note where a conversation's older messages were: compaction folded them into its
// summary. The note reads the summary and searches the folded lines (GET /api/search with
// the conversation's id: the archive keeps every line a turn wrote).

import { ApiError } from "./api.js";
import { h, plural } from "./dom.js";
import { archivedLine, conversationLines, queryWords } from "./search.js";

const FOLDED_LINES = 20;

/**
 * The note for a conversation's hydration DTO, or null when nothing was folded.
 * @param {object} dto the hydration DTO
 * @returns {HTMLElement | null}
 */
export function foldedNote(dto) {
  if (!Number.isInteger(dto.summaryVersion) || dto.summaryVersion < 1) return null;
  // lines still on the page are not folded: a search here shows only the others
  const shown = new Set(dto.messages.map((message) => message.id));
  const input = h("input", {
    type: "search",
    maxLength: 500,
    placeholder: "Search the folded messages",
    attrs: { "aria-label": "Search the folded messages" },
  });
  const results = h("div", { class: "folded-results", attrs: { "aria-live": "polite" } });
  const form = h(
    "form",
    { class: "folded-search", attrs: { role: "search", autocomplete: "off" } },
    input,
    h("button", { type: "submit", text: "Search" }),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = input.value.trim();
    if (query) searchFolded(dto.conversationId, query, shown, results);
  });
  return h(
    "li",
    { class: "folded", attrs: { "data-role": "folded" } },
    h("p", {
      text: `Earlier messages were folded into a summary (version ${dto.summaryVersion}).`,
    }),
    h(
      "details",
      { class: "folded-summary" },
      h("summary", { text: "Read the summary" }),
      h("p", { class: "summary-text", text: dto.summary || "The summary is empty." }),
    ),
    form,
    results,
  );
}

async function searchFolded(conversationId, query, shown, results) {
  let found;
  try {
    found = await conversationLines(conversationId, query, FOLDED_LINES);
  } catch (error) {
    const message = error instanceof ApiError ? error.message : "The search failed.";
    results.replaceChildren(h("p", { class: "form-error small", text: message }));
    return;
  }
  const words = queryWords(query);
  const folded = found.filter((line) => !shown.has(line.messageId));
  if (!folded.length) {
    results.replaceChildren(
      h("p", { class: "muted small", text: `Nothing folded matches “${query}”.` }),
    );
    return;
  }
  results.replaceChildren(
    h("p", { class: "muted small", text: `${plural(folded.length, "folded line")}:` }),
    h("ul", { class: "archived-lines" }, folded.map((line) => archivedLine(line, words))),
  );
}
