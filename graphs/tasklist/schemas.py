"""The task list's structured outputs (their field descriptions are part of the prompt),
`EditedTask` (a task of a reviewer's `edit`) and the limits of a task's fields."""

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

DEFAULT_CRITERION = "The task is done as its title says."
"""The acceptance criterion of a task given without one (planned or edited)."""


# -- structured outputs --------------------------------------------------------------------


class PlannedTasklistTask(BaseModel):
    """One task of a plan."""

    id: str = Field(description='Short id such as "t1".')
    title: str = Field(description="Short imperative title.")
    acceptance_criteria: list[str] = Field(description="How to tell the task is done.")
    status: Literal["pending"] = "pending"


class TaskPlan(BaseModel):
    """The task list for the goal."""

    tasks: list[PlannedTasklistTask] = Field(description="3 to 7 tasks, in order.")


class TasklistTaskResult(BaseModel):
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
