"""The delivery subgraph: stages, the parallel review group, the memory boundary, failures."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field, PrivateAttr

from agent import ChatAgent, InvalidRequest
from agent.offline import OfflineChatModel
from agent.offline_delivery import BLOCKING_MARKERS, offline_plan, offline_verdict, tagged
from agent.settings import Settings
from agent.tools import BUILTIN_TOOLS
from graphs.agent import build_agent_graph
from graphs.delivery import build_delivery_graph
from graphs.delivery_prompts import (
    DeliveryPlan,
    DeliveryReport,
    PlannedTask,
    ReviewVerdict,
    TaskResult,
)
from graphs.state import Context
from graphs.turn_input import InvalidTurnInput
from memory import ConversationMemory, assert_client_safe
from memory.storage import iter_thread_ids
from tests.conftest import SECRET
from tests.fakes import ScriptedModel

SCHEMAS: dict[str, type[BaseModel]] = {
    s.__name__: s for s in (DeliveryPlan, TaskResult, ReviewVerdict, DeliveryReport)
}
ARTIFACT = "ARTIFACT-TEXT-7f3a"
NOTE = "REVIEWER-NOTE-91c2"
REPORT_SUMMARY = "Delivered the migration plan and the rollback script."
REQUEST = "write a migration plan and a rollback script for the orders table"
STAGES = ["load_request", "plan_delivery", "execute_tasks", "review_delivery", "synthesize_report"]


def plan(tasks: int = 2) -> DeliveryPlan:
    return DeliveryPlan(
        deliverables=["migration plan", "rollback script"],
        tasks=[PlannedTask(title=f"task {n}", description=f"do part {n}") for n in range(tasks)],
        risks=["locking the orders table"],
    )


def verdict(blocking: Sequence[str] = ()) -> ReviewVerdict:
    return ReviewVerdict(
        verdict="fail" if blocking else "pass", blocking_issues=list(blocking), notes=[NOTE]
    )


def default_answers() -> dict[str, Any]:
    return {
        "DeliveryPlan": plan(),
        "TaskResult": TaskResult(outcome=f"{ARTIFACT} migration steps", done=True),
        "ReviewVerdict": verdict(),
        "DeliveryReport": DeliveryReport(
            summary=REPORT_SUMMARY, deliverables=["migration plan: done"], open_risks=["locks"]
        ),
    }


class StageModel(BaseChatModel):
    """Answers each delivery stage by its structured-output schema and records every call.

    `answers` maps a schema name to an instance, an exception, or a callable of the
    stage input; plain calls (chat, sub-agent work) take `replies` in order, then echo.
    Reviewer calls wait (up to 2 s) until three are in flight and record the most seen
    at once: sequential reviewers leave `max_in_flight` at 1.
    """

    answers: dict[str, Any] = Field(default_factory=default_answers)
    replies: list[Any] = Field(default_factory=list)
    pauses: dict[str, float] = Field(default_factory=dict)
    calls: list[tuple[str, list[BaseMessage]]] = Field(default_factory=list)
    max_in_flight: int = 0
    _in_flight: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "stage-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _kind(self, kwargs: dict[str, Any]) -> str:
        names = [tool["function"]["name"] for tool in kwargs.get("tools") or []]
        structured = kwargs.get("tool_choice") == "any" and len(names) == 1
        return names[0] if structured and names[0] in SCHEMAS else "plain"

    def _answer(self, kind: str, messages: list[BaseMessage]) -> AIMessage:
        self.calls.append((kind, list(messages)))
        if kind == "plain":
            reply = self.replies.pop(0) if self.replies else f"echo: {messages[-1].text[:40]}"
            return reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        answer = self.answers[kind]
        text = "\n".join(m.text for m in messages if isinstance(m, HumanMessage))
        if isinstance(answer, Exception):
            raise answer
        if callable(answer) and not isinstance(answer, BaseModel):
            answer = answer(text)
        call = {"name": kind, "args": answer.model_dump(), "id": f"call_{len(self.calls)}"}
        return AIMessage(content="", tool_calls=[call])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer("plain", messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        kind = self._kind(kwargs)
        await asyncio.sleep(self.pauses.get(kind, 0))
        if kind == "ReviewVerdict":
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            try:
                for _ in range(200):
                    if self.max_in_flight >= 3:
                        break
                    await asyncio.sleep(0.01)
            finally:
                self._in_flight -= 1
        return ChatResult(generations=[ChatGeneration(message=self._answer(kind, messages))])

    def seen(self, kind: str) -> list[list[BaseMessage]]:
        return [messages for called, messages in self.calls if called == kind]


Graph = CompiledStateGraph[Any, Any, Any, Any]


def compile_agent(
    memory: ConversationMemory, model: BaseChatModel, *, tools: Sequence[Any] = (), **kwargs: Any
) -> Graph:
    delivery = build_delivery_graph(model=model, tools=tools, **kwargs).compile(name="delivery")
    return build_agent_graph(model=model, memory=memory, workflows={"delivery": delivery}).compile(
        checkpointer=InMemorySaver()
    )


def run(graph: Graph, message: str, mode: str = "auto") -> tuple[dict[str, Any], list[Any]]:
    async def go() -> tuple[dict[str, Any], list[Any]]:
        config: RunnableConfig = {"configurable": {"thread_id": "run-c1"}}
        context = Context(session_id="s1", conversation_id="c1", mode=cast(Any, mode))
        final: dict[str, Any] = {}
        events: list[Any] = []
        async for namespace, kind, chunk in graph.astream(
            {"message": message},
            config,
            context=context,
            stream_mode=["custom", "values"],
            subgraphs=True,
        ):
            if kind == "custom":
                events.append(chunk)
            elif not namespace:
                final = cast(dict[str, Any], chunk)
        return final, events

    return asyncio.run(go())


def stored(memory: ConversationMemory) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in memory.load("s1", "c1").messages]


def progress(events: list[Any]) -> list[tuple[str, str]]:
    return [(e["stage"], e["status"]) for e in events if e.get("event") == "progress"]


def test_topology() -> None:
    drawn = build_delivery_graph(model=ScriptedModel(), tools=[]).compile().get_graph()
    assert set(drawn.nodes) == {"__start__", *STAGES, "__end__"}
    assert {(e.source, e.target, e.conditional) for e in drawn.edges} == {
        ("__start__", "load_request", False),
        ("load_request", "plan_delivery", True),
        ("load_request", "__end__", True),
        ("plan_delivery", "execute_tasks", True),
        ("plan_delivery", "__end__", True),
        ("execute_tasks", "review_delivery", True),
        ("execute_tasks", "__end__", True),
        ("review_delivery", "synthesize_report", False),
        ("synthesize_report", "__end__", False),
    }


def test_completed_run_writes_request_and_report_once(memory: ConversationMemory) -> None:
    model = StageModel()
    final, events = run(compile_agent(memory, model), f"/delivery {REQUEST}")
    assert (final["route"], final["status"], final["memory_written"]) == (
        "delivery",
        "completed",
        True,
    )
    report = final["answer"]
    assert report.startswith("# Delivery report") and REPORT_SUMMARY in report
    for heading in ("## Summary", "## Deliverables", "## Review findings", "## Open risks"):
        assert heading in report
    assert stored(memory) == [("user", REQUEST), ("assistant", report)]
    assert [len(model.seen(kind)) for kind in SCHEMAS] == [1, 2, 3, 1]
    assert [p for p in progress(events) if p[1] != "task_started"] == [
        ("load_request", "started"),
        ("load_request", "succeeded"),
        ("plan_delivery", "started"),
        ("plan_delivery", "succeeded"),
        ("execute_tasks", "started"),
        ("execute_tasks", "succeeded"),
        *[("review_delivery", "started")] * 3,
        *[("review_delivery", "succeeded")] * 3,
        ("synthesize_report", "started"),
        ("synthesize_report", "completed"),
    ]
    writes = [e["status"] for e in events if e.get("event") == "memory"]
    assert writes == ["started", "succeeded"]


def test_a_blocking_issue_blocks_the_run_and_writes_once(memory: ConversationMemory) -> None:
    def by_reviewer(text: str) -> ReviewVerdict:
        return verdict(["drops the orders table"] if tagged(text, "reviewer") == "risk" else [])

    model = StageModel(answers={**default_answers(), "ReviewVerdict": by_reviewer})
    final, _ = run(compile_agent(memory, model), REQUEST, mode="delivery")
    assert (final["status"], final["memory_written"]) == ("blocked", True)
    assert "**Risk review:** blocking: drops the orders table" in final["answer"]
    assert "**Quality review:** passed." in final["answer"]
    assert stored(memory) == [("user", REQUEST), ("assistant", final["answer"])]
    report_input = model.seen("DeliveryReport")[0][-1].text
    assert tagged(report_input, "status") == "blocked"


def test_a_thin_request_is_blocked_with_what_is_missing(memory: ConversationMemory) -> None:
    model = ScriptedModel()  # any model call would fail: nothing is scripted
    final, events = run(compile_agent(memory, model), "/delivery fix it")
    assert (final["status"], final["memory_written"]) == ("blocked", True)
    assert "## What is missing" in final["answer"] and "at least 3 words" in final["answer"]
    assert stored(memory) == [("user", "fix it"), ("assistant", final["answer"])]
    assert model.calls == model.structured_calls == []
    assert progress(events) == [("load_request", "started"), ("load_request", "blocked")]


def test_a_planner_that_cannot_act_blocks_with_its_questions(memory: ConversationMemory) -> None:
    missing = DeliveryPlan(deliverables=[], tasks=[], missing_information=["which database?"])
    model = ScriptedModel(structured=[missing])
    final, _ = run(compile_agent(memory, model), f"/delivery {REQUEST}")
    assert final["status"] == "blocked" and "- which database?" in final["answer"]
    assert len(stored(memory)) == 2


def test_a_long_report_is_cut_in_memory_but_delivered_whole(memory: ConversationMemory) -> None:
    long_summary = "".join(f"line {n:05d} of a very long delivery summary.\n" for n in range(500))
    answers = default_answers()
    answers["DeliveryReport"] = DeliveryReport(summary=long_summary, deliverables=["x"])
    final, _ = run(compile_agent(memory, StageModel(answers=answers)), f"/delivery {REQUEST}")
    report = final["answer"]
    assert len(report) > 20_000 and long_summary.strip() in report  # the user gets it all
    kept = stored(memory)[1][1]
    assert len(kept) <= 8_000
    head, marker = kept.rsplit("\n", 1)
    assert marker.startswith("[Report truncated:") and report.startswith(head)
    assert len(head) > 7_500


@pytest.mark.parametrize(
    ("kind", "reviewer"),
    [
        ("DeliveryPlan", None),
        ("TaskResult", None),
        ("ReviewVerdict", "risk"),
        ("DeliveryReport", None),
    ],
)
def test_a_failing_stage_writes_nothing(
    memory: ConversationMemory, kind: str, reviewer: str | None
) -> None:
    boom = RuntimeError("provider exploded at /secret/path")

    def fail_one(text: str) -> ReviewVerdict:
        if tagged(text, "reviewer") == reviewer:
            raise boom
        return verdict()

    answers = {**default_answers(), kind: fail_one if reviewer else boom}
    final, events = run(compile_agent(memory, StageModel(answers=answers)), f"/delivery {REQUEST}")
    assert (final["status"], final["memory_written"]) == ("failed", False)
    assert final["answer"].startswith("The delivery could not finish")
    assert "Nothing was saved" in final["answer"] and "/secret/path" not in str(final)
    assert stored(memory) == []
    assert any(status == "failed" for _, status in progress(events))


def test_a_stage_timeout_fails_the_run(memory: ConversationMemory) -> None:
    model = StageModel(pauses={"DeliveryPlan": 5.0})
    final, _ = run(compile_agent(memory, model, stage_timeout=0.05), f"/delivery {REQUEST}")
    assert final["status"] == "failed" and "took longer than 0.05 seconds" in final["answer"]
    assert stored(memory) == [] and model.seen("TaskResult") == []


def test_reviewers_run_in_parallel(memory: ConversationMemory) -> None:
    model = StageModel()
    final, _ = run(compile_agent(memory, model), f"/delivery {REQUEST}")
    assert final["status"] == "completed"
    reviewers = {tagged(m[-1].text, "reviewer") for m in model.seen("ReviewVerdict")}
    assert reviewers == {"quality", "risk", "boundary"}
    assert model.max_in_flight == 3


def test_tasks_are_capped_at_max_tasks(memory: ConversationMemory) -> None:
    model = StageModel(answers={**default_answers(), "DeliveryPlan": plan(tasks=7)})
    final, _ = run(compile_agent(memory, model, max_tasks=2), f"/delivery {REQUEST}")
    assert len(model.seen("TaskResult")) == 2
    assert "5 planned task(s) beyond the limit of 2 were not run" in final["answer"]


def test_task_sub_agents_use_tools_and_see_earlier_results(memory: ConversationMemory) -> None:
    call = AIMessage(
        content="", tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}, "id": "t1"}]
    )
    model = StageModel(replies=[call, "it is 42", "second task done"])
    graph = compile_agent(memory, model, tools=BUILTIN_TOOLS)
    final, _ = run(graph, f"/delivery {REQUEST}")
    assert final["status"] == "completed"
    first, second = model.seen("TaskResult")
    assert any(isinstance(m, ToolMessage) and m.text == "42" for m in first)
    assert ARTIFACT in tagged(second[1].text, "earlier_results")
    assert "42" not in str(stored(memory))  # tool results stay in the run thread


def test_runtime_state_never_reaches_memory_and_the_next_turn_sees_the_report(
    memory: ConversationMemory,
) -> None:
    model = StageModel(replies=["a chat answer"])
    graph = compile_agent(memory, model)
    delivered, _ = run(graph, f"/delivery {REQUEST}")
    final, _ = run(graph, "what did the delivery produce?", mode="chat")
    assert_client_safe(final["hydration"])
    hydration = str(final["hydration"])
    for runtime_text in (ARTIFACT, NOTE, "execute_tasks", "review_delivery", "verdict"):
        assert runtime_text not in hydration
    chat_input = model.seen("plain")[-1]
    assert [m.text for m in chat_input[-3:]] == [
        REQUEST,
        delivered["answer"],
        "what did the delivery produce?",
    ]
    assert not any(ARTIFACT in m.text or NOTE in m.text for m in chat_input)


# -- through ChatAgent ------------------------------------------------------------------


@pytest.fixture
def make_agent(tmp_path: Path) -> Iterator[Callable[[BaseChatModel], ChatAgent]]:
    agents: list[ChatAgent] = []

    def make(model: BaseChatModel) -> ChatAgent:
        agents.append(
            ChatAgent(
                database_url=f"sqlite:///{tmp_path / f'agent{len(agents)}.sqlite'}",
                model=model,
                secret=SECRET,
                settings=Settings(data_dir=tmp_path),
            )
        )
        return agents[-1]

    yield make
    for chat_agent in agents:
        chat_agent.close()


def texts(agent: ChatAgent, cid: str) -> list[str]:
    return [m["text"] for m in agent.hydrate(session_id="s1", conversation_id=cid)["messages"]]


def test_chat_agent_writes_a_completed_delivery_once(make_agent: Any) -> None:
    agent = make_agent(StageModel())
    result = agent.send(f"/delivery {REQUEST}", session_id="s1", create_conversation=True)
    assert (result.route, result.status, result.memory_written) == ("delivery", "completed", True)
    hydration = agent.hydrate(session_id="s1", conversation_id=result.conversation_id)
    assert_client_safe(hydration)
    assert [m["text"] for m in hydration["messages"]] == [REQUEST, result.text]


def test_closing_the_stream_mid_delivery_cancels_it_and_writes_nothing(make_agent: Any) -> None:
    model = StageModel(pauses={"TaskResult": 1.0})
    agent = make_agent(model)
    cid = agent.send("hello", session_id="s1", create_conversation=True).conversation_id

    async def scenario() -> None:
        stream = agent.astream(f"/delivery {REQUEST}", session_id="s1", conversation_id=cid)
        async for event in stream:
            if event.get("stage") == "execute_tasks" and event.get("status") == "task_started":
                break
        await stream.aclose()
        await asyncio.sleep(3)  # longer than the whole delivery would have taken

    asyncio.run(scenario())
    assert texts(agent, cid) == ["hello", "echo: hello"]
    assert model.seen("ReviewVerdict") == model.seen("DeliveryReport") == []
    assert agent.send("next", session_id="s1", conversation_id=cid).status == "completed"


@pytest.mark.parametrize(
    ("message", "mode", "error"),
    [
        ("/delivery   ", "auto", "needs a request"),
        ("/delivery", "auto", "needs a request"),
        ("   ", "delivery", "must not be empty"),
        ("x" * 16_001, "delivery", "too long"),
        ("/delivery " + "x" * 16_000, "auto", "too long"),
    ],
)
def test_bad_delivery_input_is_a_clear_error_and_writes_nothing(
    make_agent: Any, memory: ConversationMemory, message: str, mode: str, error: str
) -> None:
    model = StageModel()
    agent = make_agent(model)
    with pytest.raises(InvalidRequest, match=error):
        agent.send(message, session_id="s1", create_conversation=True, mode=mode)
    threads = list(iter_thread_ids(agent.memory.threads))
    assert not [t for t in threads if t.startswith("chat-conversation:")]
    assert agent.conversations(session_id="s1")["conversations"] == []
    # the same input straight into the graph: nothing stored at all
    with pytest.raises(InvalidTurnInput, match=error):
        run(compile_agent(memory, model), message, mode=mode)
    assert list(iter_thread_ids(memory.threads)) == [] and model.calls == []


def test_an_empty_prefix_request_leaves_no_thread_behind(make_agent: Any) -> None:
    agent = make_agent(StageModel())
    with pytest.raises(InvalidRequest):
        agent.send("/delivery   ", session_id="s1", create_conversation=True)
    assert list(iter_thread_ids(agent.memory.threads)) == []


def test_offline_model_runs_the_chain_deterministically(make_agent: Any) -> None:
    agent = make_agent(OfflineChatModel())

    async def stream(message: str) -> list[dict[str, Any]]:
        return [e async for e in agent.astream(message, session_id="s1", create_conversation=True)]

    events = asyncio.run(stream(f"/delivery {REQUEST}; what is 6*7?"))
    result = events[-1]["result"]
    assert (result["status"], result["memoryWritten"]) == ("completed", True)
    assert "[offline model]" in result["text"] and "token" not in [e["event"] for e in events]
    stages = {e["stage"] for e in events if e.get("workflow") == "delivery"}
    assert stages == set(STAGES)
    again = agent.send(
        f"/delivery {REQUEST}; what is 6*7?", session_id="s1", create_conversation=True
    )
    assert again.text == result["text"]
    blocked = agent.send(
        "/delivery migrate the Production  Database with no tests",
        session_id="s1",
        create_conversation=True,
    )
    assert (blocked.status, blocked.memory_written) == ("blocked", True)
    assert "**Risk review:** blocking:" in blocked.text
    assert all(issue in blocked.text for issue in BLOCKING_MARKERS.values())
    stored_text = " ".join(texts(agent, blocked.conversation_id))
    assert "Offline work product" not in stored_text and "Offline risk note" not in stored_text


def test_offline_handlers_follow_their_rules() -> None:
    request = "<request>\nadd a column, backfill it; then drop the production database\n</request>"
    first, second = offline_plan([HumanMessage(request)]), offline_plan([HumanMessage(request)])
    assert first == second
    assert [t.title for t in first.tasks][:3] == [
        "Produce: add a column",
        "Produce: backfill it",
        "Produce: drop the production database",
    ]
    review = "<reviewer>{}</reviewer>\n" + request + "\n<results>\n[]\n</results>"
    risk = offline_verdict([HumanMessage(review.format("risk"))])
    assert risk.verdict == "fail" and risk.blocking_issues == [
        BLOCKING_MARKERS["production database"]
    ]
    assert offline_verdict([HumanMessage(review.format("boundary"))]).verdict == "pass"
