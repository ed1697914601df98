"""The delivery subgraph: `load_request → plan_delivery → execute_tasks (once per task)
→ review_quality, review_risk, review_boundary (in parallel) → synthesize_report`.

A thin request, a planner that cannot act or a failed stage ends the run early. Each
task is a step keyed by its number, so a crashed run resumes at the first unfinished
task and finished tasks and reviewers are never run again. What the stages produce stays
in the run thread: only the report text and status leave (`WorkflowOutput`). The
conversation's summary and pins are read by the run itself (`Background`), kept in an
untracked channel the reviewers read (not a `Send`), never checkpointed.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel

from graphs.delivery import prompts as texts
from graphs.delivery.schemas import DeliveryPlan, DeliveryReport, DeliveryTaskResult, ReviewVerdict
from graphs.delivery.stages import (
    REVIEWERS,
    as_json,
    blocked_for_missing,
    blocks,
    context_block,
    progress,
    render_report,
    request_words,
    stage,
)
from graphs.delivery.state import DeliveryState, PlanRecord, ReviewAssignment, TaskArtifact, Verdict
from graphs.routing import STOP
from graphs.state import WORKFLOW_MAX_TOKENS, Background, WorkflowInput, WorkflowOutput, turn_ids
from graphs.structured import StructuredPolicy, as_policy
from graphs.tool import ToolOutput, ToolState, build_tool_graph
from memory.text import clamp

logger = logging.getLogger(__name__)

DEFAULT_MAX_TASKS = 5
DEFAULT_STAGE_TIMEOUT = 120.0
MIN_REQUEST_WORDS = 3
"""A request of fewer words (a CJK character counts as one) is too thin to act on."""
EARLIER_RESULT_CHARS = 1500
"""Each earlier task result shown to a later task's sub-agent is cut to this length."""

TaskAgent = CompiledStateGraph[ToolState, None, ToolState, ToolOutput]
"""A task's sub-agent: the tool subgraph, compiled without a checkpointer."""

NOSTREAM: RunnableConfig = {"tags": [TAG_NOSTREAM]}
"""Stage model calls are runtime work, never answer tokens in the `messages` stream."""

M = TypeVar("M", bound=BaseModel)

NO_CHECKPOINTER_WARNING = "`durability` has no effect when no checkpointer"
"""LangGraph's warning when a run without a checkpointer is given a durability."""

# -- routers ----------------------------------------------------------------------------


async def route_after_load(state: DeliveryState) -> Literal["plan_delivery", "__end__"]:
    """A thin request or a failure ends the run; else plan."""
    return STOP if state.get("workflow_status") else "plan_delivery"


async def route_after_plan(state: DeliveryState) -> Literal["execute_tasks", "__end__"]:
    """A planner that cannot act, or a failure, ends the run; else run the tasks."""
    return STOP if state.get("workflow_status") else "execute_tasks"


REVIEW_NODES = tuple(f"review_{name}" for name in REVIEWERS)
"""The reviewers' nodes, one per reviewer (run in parallel, each recovered on its own)."""


async def route_after_task(state: DeliveryState) -> list[str] | Literal["execute_tasks", "__end__"]:
    """The next task while any remain, then the reviewers in parallel; a failed task ends it."""
    if state.get("workflow_status"):
        return STOP
    if len(state.get("artifacts", [])) < len(state["plan"]["tasks"]):
        return "execute_tasks"
    return list(REVIEW_NODES)


# -- the nodes --------------------------------------------------------------------------


async def work_with_tools(sub_agent: TaskAgent, work: str) -> list[AnyMessage]:
    """A task sub-agent's tool loop on `work`: its transcript after the system prompt."""
    system, human = SystemMessage(texts.TASK_AGENT_PROMPT), HumanMessage(work)
    # The sub-agent keeps no checkpoints of its own (its task is the unit of recovery).
    # LangGraph 1.2 fails a checkpointer-less run with the `sync` durability it inherits
    # from the turn, so it is told `exit`; LangGraph then warns that a durability has no
    # effect without a checkpointer, which is the point here: that one warning is
    # dropped, around this call only.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NO_CHECKPOINTER_WARNING, category=UserWarning)
        worked = await sub_agent.ainvoke(
            {"turn_messages": [system, human]}, NOSTREAM, durability="exit"
        )
    return list(worked["turn_messages"][1:])  # the system prompt is passed again


