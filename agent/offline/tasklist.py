"""The offline model's task-list handlers, one per schema, reading the tagged requests
(`<goal>`, `<feedback>`, `<task>`, `<issues>`, `<results>`, `<run>`):
- plan: a task per sentence of the goal (per clause under three), padded to three with a
  check and a write-up, past seven folded into the seventh; feedback adds a task for it;
- execute: every task completes, noting that nothing was run;
- self-check: a task asking to verify (`verify`, `验证`, …) is a blocking issue, as the
  offline model verifies nothing: such a goal goes through the revision review and ends
  `blocked`;
- summary: what was done, what remains (blocking issues), what to check by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from graphs.tasklist import (
    MAX_TASKS,
    MIN_PLANNED_TASKS,
    NONE_TEXT,
    CheckIssue,
    PlannedTasklistTask,
    SelfCheck,
    TasklistSummary,
    TasklistTaskResult,
    TaskPlan,
)

FILLER_TASKS = ("Check the result against the goal", "Write down what was done and what remains")
REST_TASK = "Finish the rest: {rest}"
FEEDBACK_TASK = "Address the review feedback: {feedback}"
CRITERION = "The result covers “{title}”."
OFFLINE_OUTCOME = (
    "Offline model: worked out how to {task} and wrote the steps down; "
    "nothing was run outside this conversation."
)
REVISED_NOTE = " Revised for: {issues}"
CANNOT_VERIFY = "The offline model cannot verify “{title}”; check it by hand."
COMPLETED_OUTCOME = "Offline model: {all_tasks} written up as steps; nothing was run or verified."
BLOCKED_OUTCOME = (
    "Offline model: {done} of {total} tasks are written up as steps; blocking issues remain."
)
OFFLINE_CHECK = "The offline model only wrote the steps down: check them before acting on them."
NOT_A_TASKLIST_REQUEST = "the offline task-list handler needs a request with a <{tag}> block"

_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；])\s*|\n+")
_CLAUSE_BREAK = re.compile(
    r"\s*[,，、]\s*(?:and\s+)?(?:then\s+)?|\s+(?:and\s+)?then\s+", re.IGNORECASE
)
_TRIM = " \t-*•.,;:!?。！？；，、"
_NUMBERING = re.compile(r"^\(?\d+[.)]\s*")
_VERIFY = re.compile(r"\bverif(?:y|ied|ies|ying|ication)\b|验证", re.IGNORECASE)


def _block(messages: Sequence[BaseMessage], tag: str) -> str:
    request = messages[-1].text if messages else ""
    found = re.search(f"<{tag}>\n(.*?)\n</{tag}>", request, re.DOTALL)
    if found is None:
        raise ValueError(NOT_A_TASKLIST_REQUEST.format(tag=tag))
    value = found.group(1).strip()
    return "" if value == NONE_TEXT else value


def _json_block(messages: Sequence[BaseMessage], tag: str) -> Any:
    value = _block(messages, tag)
    return json.loads(value) if value else None


def _pieces(text: str, pattern: re.Pattern[str]) -> list[str]:
    cleaned = (_NUMBERING.sub("", piece.strip(_TRIM)).strip(_TRIM) for piece in pattern.split(text))
    return [piece[:1].upper() + piece[1:] for piece in cleaned if any(c.isalnum() for c in piece)]


def plan_titles(goal: str, feedback: str = "") -> list[str]:
    """The offline plan's task titles for `goal` (three to seven), as the rules say."""
    titles = _pieces(goal, _SENTENCE_END)
    if len(titles) < MIN_PLANNED_TASKS:
        titles = [clause for sentence in titles for clause in _pieces(sentence, _CLAUSE_BREAK)]
    titles = list(dict.fromkeys(titles))
    for filler in FILLER_TASKS:
        if len(titles) < MIN_PLANNED_TASKS:
            titles.append(filler)
    if len(titles) > MAX_TASKS:
        rest = "; ".join(titles[MAX_TASKS - 1 :])
        titles = [*titles[: MAX_TASKS - 1], REST_TASK.format(rest=rest)]
    if feedback:
        titles = [
            *titles[: MAX_TASKS - 1],
            FEEDBACK_TASK.format(feedback=" ".join(feedback.split())),
        ]
    return titles


def offline_plan(messages: Sequence[BaseMessage]) -> TaskPlan:
    """Plan the `<goal>` (and any `<feedback>`) of the request."""
    titles = plan_titles(_block(messages, "goal"), _block(messages, "feedback"))
    return TaskPlan(
        tasks=[
            PlannedTasklistTask(
                id=f"t{n}", title=title, acceptance_criteria=[CRITERION.format(title=title)]
            )
            for n, title in enumerate(titles, 1)
        ]
    )


def offline_result(messages: Sequence[BaseMessage]) -> TasklistTaskResult:
    """Complete the `<task>` with a note that nothing was run (and what was revised)."""
    task = _json_block(messages, "task") or {}
    title = str(task.get("title", "the task"))
    outcome = OFFLINE_OUTCOME.format(task=title[:1].lower() + title[1:])
    issues = _json_block(messages, "issues") or []
    if issues:
        outcome += REVISED_NOTE.format(issues="; ".join(str(i.get("description")) for i in issues))
    return TasklistTaskResult(status="completed", outcome=outcome)


def offline_check(messages: Sequence[BaseMessage]) -> SelfCheck:
    """Flag every task that asks to verify something; pass otherwise."""
    results = _json_block(messages, "results") or []
    issues = [
        CheckIssue(task_id=task.get("id"), description=CANNOT_VERIFY.format(title=task["title"]))
        for task in results
        if _VERIFY.search(str(task.get("title", "")))
    ]
    return SelfCheck(passed=not issues, issues=issues)


def offline_summary(messages: Sequence[BaseMessage]) -> TasklistSummary:
    """Summarise the `<run>`: completed titles, blocking issues, issues to check by hand."""
    run = _json_block(messages, "run") or {}
    tasks, issues = run.get("tasks", []), run.get("issues", [])
    unmet = {issue.get("task") for issue in issues if issue.get("blocking")}
    done = [t["title"] for t in tasks if t.get("status") == "completed" and t["title"] not in unmet]
    if run.get("status") == "blocked":
        outcome = BLOCKED_OUTCOME.format(done=len(done), total=len(tasks))
    else:
        all_tasks = "the one task is" if len(tasks) == 1 else f"all {len(tasks)} tasks are"
        outcome = COMPLETED_OUTCOME.format(all_tasks=all_tasks)
    return TasklistSummary(
        outcome=outcome,
        done=done,
        remaining=[issue["description"] for issue in issues if issue.get("blocking")],
        manual_checks=[
            *(issue["description"] for issue in issues if not issue.get("blocking")),
            OFFLINE_CHECK,
        ],
    )
