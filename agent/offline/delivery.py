"""The offline model's delivery handlers, one per schema, reading the tagged stage inputs
(`<request>`, `<plan>`, `<results>`, …), so the whole chain runs without a model:
- plan: a task per clause of the request (`;`, `,`, lines, "then"), then a check task;
- task result: done, saying it is offline, quoting the task's tool results;
- verdicts: quality fails a task not done, scope passes, and risk blocks when the request
  names "production database" or "no tests": the deterministic way to a `blocked` run;
- report: counts, deliverables and risks; never task outcomes or reviewer notes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from agent.offline.chat import OFFLINE_PREFIX
from graphs.delivery import (
    DeliveryPlan,
    DeliveryReport,
    DeliveryTaskResult,
    PlannedDeliveryTask,
    ReviewVerdict,
    request_words,
)
from memory.text import clamp

BLOCKING_MARKERS: dict[str, str] = {
    "production database": (
        "The request changes a production database: it needs a reviewed migration, a "
        "backup and a rollback plan before anything runs."
    ),
    "no tests": "The request asks to ship without tests: add tests before it is accepted.",
}
"""Phrases the offline risk reviewer blocks on, with the blocking issue it reports."""

OFFLINE_RISK = "Offline model: the plan and task results are placeholders, not real work."
CHECK_TASK = PlannedDeliveryTask(
    title="Check the results against the request",
    description="Compare every result with the request and list what is still open.",
)
TASK_TITLE = "Produce: {clause}"
TASK_DESCRIPTION = "Work out “{clause}” as part of the request."
TASK_OUTCOME = (
    "{prefix} Offline work product for task {number} ({title}): no language model ran, "
    "so this is a placeholder."
)
TOOL_RESULTS = " Tool results: {results}."
OPEN_ISSUE = "Redo this task with a configured model to get real work."
NOT_DONE = "Task {number} ({title}) is not done."
REVIEW_NOTES = {
    "quality": "Offline quality note: {count} task result(s) checked for completeness.",
    "risk": "Offline risk note: looked for production database changes and missing tests.",
    "boundary": "Offline boundary note: the tasks follow the clauses of the request.",
}
REPORT_SUMMARY = (
    "{prefix} No OPENAI_API_KEY is set, so this delivery ran on the deterministic "
    "offline model. It planned and ran {tasks} task(s) for “{request}”; {passed} of "
    "{reviews} review(s) passed."
)
BLOCKED_SUMMARY = " The delivery is blocked until the blocking issues below are resolved."
PLACEHOLDER_DELIVERABLE = "{deliverable} (placeholder from the offline model)"

TITLE_CHARS = 100
QUOTE_CHARS = 160
_CLAUSE_SPLIT = re.compile(r"\s*(?:[;,\n]|\bthen\b)\s*", re.IGNORECASE)
_TASK_NUMBER = re.compile(r'<task number="(\d+)"')


def _stage_input(messages: Sequence[BaseMessage]) -> str:
    return "\n\n".join(m.text for m in messages if isinstance(m, HumanMessage))


def tagged(text: str, tag: str) -> str:
    """The text between `<tag …>` and `</tag>` (the first pair), stripped; "" if absent."""
    match = re.search(rf"<{tag}(?:\s[^>]*)?>(.*?)</{tag}>", text, re.DOTALL)
    return match.group(1).strip() if match else ""


def _json(text: str, tag: str) -> Any:
    try:
        return json.loads(tagged(text, tag) or "null")
    except json.JSONDecodeError:
        return None


def markers(request: str) -> list[str]:
    """The blocking markers the request mentions, in `BLOCKING_MARKERS` order."""
    folded = " ".join(request.split()).casefold()
    return [marker for marker in BLOCKING_MARKERS if marker in folded]


def clauses(request: str) -> list[str]:
    """The request's clauses of at least two words, in order (the whole request if none)."""
    parts = [part.strip(" .") for part in _CLAUSE_SPLIT.split(request)]
    return [part for part in parts if request_words(part) >= 2] or [request.strip()]


def offline_plan(messages: Sequence[BaseMessage]) -> DeliveryPlan:
    """One task per clause, then a check; the blocking markers become risks."""
    request = tagged(_stage_input(messages), "request")
    parts = clauses(request)
    tasks = [
        PlannedDeliveryTask(
            title=clamp(TASK_TITLE.format(clause=part), TITLE_CHARS),
            description=TASK_DESCRIPTION.format(clause=part),
        )
        for part in parts
    ]
    return DeliveryPlan(
        deliverables=[clamp(part, TITLE_CHARS) for part in parts],
        tasks=[*tasks, CHECK_TASK],
        risks=[*(BLOCKING_MARKERS[m] for m in markers(request)), OFFLINE_RISK],
    )


def offline_task_result(messages: Sequence[BaseMessage]) -> DeliveryTaskResult:
    """A placeholder outcome for the task, with the results of its tool calls."""
    text = _stage_input(messages)
    number_match = _TASK_NUMBER.search(text)
    number = int(number_match.group(1)) if number_match else 0
    title = tagged(text, "task").splitlines()[0] if tagged(text, "task") else "task"
    outcome = TASK_OUTCOME.format(prefix=OFFLINE_PREFIX, number=number, title=title)
    results = [clamp(m.text, QUOTE_CHARS) for m in messages if isinstance(m, ToolMessage)]
    if results:
        outcome += TOOL_RESULTS.format(results="; ".join(results))
    return DeliveryTaskResult(outcome=outcome, done=True, open_issues=[OPEN_ISSUE])


def offline_verdict(messages: Sequence[BaseMessage]) -> ReviewVerdict:
    """Quality: every task done; risk: no blocking marker; boundary: always passes."""
    text = _stage_input(messages)
    reviewer = tagged(text, "reviewer")
    results = _json(text, "results") or []
    issues: list[str] = []
    if reviewer == "quality":
        issues = [
            NOT_DONE.format(number=r.get("number"), title=r.get("title"))
            for r in results
            if not r.get("done")
        ]
    elif reviewer == "risk":
        issues = [BLOCKING_MARKERS[m] for m in markers(tagged(text, "request"))]
    note = REVIEW_NOTES.get(reviewer, REVIEW_NOTES["boundary"]).format(count=len(results))
    return ReviewVerdict(verdict="fail" if issues else "pass", blocking_issues=issues, notes=[note])


def offline_report(messages: Sequence[BaseMessage]) -> DeliveryReport:
    """Counts and the plan's deliverables and risks; never task outcomes or notes."""
    text = _stage_input(messages)
    plan = _json(text, "plan") or {}
    reviews = _json(text, "reviews") or []
    passed = sum(1 for r in reviews if r.get("verdict") == "pass" and not r.get("blocking_issues"))
    summary = REPORT_SUMMARY.format(
        prefix=OFFLINE_PREFIX,
        tasks=len(_json(text, "results") or []),
        request=clamp(" ".join(tagged(text, "request").split()), QUOTE_CHARS),
        passed=passed,
        reviews=len(reviews),
    )
    if tagged(text, "status") == "blocked":
        summary += BLOCKED_SUMMARY
    return DeliveryReport(
        summary=summary,
        deliverables=[
            PLACEHOLDER_DELIVERABLE.format(deliverable=d) for d in plan.get("deliverables", [])
        ],
        findings=[],
        open_risks=list(plan.get("risks", [])),
    )
