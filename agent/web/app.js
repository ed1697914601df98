// The chat page: wires the sidebar, the message list, the review form and the memory
// panel to the HTTP API. Everything shown comes from the server (the conversation list,
// its selection, each conversation's memory); the page keeps nothing in browser
// storage, so a reload shows what the server holds. The URL fragment (#c=<id>, #new)
// only says which conversation this tab shows.

import { ApiError, requestJson, streamEvents } from "./api.js";
import { foldedNote } from "./folded.js";
import { MemoryPanel } from "./memory.js";
import { MessageList } from "./messages.js";
import { closeMemoryOnNarrow, closeSidebarOnNarrow, installPanels } from "./panels.js";
import { decisionWords, renderReview } from "./review.js";
import { Search } from "./search.js";
import { Sidebar } from "./sidebar.js";
import { askToSignIn } from "./signin.js";
import { memoryNotes, progressLine, prunedNotice, prunedTitles, statusNote } from "./words.js";

const BUSY_NOTICE =
  "This conversation is busy: a reply is still being written in it (perhaps in another " +
  "tab). Try again when it has finished.";
const STREAM_FAILED = "The turn failed on the server; nothing from it was kept.";
const TITLE_CHARS = 80;

const $ = (id) => document.getElementById(id);
const layout = $("layout");
const composer = $("composer");
const textarea = $("message");
const mode = $("mode");
const sendButton = $("send");
const stopButton = $("stop");
const reviewRoot = $("review");
const title = $("chat-title");
const recoverBar = $("recover");

const state = {
  registry: { conversations: [], limit: 10, selectedConversationId: null },
  currentId: null, // the conversation on screen; null while it is a new chat (a draft)
  draftTitle: null, // a new conversation's title until the list has it
  reviews: new Map(), // conversation id -> the review payload waiting for a decision
  turn: null, // {controller, conversationId} while a reply streams
};

const messages = new MessageList($("messages"));
const sidebar = new Sidebar({
  onSelect: (id) => openConversation(id),
  onDelete: deleteConversation,
  onNew: newChat,
});
const memory = new MemoryPanel({
  notice: (error) => noticeFor(error),
  titleOf: (id) => entryOf(id)?.title ?? null,
  onOpen: (conversationId, messageId) => {
    closeMemoryOnNarrow();
    openAtLine(conversationId, messageId);
  },
});
const search = new Search({
  isListed: (id) => Boolean(entryOf(id)),
  onOpen: openAtLine,
});
const FOLDED_LINE =
  "That line is no longer among the conversation's recent messages: compaction folded " +
  "it into the summary (the note at the top of the conversation shows it, and finds " +
  "its folded lines).";

/** Open a conversation at a line (a search hit's, the source of a long-term item). */
async function openAtLine(conversationId, messageId) {
  if (state.turn) return;
  if (state.currentId !== conversationId) await openConversation(conversationId);
  if (state.currentId === conversationId && !messages.reveal(messageId)) {
    showNotice(FOLDED_LINE);
    $("messages").querySelector(".folded")?.scrollIntoView({ block: "start" });
  }
}

// -- notices ------------------------------------------------------------------------------

function showNotice(text) {
  $("notice-text").textContent = text;
  $("notice").hidden = false;
}

function hideNotice() {
  $("notice").hidden = true;
}

$("notice-close").addEventListener("click", hideNotice);

/** An error as a notice: the page's words for what the person can do, never server detail. */
function noticeFor(error) {
  if (error instanceof ApiError) {
    showNotice(error.code === "conversation_busy" ? BUSY_NOTICE : error.message);
  } else {
    console.error(error); // a bug in the page: the details stay in the console
    showNotice("Something went wrong on this page. Reload it to continue.");
  }
}

// -- conversations ------------------------------------------------------------------------

function entryOf(id) {
  return state.registry.conversations.find((entry) => entry.id === id) || null;
}

function renderTitle() {
  const entry = state.currentId && entryOf(state.currentId);
  title.textContent = entry ? entry.title : state.draftTitle || "New chat";
}

function setFragment(value) {
  history.replaceState(null, "", value ? `#${value}` : location.pathname);
}

function fragmentTarget() {
  const hash = location.hash.slice(1);
  if (hash === "new") return { draft: true };
  const id = new URLSearchParams(hash).get("c");
  return id ? { id } : {};
}

async function loadRegistry() {
  state.registry = await requestJson("GET", "/api/conversations");
  sidebar.render(state.registry, state.currentId);
  renderTitle();
}

