"""How a turn's events print in the terminal chat (`TurnPrinter`): answer tokens inline,
route and memory status as bracketed lines in words, errors as one `error: ...` line."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, TextIO

from agent.cli.markdown import MarkdownView
from agent.cli.render import one_line
from agent.client_events import ClientEvent, MemoryEvent, StatusEvent, TurnResultDTO

SKIP_REASONS = {
    "status_not_written": "the turn did not finish",
    "empty_text": "there was no answer to keep",
    "duplicate_message_id": "this turn is already in memory",
    "duplicate_last_pair": "this turn is already in memory",
    "conversation_gone": "the conversation was deleted meanwhile",
}
"""Why a turn was not written, in words (the event carries a stable code)."""
REJECTED = {
    False: "[plan rejected: nothing was run, and nothing of it was kept]",
    True: "[plan rejected: nothing was run; memory keeps a note of it]",
}
"""A rejected workflow's one line (status `cancelled`), by whether memory was written."""

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


def memory_line(event: MemoryEvent) -> str | None:
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
            parts += [f"{retired} older no longer used"] if retired else []
            return f"[long-term memory: {', '.join(parts) or 'refreshed'}]"
        if status == "refused":
            return "[long-term memory: the model's answer was not usable]"
        return f"[long-term memory: {status}]"
    if stage == "recall":
        count = len(event.get("lines") or ())
        return f"[memory: recalled {count} line{'s' * (count != 1)} from earlier conversations]"
    if stage == "upkeep":
        # the end of the upkeep after a turn: its steps said what they did
        return "[memory: upkeep failed]" if status == "failed" else None
    if stage == "embed":  # lines embedded after every turn: worth a line only when it failed
        failed = status == "failed"
        return "[memory: embedding failed: lines are found by their words]" if failed else None
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


def delivery_line(event: StatusEvent) -> str | None:
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


def tasklist_line(event: StatusEvent) -> str | None:
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
        "title": one_line(event.get("title") or "", 80),
    }
    return f"[task list: {template.format(**fields).rstrip(': ')}]"


def status_line(event: StatusEvent) -> str | None:
    """A `status` event as a bracketed line (`[route: chat]`, `[tool: calculator]`, a
    workflow's progress in words), or None when not worth one."""
    stage = event.get("stage") or "status"
    if stage == "route":
        return f"[route: {event.get('route')}]"
    if stage == "tool":
        return f"[tool: {event.get('name')}]"
    if event.get("workflow") == "delivery":
        return delivery_line(event)
    if stage == "tasklist":
        return tasklist_line(event)
    # the graph sends no other stage: a newer server's is named with its step and status
    words = " ".join(str(event[key]) for key in ("step", "status") if event.get(key) is not None)
    return f"[{stage}: {words}]" if words else f"[{stage}]"


@dataclass
class TurnOutcome:
    """What a streamed turn left: its conversation, the `done` result, a review payload it
    stopped for, an `error` event's message."""

    conversation_id: str | None = None
    result: TurnResultDTO | None = None
    interrupt: dict[str, Any] | None = None
    error: str | None = None


class TurnPrinter:
    """Prints a turn's events as they arrive: tokens inline, status on their own lines.
    The route line waits for the turn's next output (a chat turn escalating to a tool
    shows `[route: tool]`); memory lines before any answer text wait for it."""

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
        self._held: list[tuple[str, str]] = []
        """Memory lines waiting for the answer: (stage, line)."""
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

    def flush(self) -> None:
        """Print the memory lines still held (the answer came, or the stream has ended)."""
        held, self._held = self._held, []
        for _, text in held:
            self.line(text)

    def handle(self, event: ClientEvent) -> None:
        """Print one stream event and record what it tells about the turn."""
        if event["event"] == "conversation":
            self.outcome.conversation_id = event["conversationId"]
        elif event["event"] == "token":
            self._token(event["text"])
        elif event["event"] == "status":
            self._status(event)
        elif event["event"] == "memory":
            text = memory_line(event)
            if text:
                self._held.append((str(event.get("stage")), text))
                if self._streamed:
                    self.flush()
        elif event["event"] == "interrupt":
            self.outcome.interrupt = dict(event["interrupt"])
        elif event["event"] == "done":
            self._done(event["result"])
        elif event["event"] == "error":
            self.outcome.error = event["message"] or "the turn failed"
            self.error(self.outcome.error)

    def _token(self, text: str) -> None:
        self._show_route()
        if self.markdown is not None:
            self.markdown.feed(text)
        else:
            self._write(text)
        self._streamed = True

    def _status(self, event: StatusEvent) -> None:
        if event["stage"] == "route":
            self._route = str(event.get("route"))
            return
        if event["stage"] == "tool" and self._route_shown is None:
            self._route = "tool"
        text = status_line(event)
        if text:
            self.line(text)

    def _done(self, result: TurnResultDTO) -> None:
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
        status = result.get("status")
        if status == "cancelled":  # a rejected plan: one line says what was kept
            self._held = [(stage, text) for stage, text in self._held if stage != "write"]
        self.flush()
        if result.get("degraded"):
            self.line("[memory: degraded]")
        if status == "cancelled":
            self.line(REJECTED[bool(result.get("memoryWritten"))])
        elif status not in ("completed", "interrupted", None):
            self.line(f"[status: {status}]")

    def error(self, message: str) -> None:
        """Print `error: message` on its own line of the error stream."""
        if self.markdown is not None:
            self.markdown.close()
        self.flush()
        if self._mid_line:
            self._write("\n")
        self.err.write(f"error: {message}\n")
        self.err.flush()

    def cancelled(self) -> None:
        """Note that the person cancelled the turn (a cancelled turn writes nothing)."""
        self.flush()
        self.line("[cancelled]")


async def print_turn(events: AsyncGenerator[ClientEvent, None], printer: TurnPrinter) -> bool:
    """Print the turn's events up to `done`; True when the stream is left open then (the
    memory upkeep after the turn follows it: `print_upkeep`)."""
    try:
        async for event in events:
            printer.handle(event)
            if event["event"] == "done":
                return True
    except BaseException:
        # closed, not left to the garbage collector: when Ctrl-C cancels this, the turn
        # has unwound (and freed its conversation) by the time the prompt is back
        await events.aclose()
        raise
    await events.aclose()
    return False


async def print_upkeep(events: AsyncGenerator[ClientEvent, None], printer: TurnPrinter) -> None:
    """Print the memory upkeep's events that follow a turn's `done`, to the end."""
    async with contextlib.aclosing(events):
        async for event in events:
            printer.handle(event)
    printer.flush()
