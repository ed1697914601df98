"""The offline model: deterministic answers, tool calls, streaming, a LangGraph tool loop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agent.offline import OfflineChatModel
from agent.offline.chat import MEMORY_HEAD, OFFLINE_NOTICE, OFFLINE_PREFIX, PARAGRAPH
from agent.tools import BUILTIN_TOOLS, calculator, current_time
from memory.schema import ThreadState
from tests.context_support import build_context
from tests.unit.offline_support import thread_state


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


# --- plain chat ---------------------------------------------------------------------


def test_identifies_itself(model: OfflineChatModel) -> None:
    assert model._llm_type == "offline-deterministic"
    answer = model.invoke("hello there")
    assert answer.text.startswith(OFFLINE_NOTICE)  # said once, on a conversation's first answer
    assert "hello there" not in answer.text  # the message is not echoed
    assert answer.tool_calls == []


def test_same_input_same_output(model: OfflineChatModel, with_tools: Any) -> None:
    prompt = [HumanMessage("what is 12*(3+4)?")]
    first, second = with_tools.invoke(prompt), with_tools.invoke(prompt)
    assert first.tool_calls == second.tool_calls
    assert model.invoke("hi").content == model.invoke("hi").content


def test_plain_answer_reports_what_the_memory_context_holds(model: OfflineChatModel) -> None:
    state = thread_state(
        [("My name is Ann.", "Hello Ann."), ("I like tea.", "Noted.")],
        summary="We planned a trip to Kyoto.",
        pins=["Always answer in English.", "We decided to use Postgres."],
    )
    context = build_context(state, "What do you remember?", system_prompt="Be brief.")
    paragraphs = model.invoke(context).text.split(PARAGRAPH)
    assert paragraphs[0] == MEMORY_HEAD  # not the first answer: no notice again
    assert "What do you remember?" not in PARAGRAPH.join(paragraphs)
    assert (
        "Pinned decisions I keep to:\n1. Always answer in English.\n2. We decided to use Postgres."
        in paragraphs
    )
    assert "Summary of our earlier conversation: We planned a trip to Kyoto." in paragraphs
    assert paragraphs[-1] == (
        'I can see 4 earlier message(s); your previous message was: "I like tea."'
    )


def test_plain_answer_without_memory_says_so(model: OfflineChatModel) -> None:
    lines = model.invoke(build_context(ThreadState(), "hi")).text.splitlines()
    assert lines[-1] == "I see no earlier messages in this conversation."
    assert not any(line.startswith(("Pinned", "Summary")) for line in lines)


def test_stop_sequence_cuts_the_answer(model: OfflineChatModel) -> None:
    assert model.invoke("hello", stop=[" No model is configured"]).text == OFFLINE_PREFIX


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


def test_a_search_answer_reads_the_quoted_records_back_as_words(with_tools: Any) -> None:
    """The search tool quotes each line as a JSON string (for the model); the offline
    answer shows the words, not their escapes."""
    from agent.search_tool import result_lines
    from memory.archive import ArchivedLine

    said = 'My config: {"name": "boiler"}\nand a second line'
    line = ArchivedLine(
        id=1,
        conversation_id="c1",
        title='Config "boiler"',
        message_id="t1-u",
        role="user",
        created_at=datetime(2026, 3, 1, 9, 30, tzinfo=UTC),
        text=said,
    )
    call = tool_call(name="search_conversations", args={"query": "boiler"}, id="call_s")
    answer = with_tools.invoke(
        [
            HumanMessage("what did I say about the boiler?"),
            AIMessage(content="", tool_calls=[call]),
            ToolMessage(content=result_lines([line]), tool_call_id="call_s", name=call["name"]),
        ]
    ).text
    assert "\\" not in answer
    assert answer.splitlines()[-1] == (
        '- 2026-03-01 · Config "boiler" · you: My config: {"name": "boiler"} and a second line'
    )


# --- streaming and async -----------------------------------------------------------


@pytest.mark.parametrize(
    "messages",
    [
        [HumanMessage("tell me something about tea, please")],
        _asked_and_answered("84"),
        build_context(
            thread_state([("Hi.", "Hello.")], summary="S.", pins=["Never use tabs."]), "go"
        ),
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