function showConversation(id, dto) {
  state.currentId = id;
  const entry = entryOf(id);
  const first = dto.messages.find((m) => m.role === "user");
  state.draftTitle = entry ? null : first ? oneLine(first.text) : null;
  messages.show(dto.messages, foldedNote(dto));
  // a review waiting in the conversation is the server's (another tab, a reload, the
  // CLI may have started it): shown with its goal, and its form below
  if (dto.review) {
    state.reviews.set(id, dto.review);
    messages.showWaitingReview(dto.review);
  } else state.reviews.delete(id);
  memory.showConversation(dto);
  sidebar.render(state.registry, id);
  renderTitle();
  setFragment(`c=${encodeURIComponent(id)}`);
  showPendingReview();
}

/** Open a conversation: select it on the server (unless it already is), then show its
 * stored memory (the hydration DTO). */
async function openConversation(id, { select = true } = {}) {
  if (state.turn) return; // the controls are disabled while a reply streams
  closeSidebarOnNarrow();
  try {
    if (select && state.registry.selectedConversationId !== id) {
      state.registry = await requestJson("POST", "/api/conversations/select", {
        conversationId: id,
      });
    }
    const dto = await requestJson(
      "GET",
      `/api/chat/thread?conversationId=${encodeURIComponent(id)}`,
    );
    hideNotice();
    hideDropQuestion();
    showConversation(id, dto);
  } catch (error) {
    noticeFor(error);
    if (error instanceof ApiError && error.code === "not_found") {
      await loadRegistry().catch(noticeFor);
      if (state.currentId === id || state.currentId === null) newChat();
    }
  }
}

function newChat() {
  if (state.turn) return;
  closeSidebarOnNarrow();
  hideDropQuestion();
  state.currentId = null;
  state.draftTitle = null;
  messages.show([]);
  memory.showConversation(null);
  sidebar.render(state.registry, null);
  renderTitle();
  setFragment("new");
  showPendingReview();
  textarea.focus();
}

/** The conversation on screen was deleted meanwhile (in another tab, or pruned): its
 * messages stay readable, and the next message starts a new conversation. */
function leaveDeletedConversation() {
  state.reviews.delete(state.currentId);
  state.currentId = null;
  state.draftTitle = null;
  memory.showConversation(null);
  sidebar.render(state.registry, null);
  renderTitle();
  setFragment("new");
}

async function deleteConversation(id) {
  if (state.turn) return;
  try {
    state.registry = await requestJson("DELETE", `/api/conversations/${encodeURIComponent(id)}`);
  } catch (error) {
    noticeFor(error);
    await loadRegistry().catch(noticeFor);
    return;
  }
  state.reviews.delete(id);
  if (id !== state.currentId) {
    sidebar.render(state.registry, state.currentId);
    return;
  }
  const next = state.registry.selectedConversationId;
  if (next && entryOf(next)) await openConversation(next, { select: false });
  else newChat();
}

// -- turns --------------------------------------------------------------------------------

function oneLine(text) {
  // the server titles a task list or delivery by its goal, without the prefix
  const flat = text
    .replace(/^\s*\/(tasklist|delivery)\b/, "")
    .split(/\s+/)
    .filter(Boolean)
    .join(" ");
  return flat.length <= TITLE_CHARS ? flat : `${flat.slice(0, TITLE_CHARS - 1)}…`;
}

function setStreaming(conversationId) {
  const streaming = conversationId !== undefined;
  layout.dataset.busy = String(streaming);
  sendButton.hidden = streaming;
  stopButton.hidden = !streaming;
  mode.disabled = streaming;
  const name = streaming
    ? (conversationId && entryOf(conversationId)?.title) || state.draftTitle
    : "";
  sidebar.setLock(
    streaming
      ? `A reply is streaming in “${name || "this conversation"}”. Wait for it to finish, or ` +
          "press Stop, before switching conversations."
      : null,
  );
  if (streaming) reviewHandle?.setBusy(true);
  showRecovery();
}

