"""The task-list subgraph: `plan_tasks → review_strategy` (approve / edit → execute,
respond → plan again, reject → end) `→ execute_tasks` (once per queued task)
`→ check_results` (blocking issues, first time → `review_revision`: accept → summarize,
revise → those tasks once more) `→ summarize`.

Each task is a step keyed by its id: a crashed run resumes at the first task queued and
never runs a finished one. The reviews do nothing before `interrupt()`, so re-executing
them on resume is safe. Only `workflow_text` and `workflow_status` leave the subgraph.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import BaseModel

from graphs.events import emit
from graphs.routing import STOP
from graphs.state import WORKFLOW_MAX_TOKENS, Background, WorkflowInput, WorkflowOutput, turn_ids
from graphs.structured import StructuredPolicy, as_policy
from graphs.tasklist import prompts as text
from graphs.tasklist.prompts import Outcome, one_line, render_summary
from graphs.tasklist.reviews import (
    MAX_TASKS,
    REVISION_FIELDS,
    REVISION_REVIEW,
    STRATEGY_FIELDS,
    STRATEGY_REVIEW,
    IssueItem,
    TaskItem,
    ask_reviewer,
    make_task,
    public_task,
)
from graphs.tasklist.schemas import (
    DEFAULT_CRITERION,
    MAX_CRITERIA,
    MAX_CRITERION_CHARS,
    MAX_TITLE_CHARS,
    SelfCheck,
    TasklistSummary,
    TasklistTaskResult,
    TaskPlan,
)

logger = logging.getLogger(__name__)

MIN_PLANNED_TASKS, MAX_REVISION_ROUNDS = 3, 1

SchemaT = TypeVar("SchemaT", bound=BaseModel)


class TasklistState(WorkflowInput, WorkflowOutput, total=False):
    """The subgraph's own state; every key is replaced, none is appended."""

    tasks: list[TaskItem]
    """The current plan with statuses and results (replaced)."""
    feedback: str
    """The reviewer's latest `respond` feedback, for the next plan (replaced)."""
    issues: list[IssueItem]
    """The latest self-check's findings (replaced)."""
    revision_round: int
    """Revision rounds run so far, at most `MAX_REVISION_ROUNDS` (replaced)."""
    queue: list[str]
    """Ids of the tasks still to run in this round, in order (replaced)."""


TasklistGraph = StateGraph[TasklistState, None, WorkflowInput, WorkflowOutput]


# -- helpers -------------------------------------------------------------------------------


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def planned_tasks(plan: TaskPlan) -> list[TaskItem]:
    """The model's plan as pending tasks `t1…tn`: empty titles dropped, at most `MAX_TASKS`
    (`ValueError` for a plan with no usable task)."""
    tasks: list[TaskItem] = []
    for planned in plan.tasks:
        title = one_line(planned.title, MAX_TITLE_CHARS)
        criteria = [one_line(c, MAX_CRITERION_CHARS) for c in planned.acceptance_criteria]
        criteria = [c for c in criteria if c][:MAX_CRITERIA] or [DEFAULT_CRITERION]
        if title and len(tasks) < MAX_TASKS:
            tasks.append(make_task(f"t{len(tasks) + 1}", title, criteria))
    if not tasks:
        raise ValueError("the plan has no tasks")
    return tasks


def checked_issues(check: SelfCheck, tasks: list[TaskItem]) -> list[IssueItem]:
    """The self-check's issues, completed with what it missed (a blocked task it did not
    flag; a failed check that flagged nothing blocking), so "falls short" is never silent."""
    titles = {task["id"]: task["title"] for task in tasks}
    issues = [
        IssueItem(
            task_id=issue.task_id if issue.task_id in titles else None,
            description=one_line(issue.description, text.MAX_ITEM_CHARS),
            blocking=issue.blocking,
        )
        for issue in check.issues
        if issue.description.strip()
    ]
    flagged = {issue["task_id"] for issue in issues if issue["blocking"]}
    for task in tasks:
        if task["status"] == "blocked" and task["id"] not in flagged:
            found = text.BLOCKED_TASK_ISSUE.format(title=task["title"], result=task["result"])
            issues.append(IssueItem(task_id=task["id"], description=found, blocking=True))
    if not check.passed and not any(issue["blocking"] for issue in issues):
        issues.append(IssueItem(task_id=None, description=text.SHORT_OF_GOAL, blocking=True))
    return issues


def _blocking(state: TasklistState) -> bool:
    return any(issue["blocking"] for issue in state.get("issues", []))


def _failure(step: str) -> dict[str, Any]:
    # called inside `except`: the log keeps the traceback, the user gets a safe text
    logger.exception("task-list step %s failed", step)
    return {"workflow_status": "failed", "workflow_text": text.FAILED_TEXT}


def _progress(step: str, **fields: Any) -> None:
    emit("progress", stage="tasklist", step=step, **fields)


# -- nodes ---------------------------------------------------------------------------------


