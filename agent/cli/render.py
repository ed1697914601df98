"""What the terminal chat shows: review payloads, memory and registry views, turn events.

`TurnPrinter` prints stream events as they arrive: answer tokens inline, route and
memory status as bracketed lines in words, errors as one `error: ...` line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from agent.cli.commands import ACTION_USAGE, review_actions
from agent.cli.markdown import MarkdownView

PREVIEW_CHARS = 200
REVIEW_TITLES = {"strategy_review": "strategy review", "revision_review": "revision review"}


def _one_line(text: object, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _task_lines(number: int, task: object) -> list[str]:
    if not isinstance(task, Mapping):
        return [f"  {number}. {_one_line(task)}"]
    title = next((task[k] for k in ("title", "name", "description") if task.get(k)), "(untitled)")
    status = f" [{task['status']}]" if task.get("status") else ""
    ident = f" (id {task['id']})" if task.get("id") is not None else ""
    lines = [f"  {number}. {_one_line(title)}{status}{ident}"]
    criteria = task.get("acceptance_criteria") or task.get("acceptanceCriteria")
    for criterion in criteria if isinstance(criteria, list) else [criteria] if criteria else []:
        lines.append(f"       - {_one_line(criterion)}")
    return lines


def _issue_line(issue: object) -> str:
    if not isinstance(issue, Mapping):
        return f"  - {_one_line(issue)}"
    keys = ("description", "issue", "title", "text", "message")
    text = next((issue[k] for k in keys if issue.get(k)), json.dumps(dict(issue), default=str))
    task = issue.get("task_title") or issue.get("task_id")
    where = f" (task: {_one_line(task, 80)})" if task else ""
    blocking = " [blocking]" if issue.get("blocking") else ""
    return f"  - {_one_line(text)}{where}{blocking}"


def render_review(payload: Mapping[str, Any]) -> str:
    """A review payload as readable text: goal and tasks, or issues, then the answers."""
    kind = str(payload.get("kind", ""))
    title = REVIEW_TITLES.get(kind) or f"review ({kind or 'unknown'})"
    lines = [f"── {title} ──"]
    for key in ("message", "question", "goal", "summary"):
        if isinstance(payload.get(key), str) and payload[key].strip():
            lines.append(f"{key}: {payload[key].strip()}")
    tasks, issues = payload.get("tasks"), payload.get("issues")
    if isinstance(tasks, list):
        lines.append("tasks:" if tasks else "tasks: none")
        for number, task in enumerate(tasks, 1):
            lines.extend(_task_lines(number, task))
    if isinstance(issues, list):
        lines.append("issues:" if issues else "issues: none")
        lines.extend(_issue_line(issue) for issue in issues)
    if isinstance(payload.get("error"), str):
        lines.append(f"(the last answer was refused: {payload['error']})")
    if kind not in REVIEW_TITLES:
        rest = {k: v for k, v in payload.items() if k not in ("kind", "actions", "error")}
        lines.append(json.dumps(rest, indent=2, ensure_ascii=False, default=str))
    actions = review_actions(payload)
    if actions:
        lines.append("answer with: " + " | ".join(ACTION_USAGE.get(a, a) for a in actions))
    return "\n".join(lines)


SKIP_REASONS = {
    "status_not_written": "the turn did not finish",
    "empty_text": "there was no answer to keep",
    "duplicate_message_id": "this turn is already in memory",
    "duplicate_last_pair": "this turn is already in memory",
    "conversation_gone": "the conversation was deleted meanwhile",
}
"""Why a turn was not written, in words (the event carries a stable code)."""

DELIVERY_STEPS = {
    ("load_request", "started"): "reading the request",
    ("load_request", "blocked"): "the request is too thin to act on",
    ("plan_delivery", "started"): "planning",
    ("plan_delivery", "succeeded"): "planned {tasks} {tasks_noun}{for_deliverables}",
    ("plan_delivery", "blocked"): "the plan needs more information",
    ("execute_tasks", "task_started"): "task {task} of {tasks}",
    ("execute_tasks", "succeeded"): "{done} of {tasks} {tasks_noun} done",
    ("review_delivery", "started"): "{reviewer} review",
    ("review_delivery", "succeeded"): "{reviewer} review {verdict}",
    ("synthesize_report", "started"): "writing the report",
    ("synthesize_report", "completed"): "report ready",
    ("synthesize_report", "blocked"): "report ready, with blocking issues",
}
"""Delivery progress in words, by (stage, status); other pairs are not worth a line,
except failures, which name the stage."""


def memory_line(event: Mapping[str, Any]) -> str | None:
    """A `memory` event as `[memory: ...]`, or None for events not worth a line."""
    stage, status = event.get("stage"), event.get("status")
    if status == "started":
        return None
    if stage == "write":
        if status == "succeeded":
            return "[memory: written]"
        if status == "skipped":
            reason = SKIP_REASONS.get(str(event.get("reason")))
            return f"[memory: not written: {reason}]" if reason else "[memory: not written]"
        return f"[memory: write {status}]"
    if stage == "remember":
        if status == "skipped":
            return None  # nothing new about the user: not worth a line
        if status == "succeeded":
            added, retired = int(event.get("remembered") or 0), int(event.get("retired") or 0)
            parts = [f"remembered {added}"] if added else []
            parts += [f"forgot {retired} older"] if retired else []
            return f"[long-term memory: {', '.join(parts) or 'refreshed'}]"
        return f"[long-term memory: {status}]"
    if stage == "recall":
        count = len(event.get("lines") or ())
        return f"[memory: recalled {count} line{'s' * (count != 1)} from earlier conversations]"
    if stage == "upkeep":
        # the end of the upkeep after a turn: its steps said what they did
        return "[memory: upkeep failed]" if status == "failed" else None
    if stage == "compact":
        detail = ""
        if event.get("summaryChars") is not None:
            pins = int(event.get("pinnedDecisions") or 0)
            version = event.get("summaryVersion")
            named = f"summary v{version}" if version is not None else "summary"
            detail = f" — {named} {event['summaryChars']} chars, {pins} pin{'s' * (pins != 1)}"
        return f"[memory: compaction {status}{detail}]"
    return f"[memory: {stage} {status}]"


def _for_deliverables(count: object) -> str:
    if not isinstance(count, int):
        return ""
    return f" for {count} deliverable{'s' * (count != 1)}"


def delivery_line(event: Mapping[str, Any]) -> str | None:
    """A delivery progress event in words, None when not worth a line."""
    stage, status = str(event.get("stage")), str(event.get("status"))
    if status == "failed":
        return f"[delivery: {stage.replace('_', ' ')} failed]"
    template = DELIVERY_STEPS.get((stage, status))
    if template is None:
        return None
    count = event.get("tasks")
    fields = {
        "tasks": count,
        "tasks_noun": "task" if count == 1 else "tasks",
        "for_deliverables": _for_deliverables(event.get("deliverables")),
        "task": event.get("task"),
        "done": event.get("done"),
        "reviewer": str(event.get("reviewer", "")).capitalize(),
        "verdict": "passed" if event.get("passed") else "found blocking issues",
    }
    return f"[delivery: {template.format(**fields)}]"


TASKLIST_STEPS = {
    ("plan", "started"): "planning the task list",
    ("plan", "completed"): "planned {tasks} {tasks_noun}",
    ("execute", "in_progress"): "task {index} of {total}: {title}",
    ("execute", "completed"): "task {index} of {total} done: {title}",
    ("execute", "blocked"): "task {index} of {total} blocked: {title}",
    ("check", "started"): "checking the result",
    ("check", "completed"): "self-check found {issues} {issues_noun}",
    ("summarize", "started"): "writing the summary",
    ("summarize", "completed"): "summary written",
    ("summarize", "blocked"): "summary written, with blocking issues",
}
"""Task-list progress in words, by (step, status), as the chat page says it."""


def tasklist_line(event: Mapping[str, Any]) -> str | None:
    """A task-list progress event in words; an unlisted pair names its step and status."""
    step, status = str(event.get("step", "")), str(event.get("status", ""))
    template = TASKLIST_STEPS.get((step, status))
    if template is None:
        words = " ".join(word.replace("_", " ") for word in (step, status) if word)
        return f"[task list: {words}]"
    tasks, issues = event.get("tasks"), event.get("issues")
    fields = {
        "tasks": tasks,
        "tasks_noun": "task" if tasks == 1 else "tasks",
        "issues": issues or "no",
        "issues_noun": "issue" if issues == 1 else "issues",
        "index": event.get("index"),
        "total": event.get("total"),
        "title": _one_line(event.get("title") or "", 80),
    }
    return f"[task list: {template.format(**fields).rstrip(': ')}]"


def status_line(event: Mapping[str, Any]) -> str | None:
    """A `status` event as a bracketed line, or None when not worth one.

    `[route: chat]`, `[tool: calculator]`, delivery progress in words, task-list
    progress such as `[tasklist: execute in_progress 1/3 — Write the tests]`, else
    `[stage: key=value, …]`.
    """
    stage = event.get("stage") or "status"
    if stage == "route":
        return f"[route: {event.get('route')}]"
    if stage == "tool":
        return f"[tool: {event.get('name')}]"
    if event.get("workflow") == "delivery":
        return delivery_line(event)
    if stage == "tasklist":
        return tasklist_line(event)
    shown = {"event", "stage", "step", "status", "index", "total", "title", "taskId"}
    words = [str(event[key]) for key in ("step", "status") if event.get(key) is not None]
    if event.get("index") is not None and event.get("total") is not None:
        words.append(f"{event['index']}/{event['total']}")
    if event.get("title"):
        words.append(f"— {_one_line(event['title'], 80)}")
    fields = [f"{k}={_one_line(v, 80)}" for k, v in event.items() if k not in shown]
    detail = ", ".join(part for part in (" ".join(words), ", ".join(fields)) if part)
    return f"[{stage}: {detail}]" if detail else f"[{stage}]"


def render_listing(registry: Mapping[str, Any], *, in_draft: bool) -> str:
    """The registry as a numbered list, the selected conversation marked with `*`."""
    entries = registry.get("conversations") or []
    if not entries:
        lines = ["no conversations yet"]
    else:
        lines = [f"conversations ({len(entries)} of {registry.get('limit', '?')}):"]
        for number, entry in enumerate(entries, 1):
            mark = "*" if entry["id"] == registry.get("selectedConversationId") else " "
            stopped = (
                "  [unfinished: /switch to it, then /recover]" if entry.get("unfinished") else ""
            )
            if entry.get("reviewPending"):
                stopped += "  [review pending: /switch to it, then /review]"
            lines.append(
                f"{mark} {number}. {_one_line(entry['title'], 70)}  ({entry['id']}){stopped}"
            )
    if in_draft:
        lines.append("(you are in a new conversation: your next message creates it)")
    return "\n".join(lines)


def render_memory(dto: Mapping[str, Any]) -> str:
    """The hydration view: summary preview and version, pinned decisions, open questions,
    recent messages."""
    lines = [f"memory of conversation {str(dto.get('conversationId', ''))[:8]}:"]
    version = dto.get("summaryVersion") or 0
    lines.append(
        f"summary (version {version}): {_one_line(dto['summaryPreview'], 400)}"
        if dto.get("summaryPreview")
        else "summary: none yet"
    )
    pins = dto.get("pinnedDecisions") or []
    lines.append("pinned decisions:" if pins else "pinned decisions: none")
    lines.extend(f"  {number}. {pin}" for number, pin in enumerate(pins, 1))
    questions = dto.get("openQuestions") or []
    if questions:
        lines.append("open questions:")
        lines.extend(f"  - {_one_line(question)}" for question in questions)
    messages = dto.get("messages") or []
    lines.append(f"recent messages ({len(messages)}):" if messages else "recent messages: none")
    lines.extend(f"  {m.get('role')}: {_one_line(m.get('text', ''))}" for m in messages)
    return "\n".join(lines)


def render_memories(listing: Mapping[str, Any]) -> str:
    """The long-term items, numbered for `/forget N`, newest first."""
    items = listing.get("memories") or []
    if not items:
        return "long-term memory: nothing yet (say a preference, or /remember TEXT)"
    lines = [f"long-term memory ({len(items)} of {listing.get('limit', '?')}):"]
    lines.extend(
        f"  {n}. [{item.get('kind')}] {_one_line(str(item.get('text', '')))}"
        for n, item in enumerate(items, 1)
    )
    return "\n".join(lines)


def render_search(query: str, results: Sequence[Mapping[str, Any]]) -> str:
    """Archived lines found by `/search`, one per line: date, conversation title, role."""
    if not results:
        return f"search: nothing in your earlier conversations matches {query!r}"
    lines = [f"search: {len(results)} line(s) for {query!r}:"]
    lines.extend(
        f"  {str(hit.get('createdAt', ''))[:10]} · {_one_line(str(hit.get('title', '')))} · "
        f"{hit.get('role')}: {_one_line(str(hit.get('text', '')))}"
        for hit in results
    )
    return "\n".join(lines)


@dataclass
class TurnOutcome:
    """What a streamed turn left behind.

    Attributes:
        conversation_id: the conversation it ran in (set by the `conversation` event).
        result: the `done` event's result (camelCase `TurnResult`), if it finished.
        interrupt: the pending review payload, if the turn stopped for one.
        error: the message of an `error` event, if the turn failed.
    """

    conversation_id: str | None = None
    result: dict[str, Any] | None = None
    interrupt: dict[str, Any] | None = None
    error: str | None = None


class TurnPrinter:
    """Prints a turn's events as they arrive: tokens inline, status on their own lines.

    The route line waits until the turn shows something else, so a chat turn that
    escalates to a tool prints `[route: tool]`, not the route it left. Memory lines that
    come before any answer text (workflows answer in one piece, at the end) wait for it.
    """

    def __init__(
        self,
        out: TextIO,
        err: TextIO,
        *,
        route: str | None = None,
        markdown: MarkdownView | None = None,
    ) -> None:
        """Print to `out` and errors to `err`; `route` was already shown (a resumed turn's);
        answers as Markdown through `markdown` (a terminal), else as plain text."""
        self.out, self.err = out, err
        self.markdown = markdown
        self.outcome = TurnOutcome()
        self._route = self._route_shown = route
        self._held: list[str] = []
        self._streamed = False
        self._mid_line = False

    def _write(self, text: str) -> None:
        if self.markdown is not None:
            self.markdown.close()  # a line after streamed Markdown goes below it
        self.out.write(text)
        self.out.flush()
        self._mid_line = not text.endswith("\n")

    def line(self, text: str) -> None:
        """Print `text` on a line of its own."""
        self._show_route()
        self._write(("\n" if self._mid_line else "") + text + "\n")

    def _show_route(self) -> None:
        if self._route and self._route != self._route_shown:
            self._route_shown = self._route
            self._write(("\n" if self._mid_line else "") + f"[route: {self._route}]\n")

    def _release(self) -> None:
        held, self._held = self._held, []
        for text in held:
            self.line(text)

    def handle(self, event: Mapping[str, Any]) -> None:
        """Print one stream event and record what it tells about the turn."""
        kind = event.get("event")
        if kind == "conversation":
            self.outcome.conversation_id = str(event.get("conversationId"))
        elif kind == "token":
            self._show_route()
            if self.markdown is not None:
                self.markdown.feed(str(event.get("text", "")))
            else:
                self._write(str(event.get("text", "")))
            self._streamed = True
        elif kind == "status" and event.get("stage") == "route":
            self._route = str(event.get("route"))
        elif kind == "status":
            if event.get("stage") == "tool" and self._route_shown is None:
                self._route = "tool"
            text = status_line(event)
            if text:
                self.line(text)
        elif kind == "memory":
            text = memory_line(event)
            if text:
                self._held.append(text)
                if self._streamed:
                    self._release()
        elif kind == "interrupt":
            self.outcome.interrupt = dict(event.get("interrupt") or {})
        elif kind == "done":
            self._done(dict(event.get("result") or {}))
        elif kind == "error":
            self.outcome.error = str(event.get("message", "the turn failed"))
            self.error(self.outcome.error)

    def _done(self, result: dict[str, Any]) -> None:
        self.outcome.result = result
        if result.get("route"):
            self._route = str(result["route"])
        self._show_route()
        if self.markdown is not None:
            if not self._streamed and result.get("text"):
                self.markdown.show(str(result["text"]))
            self.markdown.close()
        elif not self._streamed and result.get("text"):
            self._write(str(result["text"]))
        if self._mid_line:
            self._write("\n")
        self._release()
        if result.get("degraded"):
            self.line("[memory: degraded]")
        if result.get("status") not in ("completed", "interrupted", None):
            self.line(f"[status: {result['status']}]")

    def flush(self) -> None:
        """Print the memory lines still held (the turn's stream has ended)."""
        self._release()

    def error(self, message: str) -> None:
        """Print `error: message` on its own line of the error stream."""
        if self.markdown is not None:
            self.markdown.close()
        self._release()
        if self._mid_line:
            self._write("\n")
        self.err.write(f"error: {message}\n")
        self.err.flush()

    def cancelled(self) -> None:
        """Note that the person cancelled the turn (a cancelled turn writes nothing)."""
        self._release()
        self.line("[cancelled]")