class DeliverySteps:
    """The delivery's nodes, bound to one model, the task sub-agent and the run's limits;
    each is a stage: a failure or a timeout ends the run `failed` with a clear text."""

    def __init__(
        self,
        model: BaseChatModel,
        *,
        tools: Sequence[BaseTool],
        max_tasks: int,
        stage_timeout: float,
        method: StructuredPolicy | str | None,
        background: Background | None = None,
    ) -> None:
        if max_tasks < 1 or stage_timeout <= 0:
            raise ValueError("max_tasks and stage_timeout must be positive")
        self.model = model
        self.background = background
        self.max_tasks = max_tasks
        self.stage_timeout = stage_timeout
        self.structured = as_policy(method)
        self.sub_agent: TaskAgent | None = None
        if tools:
            tool_graph = build_tool_graph(model=model, tools=tools)
            self.sub_agent = tool_graph.compile(checkpointer=False, name="task_agent")

    async def context(self, state: DeliveryState) -> str:
        """The summary and pins as a prompt block: as `load_request` read them, or again
        after a crash (they are never checkpointed)."""
        if state.get("context"):
            return state["context"]
        summary, pins = "", list[str]()
        if self.background is not None:
            summary, pins = await asyncio.to_thread(self.background, *turn_ids())
        return context_block(summary, pins)

    async def ask(self, schema: type[M], system: str, human: str, *history: AnyMessage) -> M:
        """One structured call, bounded by the stage timeout, never streamed as tokens."""
        bound = self.structured.bind(self.model, schema, max_tokens=WORKFLOW_MAX_TOKENS)
        messages = [SystemMessage(system), *history, HumanMessage(human)]
        runnable = bound.with_config(NOSTREAM)
        return await asyncio.wait_for(runnable.ainvoke(messages), self.stage_timeout)

    @stage()
    async def load_request(self, state: DeliveryState) -> dict[str, Any]:
        """Read the request with the summary and pins as context; block a thin request."""
        request = state.get("user_text", "").strip()
        words = request_words(request)
        if words < MIN_REQUEST_WORDS:
            progress("load_request", "blocked", words=words)
            return blocked_for_missing([texts.MISSING_DELIVERABLE.format(words=MIN_REQUEST_WORDS)])
        progress("load_request", "succeeded", words=words)
        return {"user_text": request, "context": await self.context(state)}

    @stage()
    async def plan_delivery(self, state: DeliveryState) -> dict[str, Any]:
        """Plan deliverables, tasks (at most `max_tasks`) and risks."""
        plan = await self.ask(
            DeliveryPlan,
            texts.PLANNER_PROMPT.format(max_tasks=self.max_tasks),
            texts.PLAN_INPUT.format(request=state["user_text"], context=await self.context(state)),
        )
        if not plan.tasks:
            progress("plan_delivery", "blocked", tasks=0)
            return blocked_for_missing(
                plan.missing_information
                or [texts.MISSING_DELIVERABLE.format(words=MIN_REQUEST_WORDS)]
            )
        record = PlanRecord(
            deliverables=plan.deliverables,
            tasks=[task.model_dump() for task in plan.tasks[: self.max_tasks]],
            risks=[*plan.risks, *plan.missing_information],
            dropped_tasks=max(0, len(plan.tasks) - self.max_tasks),
        )
        # tasks are the work, deliverables what the report hands over: both are counted
        progress(
            "plan_delivery",
            "succeeded",
            tasks=len(record["tasks"]),
            deliverables=len(record["deliverables"]),
        )
        return {"plan": record}

    async def run_task(
        self, state: DeliveryState, number: int, earlier: Sequence[TaskArtifact]
    ) -> TaskArtifact:
        """A sub-agent for task `number`: the tool loop does the work, then reports it."""
        task = state["plan"]["tasks"][number - 1]
        work = texts.TASK_INPUT.format(
            request=state["user_text"],
            context=await self.context(state),
            number=number,
            total=len(state["plan"]["tasks"]),
            title=task["title"],
            description=task["description"],
            earlier=as_json(
                [{**a, "outcome": clamp(a["outcome"], EARLIER_RESULT_CHARS)} for a in earlier]
            ),
        )
        if self.sub_agent is None:
            result = await self.ask(DeliveryTaskResult, texts.TASK_AGENT_PROMPT, work)
        else:
            transcript = await work_with_tools(self.sub_agent, work)
            report_prompt = texts.TASK_RESULT_PROMPT.format(number=number)
            result = await self.ask(
                DeliveryTaskResult, texts.TASK_AGENT_PROMPT, report_prompt, *transcript
            )
        return TaskArtifact(
            number=number,
            title=task["title"],
            outcome=result.outcome,
            done=result.done,
            open_issues=result.open_issues,
        )

    @stage(starts=lambda state: not state.get("artifacts"))
    async def execute_tasks(self, state: DeliveryState) -> dict[str, Any]:
        """Run the sub-agent of the first task without a result (tasks are keyed by their
        number); each result is kept as a runtime artifact."""
        total = len(state["plan"]["tasks"])
        artifacts = list(state.get("artifacts", []))
        number = len(artifacts) + 1
        progress("execute_tasks", "task_started", task=number, tasks=total)
        work = self.run_task(state, number, artifacts)
        artifacts.append(await asyncio.wait_for(work, self.stage_timeout))
        if number == total:
            done = sum(1 for artifact in artifacts if artifact["done"])
            progress("execute_tasks", "succeeded", tasks=total, done=done)
        return {"artifacts": artifacts}

    def reviewer(self, name: str) -> Any:
        """The node of the reviewer `name`."""

        async def review(state: DeliveryState) -> dict[str, Any]:
            return await self.review_delivery(ReviewAssignment(**state, reviewer=name))

        return review

    @stage(parallel=True)
    async def review_delivery(self, state: ReviewAssignment) -> dict[str, Any]:
        """One reviewer of the group: a structured verdict on the plan and the results."""
        name = state["reviewer"]
        verdict = await self.ask(
            ReviewVerdict,
            REVIEWERS[name][1],
            texts.REVIEW_INPUT.format(
                reviewer=name,
                request=state["user_text"],
                context=await self.context(state),
                plan=as_json(state["plan"]),
                results=as_json(state["artifacts"]),
            ),
        )
        record = Verdict(
            reviewer=name,
            verdict=verdict.verdict,
            blocking_issues=verdict.blocking_issues,
            notes=verdict.notes,
        )
        progress("review_delivery", "succeeded", reviewer=name, passed=not blocks(record))
        return {"verdicts": [record]}

    @stage()
    async def synthesize_report(self, state: DeliveryState) -> dict[str, Any]:
        """Write the report: `blocked` when a reviewer found a blocking issue."""
        if state.get("failures"):  # a reviewer failed, so the run fails as a whole
            progress("synthesize_report", "failed")
            return {"workflow_status": "failed", "workflow_text": state["failures"][0]}
        order = list(REVIEWERS)
        verdicts = sorted(state.get("verdicts", []), key=lambda v: order.index(v["reviewer"]))
        status = "blocked" if any(blocks(v) for v in verdicts) else "completed"
        report = await self.ask(
            DeliveryReport,
            texts.REPORT_PROMPT,
            texts.REPORT_INPUT.format(
                request=state["user_text"],
                plan=as_json(state["plan"]),
                results=as_json(state["artifacts"]),
                reviews=as_json(verdicts),
                status=status,
            ),
        )
        text = render_report(report, state["plan"], verdicts, status, self.max_tasks)
        progress("synthesize_report", status, chars=len(text))
        return {"workflow_status": status, "workflow_text": text}