async function send({ dropReview = false } = {}) {
  const text = textarea.value;
  if (!text.trim() || state.turn) return;
  const waiting = state.currentId ? state.reviews.get(state.currentId) : undefined;
  if (waiting && !dropReview) {
    askBeforeDropping(waiting); // the message waits in the box until the person chooses
    return;
  }
  hideDropQuestion();
  hideNotice();
  const body = state.currentId
    ? { message: text, conversationId: state.currentId }
    : { message: text, createConversation: true };
  const chosenMode = mode.value;
  if (chosenMode !== "auto") body.mode = chosenMode;
  mode.value = "auto"; // a mode is chosen for one message
  if (!state.currentId) state.draftTitle = oneLine(text);
  renderTitle();
  textarea.value = "";
  const dropped = waiting
    ? messages.addDecision(
        `You dropped the review${waiting.goal ? ` of “${oneLine(waiting.goal)}”` : ""}: ` +
          "its plan was discarded, and this message was sent instead.",
      )
    : null;
  if (waiting) {
    dropped.dataset.role = "dropped-review";
    state.reviews.delete(state.currentId);
    showPendingReview();
  }
  const mine = messages.addUser(text);
  await runTurn("/api/chat", body, {
    refused(error) {
      mine.remove(); // nothing was sent: give the text back to edit or resend
      textarea.value = text;
      mode.value = chosenMode;
      if (dropped) {
        dropped.remove(); // the review still waits
        state.reviews.set(state.currentId, waiting);
        showPendingReview();
      }
      if (!state.currentId) state.draftTitle = null;
      renderTitle();
      noticeFor(error);
    },
  });
}

// -- a message while a review waits -------------------------------------------------------

const dropQuestion = $("drop-review");

/** A review waits in this conversation: sending would drop it. Ask first, in the page. */
function askBeforeDropping(review) {
  $("drop-review-goal").textContent = review.goal ? ` (“${oneLine(review.goal)}”)` : "";
  dropQuestion.hidden = false;
  $("drop-review-answer").focus();
}

function hideDropQuestion() {
  dropQuestion.hidden = true;
}

$("drop-review-answer").addEventListener("click", () => {
  hideDropQuestion();
  const first = reviewRoot.querySelector("button, input, textarea");
  reviewRoot.scrollIntoView({ block: "nearest" });
  first?.focus();
});
$("drop-review-send").addEventListener("click", () => send({ dropReview: true }));
$("drop-review-cancel").addEventListener("click", () => {
  hideDropQuestion();
  textarea.focus();
});

/**
 * Stream one turn (a message, or a review's decision) into a new answer bubble.
 * @param {string} path
 * @param {object} body
 * @param {{route?: string, refused: (error: ApiError) => void}} options `refused` runs
 *   when the server refuses the turn before it starts (busy, not found, bad input)
 */
async function runTurn(path, body, { route, refused }) {
  const controller = new AbortController();
  const turn = { controller, conversationId: state.currentId, started: false };
  state.turn = turn;
  setStreaming(turn.conversationId);
  const view = messages.startTurn(route);
  const memoryEvents = [];
  let result = null;
  let updating = null;
  const release = () => {
    // a later turn may own the page's turn state by now: leave it alone then
    if (state.turn !== turn) return;
    state.turn = null;
    setStreaming(undefined);
  };
  const onEvent = ({ event, data }) => {
    if (event === "conversation") {
      turn.started = true;
      turn.conversationId = data.conversationId;
      if (state.currentId === null) {
        state.currentId = data.conversationId; // the draft is a conversation now
        setFragment(`c=${encodeURIComponent(data.conversationId)}`);
        // listed at once, under its provisional title: the server's list (with the
        // title it keeps) replaces it when the turn ends
        state.registry = {
          ...state.registry,
          conversations: [
            {
              id: data.conversationId,
              title: state.draftTitle || "New chat",
              lastActiveAt: new Date().toISOString(),
            },
            ...state.registry.conversations.filter((entry) => entry.id !== data.conversationId),
          ],
        };
        sidebar.render(state.registry, state.currentId);
      }
    } else if (event === "status" && data.stage === "route") {
      view.setRoute(data.route);
    } else if (event === "status") {
      const line = progressLine(data);
      if (line) view.showProgress(line);
    } else if (event === "token") {
      view.appendToken(String(data.text || ""));
    } else if (event === "memory") {
      memoryEvents.push(data);
    } else if (event === "interrupt") {
      state.reviews.set(turn.conversationId, data.interrupt || {});
    } else if (event === "done") {
      result = data.result || {};
      if (result.status !== "interrupted") state.reviews.delete(turn.conversationId);
      view.finish(result, [], statusNote(result.status));
      if (result.upkeep === "pending") {
        // the turn is done and its conversation free: the stream stays open only for the
        // memory upkeep after it, which never blocks the composer
        release();
        updating = view.note("Updating memory…", "info");
      }
    } else if (event === "error") {
      // the app's own words for its stream errors; a refused input says what to fix
      view.fail(
        data.code === "invalid_request" || data.code === "turn_failed"
          ? String(data.message)
          : STREAM_FAILED,
      );
    }
  };
  let refusal = null;
  try {
    // the page follows the upkeep after `done` on the same stream, for its notes
    await streamEvents(`${path}?followUpkeep=true`, body, {
      signal: controller.signal,
      onEvent,
    });
    if (!result && view.item.dataset.state === "streaming")
      view.fail("The answer ended early; nothing from it was kept.");
  } catch (error) {
    if (error && error.name === "AbortError") view.stopped();
    else if (!turn.started && error instanceof ApiError) refusal = error;
    else {
      view.fail(error instanceof ApiError ? error.message : STREAM_FAILED);
      if (!(error instanceof ApiError)) console.error(error);
    }
  } finally {
    release();
    updating?.remove();
  }
  if (refusal) {
    // refused before it started (busy, gone, bad input): nothing changed on the server
    view.item.remove();
    refused(refusal);
    if (refusal.code === "not_found") await loadRegistry().catch(noticeFor);
    return;
  }
  await afterTurn(turn, view, memoryEvents, result);
}

