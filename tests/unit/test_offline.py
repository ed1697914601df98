"""The offline model: deterministic answers, tool calls, streaming, structured output."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel

from agent import offline
from agent.offline import OfflineChatModel, register_structured_handler
from agent.offline_compaction import EMPTY_SUMMARY, compaction_output, is_decision, is_retirement
from agent.offline_rules import OFFLINE_PREFIX
from agent.tools import BUILTIN_TOOLS, calculator, current_time
from memory.compaction import (
    CompactionOutput,
    CompactionStatus,
    acompact,
    compact,
    compaction_prompt,
    split_for_fold,
)
from memory.context import build_context
from memory.limits import MAX_PINNED_DECISION_CHARS, MAX_SUMMARY_CHARS
from memory.prompts import COMPACTION_INPUT, NONE_MARKER
from memory.schema import ChatThreadMessage, ThreadState

T0 = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture
def model() -> OfflineChatModel:
    return OfflineChatModel()


@pytest.fixture
def with_tools(model: OfflineChatModel) -> Any:
    return model.bind_tools(BUILTIN_TOOLS)


def _joined(chunks: Sequence[BaseMessage]) -> AIMessageChunk:
    total = AIMessageChunk(content="")
    for chunk in chunks:
        assert isinstance(chunk, AIMessageChunk)
        total = total + chunk
    return total


def _state(turns: Sequence[tuple[str, str]], summary: str = "", pins: Sequence[str] = ()) -> Any:
    messages = []
    for index, (user, assistant) in enumerate(turns):
        at = T0 + timedelta(minutes=index)
        messages.append(ChatThreadMessage(id=f"u{index}", role="user", text=user, created_at=at))
        messages.append(
            ChatThreadMessage(id=f"a{index}", role="assistant", text=assistant, created_at=at)
        )
    return ThreadState(messages=messages, summary=summary, pinned_decisions=list(pins))


def _compaction_input(state: ThreadState) -> list[BaseMessage]:
    fold, kept = split_for_fold(state.messages)
    return compaction_prompt(state, fold, kept)


# --- plain chat ---------------------------------------------------------------------


def test_identifies_itself(model: OfflineChatModel) -> None:
    assert model._llm_type == "offline-deterministic"
    answer = model.invoke("hello there")
    assert answer.text.startswith(OFFLINE_PREFIX)
    assert 'You said: "hello there"' in answer.text
    assert answer.tool_calls == []


def test_same_input_same_output(model: OfflineChatModel, with_tools: Any) -> None:
    prompt = [HumanMessage("what is 12*(3+4)?")]
    first, second = with_tools.invoke(prompt), with_tools.invoke(prompt)
    assert first.tool_calls == second.tool_calls
    assert model.invoke("hi").content == model.invoke("hi").content


def test_plain_answer_reports_what_the_memory_context_holds(model: OfflineChatModel) -> None:
    state = _state(
        [("My name is Ann.", "Hello Ann."), ("I like tea.", "Noted.")],
        summary="We planned a trip to Kyoto.",
        pins=["Always answer in English.", "We decided to use Postgres."],
    )
    context = build_context(state, "What do you remember?", system_prompt="Be brief.")
    lines = model.invoke(context).text.splitlines()
    assert lines[1] == 'You said: "What do you remember?"'
    pins = lines.index("Pinned decisions I keep to:")
    assert lines[pins + 1 : pins + 3] == [
        "1. Always answer in English.",
        "2. We decided to use Postgres.",
    ]
    assert "Summary of our earlier conversation: We planned a trip to Kyoto." in lines
    assert lines[-1] == 'I can see 4 earlier message(s); your previous message was: "I like tea."'


def test_plain_answer_without_memory_says_so(model: OfflineChatModel) -> None:
    lines = model.invoke(build_context(ThreadState(), "hi")).text.splitlines()
    assert lines[-1] == "I see no earlier messages in this conversation."
    assert not any(line.startswith(("Pinned", "Summary")) for line in lines)


def test_stop_sequence_cuts_the_answer(model: OfflineChatModel) -> None:
    assert model.invoke("hello", stop=[" No model"]).text == OFFLINE_PREFIX


# --- tool calls ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "expression"),
    [
        ("what is 12*(3+4)?", "12*(3+4)"),
        ("What's 7 x 6?", "7 x 6"),
        ("calculate 2^10", "2^10"),
        ("Please compute (1.5 + 2) / 7 for me", "(1.5 + 2) / 7"),
        ("计算 3+4", "3+4"),
        ("3+4等于多少", "3+4"),
        ("12 * 7 =", "12 * 7"),
    ],
)
def test_arithmetic_request_calls_the_calculator(
    with_tools: Any, prompt: str, expression: str
) -> None:
    answer = with_tools.invoke([HumanMessage(prompt)])
    assert [(call["name"], call["args"]) for call in answer.tool_calls] == [
        ("calculator", {"expression": expression})
    ]
    assert answer.tool_calls[0]["id"].startswith("call_")
    assert answer.content == ""


@pytest.mark.parametrize(
    "prompt", ["what time is it?", "Current time please", "today's date?", "现在几点", "现在时间"]
)
def test_time_request_calls_current_time(with_tools: Any, prompt: str) -> None:
    answer = with_tools.invoke([HumanMessage(prompt)])
    assert [(call["name"], call["args"]) for call in answer.tool_calls] == [("current_time", {})]


def test_time_request_passes_a_named_iana_zone(with_tools: Any) -> None:
    answer = with_tools.invoke([HumanMessage("What time is it in Asia/Tokyo?")])
    assert answer.tool_calls[0]["args"] == {"timezone": "Asia/Tokyo"}


def test_two_requests_get_two_calls_with_distinct_ids(with_tools: Any) -> None:
    answer = with_tools.invoke([HumanMessage("what is 2+2 and what time is it?")])
    assert [call["name"] for call in answer.tool_calls] == ["calculator", "current_time"]
    assert len({call["id"] for call in answer.tool_calls}) == 2


@pytest.mark.parametrize(
    "prompt",
    [
        "hello",
        "What is the plan for 2024?",
        "what is 2024-05-01 about?",
        "What time is the meeting?",
        "Call me at 555-1234",
        "what is 15% of 80?",
    ],
)
def test_no_tool_call_when_nothing_asks_for_one(with_tools: Any, prompt: str) -> None:
    answer = with_tools.invoke([HumanMessage(prompt)])
    assert answer.tool_calls == []
    assert answer.text.startswith(OFFLINE_PREFIX)


@pytest.mark.parametrize(
    ("tools", "prompt"),
    [
        ([], "what is 2+2?"),
        ([current_time], "what is 2+2?"),
        ([calculator], "what time is it?"),
    ],
)
def test_never_calls_a_tool_that_is_not_bound(
    model: OfflineChatModel, tools: list[Any], prompt: str
) -> None:
    runnable = model.bind_tools(tools) if tools else model
    assert runnable.invoke([HumanMessage(prompt)]).tool_calls == []


def test_tool_choice_none_disables_calls(model: OfflineChatModel) -> None:
    answer = model.bind_tools(BUILTIN_TOOLS, tool_choice="none").invoke("what is 2+2?")
    assert answer.tool_calls == []


def test_only_the_latest_user_message_can_ask(with_tools: Any) -> None:
    history = [
        HumanMessage("what is 2+2?"),
        AIMessage("[offline model] 2+2 = 4."),
        HumanMessage("ok"),
    ]
    assert with_tools.invoke(history).tool_calls == []


def _asked_and_answered(result: str, status: Literal["success", "error"] = "success") -> list[Any]:
    call = tool_call(name="calculator", args={"expression": "12*(3+4)"}, id="call_x")
    return [
        HumanMessage("what is 12*(3+4)?"),
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(content=result, tool_call_id="call_x", name="calculator", status=status),
    ]


def test_final_answer_states_the_tool_result(with_tools: Any) -> None:
    answer = with_tools.invoke(_asked_and_answered("84"))
    assert answer.tool_calls == []
    assert answer.text == f"{OFFLINE_PREFIX} 12*(3+4) = 84."


def test_final_answer_reports_a_tool_error(with_tools: Any) -> None:
    answer = with_tools.invoke(_asked_and_answered("Division by zero in '1/0'.", "error"))
    assert answer.tool_calls == []
    assert "calculator tool reported an error: Division by zero" in answer.text


# --- streaming and async -----------------------------------------------------------


@pytest.mark.parametrize(
    "messages",
    [
        [HumanMessage("tell me something about tea, please")],
        _asked_and_answered("84"),
        build_context(_state([("Hi.", "Hello.")], summary="S.", pins=["Never use tabs."]), "go"),
    ],
)
def test_streamed_text_concatenates_to_the_invoked_answer(
    with_tools: Any, messages: list[BaseMessage]
) -> None:
    chunks = list(with_tools.stream(messages))
    assert len(chunks) > 1
    assert _joined(chunks).content == with_tools.invoke(messages).content


def test_streamed_tool_call_is_one_chunk_with_proper_tool_calls(with_tools: Any) -> None:
    prompt = [HumanMessage("what is 2+2 and what time is it?")]
    chunks = list(with_tools.stream(prompt))
    assert len(chunks) == 1
    assert [c["name"] for c in chunks[0].tool_call_chunks] == ["calculator", "current_time"]
    assert _joined(chunks).tool_calls == with_tools.invoke(prompt).tool_calls


def test_async_matches_sync(with_tools: Any) -> None:
    async def run() -> tuple[AIMessage, list[BaseMessage]]:
        answer = await with_tools.ainvoke(_asked_and_answered("84"))
        chunks = [chunk async for chunk in with_tools.astream([HumanMessage("hi there")])]
        return answer, chunks

    answer, chunks = asyncio.run(run())
    assert answer.content == with_tools.invoke(_asked_and_answered("84")).content
    assert _joined(chunks).content == with_tools.invoke([HumanMessage("hi there")]).content


# --- inside a LangGraph tool loop --------------------------------------------------


def _tool_loop(model: OfflineChatModel) -> Any:
    bound = model.bind_tools(BUILTIN_TOOLS)

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(BUILTIN_TOOLS))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "model")
    return builder.compile()


def test_tool_loop_calculates_and_answers(model: OfflineChatModel) -> None:
    result = _tool_loop(model).invoke({"messages": [HumanMessage("what is 12*(3+4)?")]})
    messages = result["messages"]
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert messages[2].text == "84"
    assert messages[3].tool_calls == []
    assert messages[3].text == f"{OFFLINE_PREFIX} 12*(3+4) = 84."


def test_tool_loop_tells_the_time_and_reports_errors(model: OfflineChatModel) -> None:
    loop = _tool_loop(model)
    timed = loop.invoke({"messages": [HumanMessage("what time is it in Europe/Paris?")]})
    stamp = timed["messages"][2].text
    assert datetime.fromisoformat(stamp).tzinfo is not None
    assert stamp in timed["messages"][-1].text
    failed = loop.invoke({"messages": [HumanMessage("calculate 1/0")]})
    assert failed["messages"][2].status == "error"
    assert "Division by zero" in failed["messages"][-1].text


# --- structured output ---------------------------------------------------------------


class _Unregistered(BaseModel):
    value: int


def test_unknown_schema_raises_not_implemented(model: OfflineChatModel) -> None:
    with pytest.raises(NotImplementedError, match="_Unregistered"):
        model.with_structured_output(_Unregistered)
    with pytest.raises(NotImplementedError, match="no structured-output handler"):
        model.with_structured_output({"title": "Anything", "type": "object"})


def test_unknown_method_is_rejected(model: OfflineChatModel) -> None:
    with pytest.raises(ValueError, match="structured-output method"):
        model.with_structured_output(CompactionOutput, method="telepathy")


def test_registered_handler_answers_its_schema(
    model: OfflineChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offline, "STRUCTURED_HANDLERS", dict(offline.STRUCTURED_HANDLERS))
    register_structured_handler(_Unregistered, lambda messages: _Unregistered(value=len(messages)))
    parsed = model.with_structured_output(_Unregistered).invoke([HumanMessage("a"), AIMessage("b")])
    assert parsed == _Unregistered(value=2)


def test_include_raw_returns_raw_parsed_and_no_error(model: OfflineChatModel) -> None:
    prompt = _compaction_input(_state([(f"q{i}", f"a{i}") for i in range(5)]))
    result = model.with_structured_output(CompactionOutput, include_raw=True).invoke(prompt)
    assert isinstance(result, dict)
    assert set(result) == {"raw", "parsed", "parsing_error"}
    assert result["parsing_error"] is None
    assert isinstance(result["parsed"], CompactionOutput)
    assert result["raw"].tool_calls[0]["name"] == "CompactionOutput"
    assert result["raw"].tool_calls[0]["args"] == result["parsed"].model_dump()


# --- compaction ----------------------------------------------------------------------


def test_decisions_become_pins_and_revocations_retire_old_ones() -> None:
    state = _state(
        [
            ("We decided to use Postgres for storage. Let's start.", "Sure."),
            ("我们必须使用红色主题。", "好的。"),
            ("We no longer answer in English. Must we test?", "OK."),
            ("Don't forget: we must deploy on Fridays.", "Noted."),
            ("不再用黑色字体。", "好。"),
            ("tell me a joke", "Why..."),
            ("more", "another"),
        ],
        pins=["Always answer in English.", "Use tabs.", "必须用黑色字体"],
    )
    output = compaction_output(_compaction_input(state))
    assert output.pinned_decisions == [
        "We decided to use Postgres for storage.",
        "我们必须使用红色主题。",
        "Don't forget: we must deploy on Fridays.",
    ]
    assert output.retired_pins == [1, 3]


def test_assistant_decisions_and_questions_are_not_pinned() -> None:
    state = _state(
        [("Should we always use tabs?", "We must always use tabs.")] * 3 + [("x", "y")] * 2
    )
    assert compaction_output(_compaction_input(state)).pinned_decisions == []


def test_a_revocation_is_never_pinned_and_cancels_a_pin_from_the_same_fold() -> None:
    state = _state(
        [
            ("We decided to use MySQL.", "OK."),
            ("Forget MySQL, we never decided that for real.", "OK."),
            ("We no longer must use tabs.", "OK."),
            ("a", "b"),
            ("c", "d"),
        ],
        pins=["Always indent with tabs."],
    )
    output = compaction_output(_compaction_input(state))
    assert output.pinned_decisions == []
    assert output.retired_pins == [1]


def test_rules_read_sentences_not_whole_messages() -> None:
    assert is_decision("We must use UTC.")
    assert not is_decision("We no longer must use tabs.")
    assert not is_decision("Must we use UTC?")
    assert not is_decision("Never mind.")
    assert is_retirement("Forget the tabs rule.")
    assert not is_retirement("Don't forget the tabs rule.")


def test_transcript_with_a_leading_reply_and_multi_line_messages() -> None:
    text = COMPACTION_INPUT.format(
        summary=NONE_MARKER,
        pins="1. Always use tabs.",
        fold="[assistant] Welcome!\n[user] Hi.\nWe must use UTC.\n[assistant] Sure.",
        kept="[user] next\n[assistant] ok",
    )
    output = compaction_output([SystemMessage("compact"), HumanMessage(text)])
    assert output.summary.splitlines() == [
        "Assistant: Welcome!",
        "User: Hi. We must use UTC. / Assistant: Sure.",
    ]
    assert output.pinned_decisions == ["We must use UTC."]
    assert output.retired_pins == []


def test_pins_are_clipped() -> None:
    state = _state([("We decided " + "very " * 100 + "much.", "OK.")] * 3 + [("a", "b")] * 2)
    pins = compaction_output(_compaction_input(state)).pinned_decisions
    assert len(pins) == 1
    assert len(pins[0]) <= MAX_PINNED_DECISION_CHARS


def test_summary_is_extractive_bounded_and_keeps_the_newest() -> None:
    turns = [(f"question {i} " + "words " * 40, f"answer {i} " + "more " * 40) for i in range(7)]
    state = _state(turns, summary="old fact\n" * 270)
    summary = compaction_output(_compaction_input(state)).summary
    assert 0 < len(summary) <= MAX_SUMMARY_CHARS
    assert summary.startswith("…")
    assert "question 4" in summary
    assert "answer 4" in summary


def test_summary_is_never_empty() -> None:
    prompt = [HumanMessage(compaction_prompt(ThreadState(), [], [])[1].text)]
    assert compaction_output(prompt).summary == EMPTY_SUMMARY


def test_compaction_handler_refuses_other_input(model: OfflineChatModel) -> None:
    with pytest.raises(ValueError, match="COMPACTION_INPUT"):
        compaction_output([HumanMessage("hello")])
    with pytest.raises(ValueError, match="COMPACTION_INPUT"):
        model.with_structured_output(CompactionOutput).invoke("hello")


def _ten_message_state() -> ThreadState:
    return _state(
        [
            ("We decided to ship on Mondays.", "Understood."),
            ("我们必须用中文写文档。", "好的。"),
            ("We no longer use Python 2 anywhere.", "Good."),
            ("What is the capital of Peru?", "Lima."),
            ("And of Chile?", "Santiago."),
        ],
        summary="The user builds a release tool.",
        pins=["Always support Python 2.", "Keep answers short."],
    )


def _check_compacted(state: ThreadState, result: Any) -> None:
    assert result.status is CompactionStatus.SUCCEEDED
    assert result.state.messages == state.messages[-4:]
    assert result.state.pinned_decisions == [
        "Keep answers short.",
        "We decided to ship on Mondays.",
        "我们必须用中文写文档。",
    ]
    summary = result.state.summary
    assert summary.startswith("The user builds a release tool.")
    assert "We no longer use Python 2 anywhere." in summary
    assert "capital of Peru" not in summary  # kept verbatim, not folded
    assert len(summary) <= MAX_SUMMARY_CHARS


@pytest.mark.parametrize("method", [None, "json_schema", "function_calling"])
def test_compact_end_to_end_with_the_offline_model(
    model: OfflineChatModel, method: str | None
) -> None:
    state = _ten_message_state()
    assert len(state.messages) == 10
    _check_compacted(state, compact(state, model, method=method))


def test_acompact_end_to_end_with_the_offline_model(model: OfflineChatModel) -> None:
    state = _ten_message_state()
    _check_compacted(state, asyncio.run(acompact(state, model)))