def revision_queue(state: TasklistState) -> list[str]:
    """The tasks a revision round runs again: those named by a blocking issue or blocked
    (all of them when no issue names a task)."""
    tasks = state["tasks"]
    issues = [issue for issue in state.get("issues", []) if issue["blocking"]]
    named = {issue["task_id"] for issue in issues}
    redo = [t["id"] for t in tasks if not issues or t["id"] in named or t["status"] == "blocked"]
    return redo or [t["id"] for t in tasks]


async def review_strategy(
    state: TasklistState,
) -> Command[Literal["plan_tasks", "execute_tasks", "__end__"]]:
    """Pause for the strategy review, then execute, re-plan, or stop on a rejection."""
    payload = {
        "kind": STRATEGY_REVIEW,
        "goal": state["user_text"],
        "tasks": [public_task(task) for task in state["tasks"]],
        "actions": list(STRATEGY_FIELDS),
    }
    decision = ask_reviewer(payload)
    action = decision["action"]
    if action == "reject":
        reason = decision["reason"].rstrip(" .") or decision["reason"]
        rejected = text.REJECTED_TEXT.format(reason=reason)
        return Command(goto=STOP, update={"workflow_status": "rejected", "workflow_text": rejected})
    if action == "respond":
        return Command(goto="plan_tasks", update={"feedback": decision["feedback"]})
    if action == "edit":
        tasks = [
            make_task(t["id"], t["title"], t["acceptance_criteria"]) for t in decision["tasks"]
        ]
        return Command(
            goto="execute_tasks", update={"tasks": tasks, "queue": [t["id"] for t in tasks]}
        )
    return Command(goto="execute_tasks", update={"queue": [t["id"] for t in state["tasks"]]})


async def review_revision(state: TasklistState) -> Command[Literal["execute_tasks", "summarize"]]:
    """Pause for the revision review: accept the result as is, or run one revision round."""
    titles = {task["id"]: task["title"] for task in state["tasks"]}
    issues = [
        {**issue, "task_title": titles.get(issue["task_id"] or "")}
        for issue in state.get("issues", [])
    ]
    payload = {"kind": REVISION_REVIEW, "issues": issues, "actions": list(REVISION_FIELDS)}
    if ask_reviewer(payload)["action"] == "revise":
        rounds = state.get("revision_round", 0) + 1
        update = {"revision_round": rounds, "queue": revision_queue(state)}
        return Command(goto="execute_tasks", update=update)
    return Command(goto="summarize")


