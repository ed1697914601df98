"""The task-list workflow: its builder and what other packages use of it.

`graph` builds the subgraph, `prompts` holds its prompts and texts, `schemas` the
structured outputs its model answers with, `reviews` the human reviews and their checks.
"""

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
