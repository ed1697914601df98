"""The task-list workflow: its builder and what other packages use of it."""

from graphs.tasklist.graph import MIN_PLANNED_TASKS, build_tasklist_graph
from graphs.tasklist.prompts import NONE_TEXT
from graphs.tasklist.reviews import MAX_TASKS, REVIEWS, REVISION_REVIEW, STRATEGY_REVIEW
from graphs.tasklist.schemas import (
    CheckIssue,
    PlannedTasklistTask,
    SelfCheck,
    TasklistSummary,
    TasklistTaskResult,
    TaskPlan,
)

__all__ = [
    "MAX_TASKS",
    "MIN_PLANNED_TASKS",
    "NONE_TEXT",
    "REVIEWS",
    "REVISION_REVIEW",
    "STRATEGY_REVIEW",
    "CheckIssue",
    "PlannedTasklistTask",
    "SelfCheck",
    "TaskPlan",
    "TasklistSummary",
    "TasklistTaskResult",
    "build_tasklist_graph",
]
