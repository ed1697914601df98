"""The delivery run state: the plan, task artifacts and verdicts, as plain TypedDicts
(checkpoints hold JSON-like values), kept in the run thread."""

from __future__ import annotations

import operator
from typing import Annotated

from langgraph.channels import UntrackedValue
from typing_extensions import TypedDict

from graphs.state import WorkflowInput, WorkflowOutput


class PlanRecord(TypedDict):
    """The plan as kept in the run state: tasks capped at `max_tasks`."""

    deliverables: list[str]
    tasks: list[dict[str, str]]
    risks: list[str]
    dropped_tasks: int


class TaskArtifact(TypedDict):
    """A task's result: a runtime artifact, kept in the run thread only."""

    number: int
    title: str
    outcome: str
    done: bool
    open_issues: list[str]


class Verdict(TypedDict):
    """A reviewer's verdict as kept in the run state."""

    reviewer: str
    verdict: str
    blocking_issues: list[str]
    notes: list[str]


class DeliveryState(WorkflowInput, WorkflowOutput, total=False):
    """The run state of one delivery; all of it stays inside the subgraph."""

    context: Annotated[str, UntrackedValue(str)]
    """The summary and pinned decisions as one prompt block (never checkpointed)."""
    plan: PlanRecord
    """The capped plan (replaced)."""
    artifacts: list[TaskArtifact]
    """The task results, in task order (replaced)."""
    verdicts: Annotated[list[Verdict], operator.add]
    """One per reviewer (appended: the reviewers run in parallel)."""
    failures: Annotated[list[str], operator.add]
    """User texts of failed stages (appended: a reviewer may fail in parallel)."""


class ReviewAssignment(DeliveryState):
    """What one reviewer receives through `Send`: the run state and its reviewer's name."""

    reviewer: str
