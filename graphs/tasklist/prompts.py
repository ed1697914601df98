"""The task list's prompts and the texts the user reads (summary, rejection, failure,
validation). Requests put their inputs between tags (`<goal>`, `<task>`, `<results>`,
`<run>`), data inside as JSON; the offline model (agent/offline/tasklist.py) reads them.
"""

from __future__ import annotations

from typing import Literal

from graphs.tasklist.schemas import TasklistSummary

MAX_RESULT_CHARS, MAX_SUMMARY_ITEMS, MAX_ITEM_CHARS = 2000, 10, 400

PLAN_SYSTEM_PROMPT = """\
You plan work for a person. Turn their goal into a short task list of {min_tasks} to \
{max_tasks} concrete tasks, in the order they should be done. Each task has an id \
("t1", "t2", ...), a short imperative title, one to three acceptance criteria that say \
how to tell it is done, and the status "pending". Use the background only to respect \
earlier decisions; plan for the goal. When reviewer feedback is given, revise the \
previous plan to address it."""

PLAN_REQUEST = """\
<goal>
{goal}
</goal>
<background>
Conversation summary: {summary}
Pinned decisions:
{pins}
</background>
<previous_plan>
{previous_plan}
</previous_plan>
<feedback>
{feedback}
</feedback>"""

EXECUTE_SYSTEM_PROMPT = """\
You carry out one task of a plan for the goal below and report the result. Work only \
on this task, using the results of the earlier tasks. Answer with the status \
"completed" when its acceptance criteria are met, or "blocked" when they cannot be \
met (say why), and a concise description of what you did or found. When review \
issues are listed, fix them in this attempt."""

EXECUTE_REQUEST = """\
<goal>
{goal}
</goal>
<task>
{task}
</task>
<earlier_results>
{earlier}
</earlier_results>
<issues>
{issues}
</issues>"""

CHECK_SYSTEM_PROMPT = """\
You check finished work against its goal. For each task, compare the result with its \
acceptance criteria. Report every shortfall as an issue with the task id, a one-line \
description, and whether it is blocking (the goal is not met without fixing it) or \
only needs a manual check. Set passed to true only when nothing blocking remains."""

CHECK_REQUEST = """\
<goal>
{goal}
</goal>
<results>
{results}
</results>"""

SUMMARY_SYSTEM_PROMPT = """\
You write the final summary of a task-list run for the person who asked for it. Be \
concise and factual: a one- or two-sentence outcome, what was done, what remains, and \
what needs a manual check (short items, no task ids, no internal details). The run's \
status is given; do not contradict it."""

SUMMARY_REQUEST = """\
<goal>
{goal}
</goal>
<run>
{run}
</run>"""

NONE_TEXT = "(none)"


# -- user-facing texts ---------------------------------------------------------------------

SUMMARY_MARKDOWN = """\
### Outcome
{status}: {outcome}

### What was done
{done}

### What remains
{remaining}

### Needs a manual check
{manual_checks}"""

STATUS_LABELS = {"completed": "Completed", "blocked": "Blocked"}
DEFAULT_OUTCOMES = {"completed": "All tasks are done.", "blocked": "Some work is blocked."}
NOTHING_ITEM = "- Nothing."
REJECTED_TEXT = "The plan was rejected: {reason}. Nothing was run."
FAILED_TEXT = (
    "The task list could not be finished this time, so nothing was saved. Please try again."
)
BLOCKED_TASK_ISSUE = "The task “{title}” is blocked: {result}"
SHORT_OF_GOAL = "The self-check found the result short of the goal."

UNKNOWN_ACTION = "unknown action {action!r} for the {review}; use one of: {actions}"
UNEXPECTED_FIELDS = "unexpected field(s) {fields} for action {action!r}; it takes: {allowed}"
MISSING_TEXT = "action {action!r} needs a non-empty {field!r} string"
TEXT_TOO_LONG = "{field!r} is too long ({length:,} characters; the limit is {limit:,})"
INVALID_TASKS = "invalid edited task list: {problem}"
TASK_COUNT = "'tasks' must be a list of 1 to {limit} tasks"
DUPLICATE_ID = "duplicate task id {task_id!r}"


Outcome = Literal["completed", "blocked"]


def one_line(value: str, limit: int) -> str:
    """`value` on one line, cut to `limit` characters with an ellipsis."""
    line = " ".join(value.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _bullets(items: list[str]) -> str:
    lines = [f"- {line}" for line in (one_line(i, MAX_ITEM_CHARS) for i in items) if line]
    return "\n".join(lines[:MAX_SUMMARY_ITEMS]) or NOTHING_ITEM


def render_summary(status: Outcome, summary: TasklistSummary) -> str:
    """The user-visible markdown: outcome, what was done, what remains, manual checks."""
    return SUMMARY_MARKDOWN.format(
        status=STATUS_LABELS[status],
        outcome=one_line(summary.outcome, MAX_RESULT_CHARS) or DEFAULT_OUTCOMES[status],
        done=_bullets(summary.done),
        remaining=_bullets(summary.remaining),
        manual_checks=_bullets(summary.manual_checks),
    )