/** Bring the page up to date with what the turn changed: the list, the conversation's
 * memory (with its summary version for the turn's notes), the long-term items. */
async function afterTurn(turn, view, memoryEvents, result) {
  let dto = null;
  try {
    await loadRegistry();
    if (turn.started && turn.conversationId === state.currentId) {
      dto = await requestJson(
        "GET",
        `/api/chat/thread?conversationId=${encodeURIComponent(turn.conversationId)}`,
      );
      memory.showConversation(dto);
    }
  } catch (error) {
    noticeFor(error);
    if (
      error instanceof ApiError &&
      error.code === "not_found" &&
      turn.conversationId === state.currentId
    ) {
      leaveDeletedConversation();
    }
  }
  if (result)
    for (const note of memoryNotes(memoryEvents, result, dto)) view.note(note.text, note.tone);
  const pruned = prunedTitles(memoryEvents);
  if (pruned.length) showNotice(prunedNotice(pruned, state.registry.limit));
  showPendingReview();
  await memory.loadLongTerm();
  if (!state.turn) textarea.focus();
}

composer.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});

textarea.addEventListener("keydown", (event) => {
  // Enter sends, Shift+Enter adds a line; Enter that confirms an IME composition does neither
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    composer.requestSubmit();
  }
});

stopButton.addEventListener("click", () => state.turn?.controller.abort());

// -- reviews ------------------------------------------------------------------------------

let reviewHandle = null;

/** Offer to continue the open conversation's workflow when a crash stopped it (the list
 * marks such a conversation `unfinished`). */
function showRecovery() {
  const entry = state.currentId && entryOf(state.currentId);
  recoverBar.hidden = !(entry && entry.unfinished) || Boolean(state.turn);
}

async function recover() {
  const conversationId = state.currentId;
  if (state.turn || !conversationId) return;
  await runTurn("/api/chat/recover", { conversationId }, { refused: noticeFor });
}

$("recover-button").addEventListener("click", recover);

function showPendingReview() {
  showRecovery();
  const payload = state.currentId ? state.reviews.get(state.currentId) : undefined;
  if (!payload) {
    reviewRoot.hidden = true;
    reviewRoot.replaceChildren();
    reviewHandle = null;
    return;
  }
  const conversationId = state.currentId;
  reviewHandle = renderReview(reviewRoot, payload, (decision) => decide(conversationId, decision));
  if (state.turn) reviewHandle.setBusy(true);
}

async function decide(conversationId, decision) {
  if (state.turn) return;
  hideDropQuestion();
  const note = messages.addDecision(decisionWords(decision));
  await runTurn(
    "/api/chat/resume",
    { conversationId, decision },
    {
      route: "tasklist",
      refused(error) {
        note.remove();
        showPendingReview(); // the review still waits: say why the answer was refused
        if (reviewHandle)
          reviewHandle.setError(error.code === "conversation_busy" ? BUSY_NOTICE : error.message);
        else noticeFor(error);
      },
    },
  );
}

installPanels(layout);

window.addEventListener("hashchange", () => {
  const target = fragmentTarget();
  if (state.turn) return;
  if (target.draft && state.currentId !== null) newChat();
  else if (target.id && target.id !== state.currentId) openConversation(target.id);
});

// -- start --------------------------------------------------------------------------------

/** Show what the server holds: the fragment's conversation, else the one the server has
 * selected, else a new chat. */
async function start() {
  try {
    await loadRegistry();
    const target = fragmentTarget();
    const id = target.draft ? null : target.id || state.registry.selectedConversationId;
    if (id) await openConversation(id);
    else newChat();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      askToSignIn(layout); // the server asks who this is: nothing to show before that
      return;
    }
    noticeFor(error);
    newChat();
  }
  await memory.loadLongTerm();
  layout.dataset.ready = "true";
}

start();