# -- the graph --------------------------------------------------------------------------


def build_delivery_graph(
    *,
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    max_tasks: int = DEFAULT_MAX_TASKS,
    stage_timeout: float = DEFAULT_STAGE_TIMEOUT,
    structured_output_method: StructuredPolicy | str | None = None,
    background: Background | None = None,
) -> StateGraph[DeliveryState, None, WorkflowInput, WorkflowOutput]:
    """Assemble the delivery subgraph.

    Args:
        tools: the task sub-agents' tools (the tool subgraph); none: one call per task.
        max_tasks: tasks planned beyond this many are dropped (and named in the report).
        stage_timeout: seconds each stage (the plan, a task, a reviewer, the report) may take.
        background: reads the conversation's summary and pins (None: none).
    """
    steps = DeliverySteps(
        model,
        tools=tools,
        max_tasks=max_tasks,
        stage_timeout=stage_timeout,
        method=structured_output_method,
        background=background,
    )
    builder = StateGraph(DeliveryState, input_schema=WorkflowInput, output_schema=WorkflowOutput)
    builder.add_node(steps.load_request)
    builder.add_node(steps.plan_delivery)
    builder.add_node(steps.execute_tasks)
    for name, node in zip(REVIEWERS, REVIEW_NODES, strict=True):
        builder.add_node(node, steps.reviewer(name))
    builder.add_node(steps.synthesize_report)
    builder.add_edge(START, "load_request")
    builder.add_conditional_edges("load_request", route_after_load)
    builder.add_conditional_edges("plan_delivery", route_after_plan)
    builder.add_conditional_edges(
        "execute_tasks", route_after_task, ["execute_tasks", *REVIEW_NODES, END]
    )
    builder.add_edge(list(REVIEW_NODES), "synthesize_report")
    builder.add_edge("synthesize_report", END)
    return builder
