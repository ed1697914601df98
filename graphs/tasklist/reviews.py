"""Task-list reviews: the task items, the decisions a reviewer may send, their checks
(`REVIEWS`, which `ChatAgent` applies before resuming)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from langgraph.types import interrupt
from pydantic import ValidationError
from typing_extensions import TypedDict

from graphs.decisions import InvalidDecision, Validator, validate_decision
from graphs.tasklist import prompts as text
from graphs.tasklist.schemas import EditedTask

MAX_TASKS = 7
MAX_REASON_CHARS, MAX_FEEDBACK_CHARS = 1000, 2000

STRATEGY_REVIEW, REVISION_REVIEW = "strategy_review", "revision_review"
STRATEGY_FIELDS: dict[str, tuple[str, ...]] = {
    "approve": (),
    "edit": ("tasks",),
    "reject": ("reason",),
    "respond": ("feedback",),
}
"""Strategy-review actions and the fields each one takes besides `action`."""
REVISION_FIELDS: dict[str, tuple[str, ...]] = {"accept": (), "revise": ()}


TaskStatus = Literal["pending", "in_progress", "completed", "blocked"]


class TaskItem(TypedDict):
    """A task in the run state (review payloads show all but `result`)."""

    id: str
    title: str
    acceptance_criteria: list[str]
    status: TaskStatus
    result: str


class IssueItem(TypedDict):
    """A self-check finding in the run state."""

    task_id: str | None
    description: str
    blocking: bool


def _action(decision: Mapping[str, Any], fields: dict[str, tuple[str, ...]], review: str) -> str:
    action = decision.get("action")
    if not isinstance(action, str) or action not in fields:
        actions = ", ".join(fields)
        raise InvalidDecision(
            text.UNKNOWN_ACTION.format(action=action, review=review, actions=actions)
        )
    extra = sorted(str(key) for key in decision if key not in {"action", *fields[action]})
    if extra:
        allowed = ", ".join(("action", *fields[action]))
        raise InvalidDecision(
            text.UNEXPECTED_FIELDS.format(fields=", ".join(extra), action=action, allowed=allowed)
        )
    return action


def _required_text(decision: Mapping[str, Any], action: str, field: str, limit: int) -> str:
    value = decision.get(field)
    if not isinstance(value, str) or not value.strip():
        raise InvalidDecision(text.MISSING_TEXT.format(action=action, field=field))
    if len(value.strip()) > limit:
        raise InvalidDecision(
            text.TEXT_TOO_LONG.format(field=field, length=len(value), limit=limit)
        )
    return value.strip()


def make_task(task_id: str, title: str, criteria: list[str]) -> TaskItem:
    return TaskItem(
        id=task_id, title=title, acceptance_criteria=criteria, status="pending", result=""
    )


def _invalid_tasks(problem: str) -> InvalidDecision:
    return InvalidDecision(text.INVALID_TASKS.format(problem=problem))


def validate_tasks(value: object) -> list[dict[str, Any]]:
    """The edited task list as a review payload shows tasks (pending; ids kept or assigned),
    unchanged when validated again (`ChatAgent` does, then the review node);
    `InvalidDecision` for not 1 to `MAX_TASKS` tasks, a malformed task, or a duplicate id."""
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_TASKS:
        raise _invalid_tasks(text.TASK_COUNT.format(limit=MAX_TASKS))
    edited: list[EditedTask] = []
    for index, raw in enumerate(value, 1):
        try:
            edited.append(EditedTask.model_validate(raw))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "task"
            raise _invalid_tasks(f"task {index}: {where}: {error['msg']}") from None
    given = [task.id for task in edited if task.id]
    for task_id in given:
        if given.count(task_id) > 1:
            raise _invalid_tasks(text.DUPLICATE_ID.format(task_id=task_id))
    free = (f"t{n}" for n in range(1, 2 * MAX_TASKS + 1) if f"t{n}" not in given)
    tasks = [make_task(t.id or next(free), t.title, list(t.acceptance_criteria)) for t in edited]
    return [public_task(task) for task in tasks]


def validate_strategy_decision(
    payload: Mapping[str, Any], decision: Mapping[str, Any]
) -> dict[str, Any]:
    """Normalise a strategy-review decision: approve, edit, reject, respond (`InvalidDecision`)."""
    action = _action(decision, STRATEGY_FIELDS, "strategy review")
    if action == "edit":
        return {"action": action, "tasks": validate_tasks(decision.get("tasks"))}
    if action in ("reject", "respond"):
        field = STRATEGY_FIELDS[action][0]
        limit = MAX_REASON_CHARS if action == "reject" else MAX_FEEDBACK_CHARS
        return {"action": action, field: _required_text(decision, action, field, limit)}
    return {"action": action}


def validate_revision_decision(
    payload: Mapping[str, Any], decision: Mapping[str, Any]
) -> dict[str, Any]:
    """Normalise a revision-review decision (accept | revise), else `InvalidDecision`."""
    return {"action": _action(decision, REVISION_FIELDS, "revision review")}


REVIEWS: Mapping[str, Validator] = MappingProxyType(
    {STRATEGY_REVIEW: validate_strategy_decision, REVISION_REVIEW: validate_revision_decision}
)
"""The task list's reviews: the decision validator of each interrupt payload `kind`."""


def ask_reviewer(payload: dict[str, Any]) -> dict[str, Any]:
    """Pause for a review and return the validated decision: a resume from Studio or the
    SDK comes unchecked, so a bad one pauses again, the payload with an `error`."""
    answer = interrupt(payload)
    while True:
        try:
            return validate_decision(payload, answer, REVIEWS)
        except InvalidDecision as exc:
            answer = interrupt({**payload, "error": str(exc)})


def public_task(task: TaskItem) -> dict[str, Any]:
    """A task as a review payload shows it: id, title, acceptance criteria, status."""
    return {key: task[key] for key in ("id", "title", "acceptance_criteria", "status")}
