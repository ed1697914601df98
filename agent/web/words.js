// A turn's status and memory events in words, as the terminal chat says them
// (agent/cli/render.py): route and tool names, task-list and delivery stages, memory.

import { plural } from "./dom.js";

export const ROUTE_NAMES = {
  chat: "chat",
  tool: "tools",
  tasklist: "task list",
  delivery: "delivery",
};

/** A route's name for people. */
export function routeName(route) {
  return ROUTE_NAMES[route] || String(route || "");
}

const SKIP_REASONS = {
  status_not_written: "the turn did not finish",
  empty_text: "there was no answer to keep",
  duplicate_message_id: "this turn is already in memory",
  duplicate_last_pair: "this turn is already in memory",
  conversation_gone: "the conversation was deleted meanwhile",
};

const DELIVERY_STEPS = {
  "load_request/started": () => "Reading the request",
  "load_request/blocked": () => "The request is too thin to act on",
  "plan_delivery/started": () => "Planning",
  "plan_delivery/succeeded": (e) =>
    Number.isInteger(e.deliverables)
      ? `Planned ${plural(e.tasks, "task")} for ${plural(e.deliverables, "deliverable")}`
      : `Planned ${plural(e.tasks, "task")}`,
  "plan_delivery/blocked": () => "The plan needs more information",
  "execute_tasks/task_started": (e) => `Task ${e.task} of ${e.tasks}`,
  "execute_tasks/succeeded": (e) => `${e.done} of ${plural(e.tasks, "task")} done`,
  "review_delivery/started": (e) => `${capital(e.reviewer)} review`,
  "review_delivery/succeeded": (e) =>
    `${capital(e.reviewer)} review ${e.passed ? "passed" : "found blocking issues"}`,
  "synthesize_report/started": () => "Writing the report",
  "synthesize_report/completed": () => "Report ready",
  "synthesize_report/blocked": () => "Report ready, with blocking issues",
};

const TASKLIST_STEPS = {
  "plan/started": () => "Planning the task list",
  "plan/completed": (e) => (e.tasks ? `Planned ${plural(e.tasks, "task")}` : "Planned"),
  "execute/in_progress": (e) => `Task ${e.index} of ${e.total}: ${e.title || ""}`.trim(),
  "execute/completed": (e) => `Task ${e.index} of ${e.total} done: ${e.title || ""}`.trim(),
  "execute/blocked": (e) => `Task ${e.index} of ${e.total} blocked: ${e.title || ""}`.trim(),
  "check/started": () => "Checking the result",
  "check/completed": (e) =>
    e.issues ? `Self-check found ${plural(e.issues, "issue")}` : "Self-check: no issues",
  "summarize/started": () => "Writing the summary",
  "summarize/completed": () => "Summary written",
};

function capital(text) {
  const word = String(text || "");
  return word.charAt(0).toUpperCase() + word.slice(1);
}

function humanise(text) {
  return String(text || "").replaceAll("_", " ");
}

/**
 * A `status` event (other than the route) as a progress line, or null when not worth one.
 * `key` names the thing the line is about: a later event with the same key (the same
 * task, the same reviewer) replaces the line instead of adding one.
 * @returns {{key: string, text: string, failed?: boolean} | null}
 */
export function progressLine(event) {
  const stage = String(event.stage || "status");
  if (stage === "tool") return { key: `tool:${event.name}`, text: `Tool: ${event.name}` };
  if (event.workflow === "delivery") {
    const key = `delivery:${stage}:${event.reviewer || ""}`;
    if (event.status === "failed") {
      return { key, text: `Delivery: ${humanise(stage)} failed`, failed: true };
    }
    const words = DELIVERY_STEPS[`${stage}/${event.status}`];
    return words ? { key, text: words(event) } : null;
  }
  if (stage === "tasklist") {
    const key = `tasklist:${event.step}:${event.taskId || ""}`;
    const words = TASKLIST_STEPS[`${event.step}/${event.status}`];
    if (words) return { key, text: words(event) };
    const failed = event.status === "failed";
    return { key, text: `Task list: ${humanise(event.step)} ${humanise(event.status)}`, failed };
  }
  const detail = [event.step, event.status].filter(Boolean).map(humanise).join(" ");
  return {
    key: `${stage}:${event.step || ""}`,
    text: `${capital(humanise(stage))} ${detail}`.trim(),
  };
}

