"""Shared by the delivery tests: a model scripted per stage, the agent graph, ChatAgents."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field, PrivateAttr

from agent.offline.local import LocalChatModel, ModelCall
from graphs.agent import build_agent_graph
from graphs.delivery import (
    DeliveryPlan,
    DeliveryReport,
    DeliveryTaskResult,
    PlannedDeliveryTask,
    ReviewVerdict,
    build_delivery_graph,
)
from memory.conversations import ConversationMemory
from tests.graph_support import run_graph

SCHEMAS: dict[str, type[BaseModel]] = {
    s.__name__: s for s in (DeliveryPlan, DeliveryTaskResult, ReviewVerdict, DeliveryReport)
}
ARTIFACT = "ARTIFACT-TEXT-7f3a"
NOTE = "REVIEWER-NOTE-91c2"
REPORT_SUMMARY = "Delivered the migration plan and the rollback script."
REQUEST = "write a migration plan and a rollback script for the orders table"
STAGES = ["load_request", "plan_delivery", "execute_tasks", "review_delivery", "synthesize_report"]


def plan(tasks: int = 2) -> DeliveryPlan:
    return DeliveryPlan(
        deliverables=["migration plan", "rollback script"],
        tasks=[
            PlannedDeliveryTask(title=f"task {n}", description=f"do part {n}") for n in range(tasks)
        ],
        risks=["locking the orders table"],
    )


def verdict(blocking: Sequence[str] = ()) -> ReviewVerdict:
    return ReviewVerdict(
        verdict="fail" if blocking else "pass", blocking_issues=list(blocking), notes=[NOTE]
    )


def default_answers() -> dict[str, Any]:
    return {
        "DeliveryPlan": plan(),
        "DeliveryTaskResult": DeliveryTaskResult(outcome=f"{ARTIFACT} migration steps", done=True),
        "ReviewVerdict": verdict(),
        "DeliveryReport": DeliveryReport(
            summary=REPORT_SUMMARY, deliverables=["migration plan: done"], open_risks=["locks"]
        ),
    }


class StageModel(LocalChatModel):
    """Answers each delivery stage by its structured-output schema and records every call.

    `answers` maps a schema name to an instance, an exception, or a callable of the
    stage input; plain calls (chat, sub-agent work) take `replies` in order, then echo.
    `pauses` delays the calls of a kind (a schema name or "plain") by some seconds.
    Reviewer calls wait (up to 2 s) until three are in flight and record the most seen
    at once: sequential reviewers leave `max_in_flight` at 1.
    """

    record: bool = True
    answers: dict[str, Any] = Field(default_factory=default_answers)
    replies: list[Any] = Field(default_factory=list)
    pauses: dict[str, float] = Field(default_factory=dict)
    max_in_flight: int = 0
    _in_flight: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "stage-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    @staticmethod
    def kind(call: ModelCall) -> str:
        """The schema a structured call answers with (by name), or "plain"."""
        names = [tool["function"]["name"] for tool in call.options.get("tools") or []]
        structured = call.options.get("tool_choice") == "any" and len(names) == 1
        return names[0] if structured and names[0] in SCHEMAS else "plain"

    def delay(self, call: ModelCall) -> float:
        return self.pauses.get(self.kind(call), 0.0)

    def respond(self, call: ModelCall) -> AIMessage:
        kind, messages = self.kind(call), call.messages
        if kind == "plain":
            reply = self.replies.pop(0) if self.replies else f"echo: {messages[-1].text[:40]}"
            return reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        answer = self.answers[kind]
        text = "\n".join(m.text for m in messages if isinstance(m, HumanMessage))
        if isinstance(answer, Exception):
            raise answer
        if callable(answer) and not isinstance(answer, BaseModel):
            answer = answer(text)
        tool_call = {"name": kind, "args": answer.model_dump(), "id": f"call_{len(self.received)}"}
        return AIMessage(content="", tool_calls=[tool_call])

    async def arespond(self, call: ModelCall) -> AIMessage:
        if self.kind(call) == "ReviewVerdict":
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            try:
                for _ in range(200):
                    if self.max_in_flight >= 3:
                        break
                    await asyncio.sleep(0.01)
            finally:
                self._in_flight -= 1
        return self.respond(call)

    def seen(self, kind: str) -> list[list[BaseMessage]]:
        return [call.messages for call in self.received if self.kind(call) == kind]


Graph = CompiledStateGraph[Any, Any, Any, Any]


def compile_agent(
    memory: ConversationMemory, model: BaseChatModel, *, tools: Sequence[Any] = (), **kwargs: Any
) -> Graph:
    delivery = build_delivery_graph(model=model, tools=tools, **kwargs).compile(name="delivery")
    return build_agent_graph(model=model, memory=memory, workflows={"delivery": delivery}).compile(
        checkpointer=InMemorySaver()
    )


def run(graph: Graph, message: str, mode: str = "auto") -> tuple[dict[str, Any], list[Any]]:
    return run_graph(graph, {"message": message}, mode=mode)


def stored(memory: ConversationMemory) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in memory.read_memory("s1", "c1").messages]


def progress(events: list[Any]) -> list[tuple[str, str]]:
    return [(e["stage"], e["status"]) for e in events if e.get("event") == "progress"]