@dataclass(eq=False)
class TasklistSteps:
    """The model-calling nodes, bound to one chat model; a model failure (an error or an
    invalid output) ends the run `failed` with a safe text."""

    model: BaseChatModel
    structured: StructuredPolicy
    background: Background | None = None

    async def read_background(self, state: TasklistState) -> tuple[str, list[str]]:
        """The conversation's summary and pins (none when the graph runs on its own)."""
        if self.background is None:
            return "", []
        return await asyncio.to_thread(self.background, *turn_ids())

    async def ask(self, schema: type[SchemaT], system: str, request: str) -> SchemaT:
        """One structured-output call (never streamed as answer tokens)."""
        runnable = self.structured.bind(self.model, schema, max_tokens=WORKFLOW_MAX_TOKENS)
        messages = [SystemMessage(system), HumanMessage(request)]
        return await runnable.with_config(tags=[TAG_NOSTREAM]).ainvoke(messages)

    async def plan_tasks(self, state: TasklistState) -> dict[str, Any]:
        """Plan the goal, with the conversation's summary and pins as background."""
        _progress("plan", status="started")
        feedback = state.get("feedback", "")
        previous = [public_task(task) for task in state.get("tasks", [])] if feedback else []
        summary, background_pins = await self.read_background(state)
        pins = "\n".join(f"{n}. {pin}" for n, pin in enumerate(background_pins, 1))
        request = text.PLAN_REQUEST.format(
            goal=state["user_text"],
            summary=summary or text.NONE_TEXT,
            pins=pins or text.NONE_TEXT,
            previous_plan=_json(previous) if previous else text.NONE_TEXT,
            feedback=feedback or text.NONE_TEXT,
        )
        system = text.PLAN_SYSTEM_PROMPT.format(min_tasks=MIN_PLANNED_TASKS, max_tasks=MAX_TASKS)
        try:
            tasks = planned_tasks(await self.ask(TaskPlan, system, request))
        except Exception:
            return _failure("plan_tasks")
        _progress("plan", status="completed", tasks=len(tasks))
        return {"tasks": tasks, "issues": [], "revision_round": 0}

    async def execute_tasks(self, state: TasklistState) -> dict[str, Any]:
        """Run the first queued task with one model call: pending → in_progress →
        completed | blocked. In a revision round the task sees its blocking issues."""
        tasks = [TaskItem(**task) for task in state["tasks"]]
        queue = list(state.get("queue", []))
        by_id = {task["id"]: task for task in tasks}
        issues = [issue for issue in state.get("issues", []) if issue["blocking"]]
        if not queue or queue[0] not in by_id:  # nothing (or an unknown task) to run
            return {"queue": queue[1:]}
        task = by_id[queue[0]]
        task["status"] = "in_progress"
        done = sum(1 for t in tasks if t["status"] in ("completed", "blocked"))
        where = {"taskId": task["id"], "title": task["title"], "index": done + 1}
        _progress("execute", status=task["status"], total=len(tasks), **where)
        earlier = [
            {"id": t["id"], "title": t["title"], "result": t["result"]}
            for t in tasks
            if t["status"] == "completed"
        ]
        own = [issue for issue in issues if issue["task_id"] in (task["id"], None)]
        request = text.EXECUTE_REQUEST.format(
            goal=state["user_text"],
            task=_json(public_task(task)),
            earlier=_json(earlier) if earlier else text.NONE_TEXT,
            issues=_json(own) if own else text.NONE_TEXT,
        )
        try:
            result = await self.ask(TasklistTaskResult, text.EXECUTE_SYSTEM_PROMPT, request)
        except Exception:
            return _failure("execute_tasks")
        task["status"] = result.status
        task["result"] = one_line(result.outcome, text.MAX_RESULT_CHARS)
        _progress("execute", status=task["status"], total=len(tasks), **where)
        return {"tasks": tasks, "queue": queue[1:]}

    async def check_results(self, state: TasklistState) -> dict[str, Any]:
        """Self-check the results against the goal and the acceptance criteria."""
        _progress("check", status="started")
        results = [{**public_task(task), "result": task["result"]} for task in state["tasks"]]
        request = text.CHECK_REQUEST.format(goal=state["user_text"], results=_json(results))
        try:
            check = await self.ask(SelfCheck, text.CHECK_SYSTEM_PROMPT, request)
        except Exception:
            return _failure("check_results")
        issues = checked_issues(check, state["tasks"])
        _progress("check", status="completed", issues=len(issues))
        return {"issues": issues}

    async def summarize(self, state: TasklistState) -> dict[str, Any]:
        """Write the final summary: `blocked` when blocking issues remain, else `completed`."""
        status: Outcome = "blocked" if _blocking(state) else "completed"
        titles = {task["id"]: task["title"] for task in state["tasks"]}
        run = {
            "status": status,
            "tasks": [
                {"title": t["title"], "status": t["status"], "result": t["result"]}
                for t in state["tasks"]
            ],
            "issues": [
                {
                    "task": titles.get(i["task_id"] or ""),
                    "description": i["description"],
                    "blocking": i["blocking"],
                }
                for i in state.get("issues", [])
            ],
        }
        request = text.SUMMARY_REQUEST.format(goal=state["user_text"], run=_json(run))
        try:
            summary = await self.ask(TasklistSummary, text.SUMMARY_SYSTEM_PROMPT, request)
        except Exception:
            return _failure("summarize")
        _progress("summarize", status=status)
        return {"workflow_status": status, "workflow_text": render_summary(status, summary)}


# -- routers and assembly ------------------------------------------------------------------


async def route_after_plan(state: TasklistState) -> Literal["review_strategy", "__end__"]:
    """A failed plan ends the run; otherwise the plan goes to the strategy review."""
    return STOP if state.get("workflow_status") == "failed" else "review_strategy"


async def route_after_execute(
    state: TasklistState,
) -> Literal["execute_tasks", "check_results", "__end__"]:
    """A failed task ends the run; the next queued task runs; then the results are checked."""
    if state.get("workflow_status") == "failed":
        return STOP
    return "execute_tasks" if state.get("queue") else "check_results"


async def route_after_check(
    state: TasklistState,
) -> Literal["review_revision", "summarize", "__end__"]:
    """Blocking issues go to the revision review once; then the run is summarised."""
    if state.get("workflow_status") == "failed":
        return STOP
    if _blocking(state) and state.get("revision_round", 0) < MAX_REVISION_ROUNDS:
        return "review_revision"
    return "summarize"


def build_tasklist_graph(
    *,
    model: BaseChatModel,
    structured_output_method: StructuredPolicy | str | None = None,
    background: Background | None = None,
) -> TasklistGraph:
    """Assemble the task-list subgraph (uncompiled): every step calls `model` for structured
    output; `background` reads the conversation's summary and pins for the planner."""
    steps = TasklistSteps(model, as_policy(structured_output_method), background)
    builder: TasklistGraph = StateGraph(
        TasklistState, input_schema=WorkflowInput, output_schema=WorkflowOutput
    )
    builder.add_node(steps.plan_tasks)
    builder.add_node(review_strategy)
    builder.add_node(steps.execute_tasks)
    builder.add_node(steps.check_results)
    builder.add_node(review_revision)
    builder.add_node(steps.summarize)

    builder.add_edge(START, "plan_tasks")
    builder.add_conditional_edges("plan_tasks", route_after_plan)
    builder.add_conditional_edges("execute_tasks", route_after_execute)
    builder.add_conditional_edges("check_results", route_after_check)
    builder.add_edge("summarize", END)
    return builder