/**
 * What a turn did to memory, in words, from its `memory` events, its result and the
 * hydration DTO read after it (for the summary version).
 * @returns {{text: string, tone: "ok"|"warn"|"info"}[]}
 */
export function memoryNotes(events, result, hydration) {
  const notes = [];
  const write = lastOf(events, "write");
  // a rejected plan says so once (its status note): "not saved" would only repeat it
  if (write && !(result && result.status === "cancelled")) {
    if (write.status === "succeeded") notes.push({ text: "Saved to memory", tone: "ok" });
    else if (write.status === "skipped") {
      const reason = SKIP_REASONS[write.reason];
      notes.push({ text: reason ? `Not saved: ${reason}` : "Not saved", tone: "info" });
    } else if (write.status === "failed") {
      notes.push({ text: "Memory could not be saved", tone: "warn" });
    }
  }
  const compact = lastOf(events, "compact");
  // a compaction that ran after the turn (its result said pending) is told by its event
  const compaction = (compact && compact.status) || (result && result.compaction);
  if (compaction === "succeeded" || compaction === "fallback") {
    const details = [];
    // the compaction event names the version it wrote; the DTO read after the turn
    // names it too (for a turn whose event came without one)
    const event = compact || {};
    const version = [event.summaryVersion, hydration && hydration.summaryVersion].find(
      Number.isInteger,
    );
    if (version !== undefined) details.push(`summary v${version}`);
    if (event.summaryChars !== undefined) details.push(`${event.summaryChars} chars`);
    if (event.pinnedDecisions !== undefined) {
      details.push(plural(event.pinnedDecisions, "pinned decision"));
    }
    const how = compaction === "fallback" ? "Compacted (local fallback)" : "Compacted";
    notes.push({ text: details.length ? `${how}: ${details.join(", ")}` : how, tone: "ok" });
  } else if (compaction === "failed") {
    notes.push({ text: "Compaction failed; it is tried again after the next turn", tone: "warn" });
  }
  const extraction = lastOf(events, "remember")?.status;
  if (extraction === "failed") {
    notes.push({ text: "Long-term memory could not be updated", tone: "warn" });
  } else if (extraction === "refused") {
    notes.push({ text: "Long-term memory: the model's answer was not usable", tone: "info" });
  }
  const texts = result && Array.isArray(result.remembered) ? result.remembered : [];
  for (const text of texts) notes.push({ text: `Remembered: ${text}`, tone: "ok" });
  const remembered = sumOf(events, "remembered");
  if (remembered > texts.length) {
    notes.push({ text: `Remembered ${plural(remembered, "item")}`, tone: "ok" });
  }
  const retired = sumOf(events, "retired");
  if (retired) {
    // changed (kept as history) or forgotten: either way no longer used
    notes.push({ text: `${plural(retired, "older long-term item")} no longer used`, tone: "info" });
  }
  if (result && result.degraded) {
    notes.push({
      text: "Memory degraded: the answer stands, but memory could not be fully updated",
      tone: "warn",
    });
  }
  return notes;
}

function lastOf(events, stage) {
  const matching = events.filter((e) => e.stage === stage && e.status !== "started");
  return matching.length ? matching[matching.length - 1] : null;
}

function sumOf(events, field) {
  return events.reduce((sum, e) => sum + (Number.isInteger(e[field]) ? e[field] : 0), 0);
}

/** The words for a turn that ended in a status other than completed. */
export function statusNote(status) {
  if (status === "blocked") return "Finished with blocking issues";
  if (status === "cancelled") return "Rejected: nothing was run, and nothing of it was kept";
  if (status === "failed") return "The turn failed: nothing from it was kept";
  return null;
}

/** The titles of the conversations a turn pushed out of the list (its `memory` events). */
export function prunedTitles(events) {
  return events.flatMap((e) => (Array.isArray(e.pruned) ? e.pruned.map(String) : []));
}

/** The notice that names the conversations a turn pushed out of the list. */
export function prunedNotice(titles, limit) {
  const named = titles.map((title) => `“${title}”`).join(", ");
  const what = titles.length === 1 ? "conversation" : "conversations";
  return (
    `Removed the least recently active ${what}, ${named}, with its memory: ` +
    `the list keeps the ${limit || 10} most recent.`
  );
}
