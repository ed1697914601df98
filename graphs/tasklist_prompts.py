"""The task-list's contract with the outside: model prompts and outputs, decisions, texts.

What graphs/tasklist.py asks its model and the structured answers it expects (their
field descriptions are part of the prompt), the shape of a reviewer's edited task,
and the text the user reads (summary, rejection, failure, validation messages).
Requests put their inputs between simple tags (`<goal>`, `<task>`, `<results>`,
`<run>`), structured data inside them as JSON; the offline model
(agent/offline_tasklist.py) reads the same tags.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

MAX_TITLE_CHARS, MAX_CRITERIA, MAX_CRITERION_CHARS = 200, 5, 300
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


# -- structured outputs --------------------------------------------------------------------


class PlannedTask(BaseModel):
    """One task of a plan."""

    id: str = Field(description='Short id such as "t1".')
    title: str = Field(description="Short imperative title.")
    acceptance_criteria: list[str] = Field(description="How to tell the task is done.")
    status: Literal["pending"] = "pending"


class TaskPlan(BaseModel):
    """The task list for the goal."""

    tasks: list[PlannedTask] = Field(description="3 to 7 tasks, in order.")


class TaskResult(BaseModel):
    """The result of one task."""

    status: Literal["completed", "blocked"]
    outcome: str = Field(description="What was done or found, or why it is blocked.")


class CheckIssue(BaseModel):
    """A shortfall found by the self-check."""

    task_id: str | None = Field(default=None, description="The task concerned, if one.")
    description: str
    blocking: bool = Field(default=True, description="False: it only needs a manual check.")


class SelfCheck(BaseModel):
    """The self-check's verdict on the executed tasks."""

    passed: bool
    issues: list[CheckIssue] = Field(default_factory=list)


class TasklistSummary(BaseModel):
    """The content of the final summary."""

    outcome: str = Field(description="One or two sentences.")
    done: list[str] = Field(default_factory=list, description="What was done.")
    remaining: list[str] = Field(default_factory=list, description="What remains.")
    manual_checks: list[str] = Field(default_factory=list, description="What to check by hand.")


# -- what a reviewer may send ----------------------------------------------------------------

DEFAULT_CRITERION = "The task is done as its title says."

Criterion = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_CRITERION_CHARS)
]


class EditedTask(BaseModel):
    """A task of an `edit` decision: a title, or a title with acceptance criteria (a
    plain title gets the default criterion); `id` is assigned when missing."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,40}$")
    title: str = Field(min_length=1, max_length=MAX_TITLE_CHARS)
    acceptance_criteria: list[Criterion] = Field(
        default_factory=lambda: [DEFAULT_CRITERION], min_length=1, max_length=MAX_CRITERIA
    )
    status: Literal["pending"] = "pending"

    @model_validator(mode="before")
    @classmethod
    def _title_only(cls, value: object) -> object:
        return {"title": value} if isinstance(value, str) else value

    @field_validator("acceptance_criteria", mode="before")
    @classmethod
    def _one_criterion(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


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
