"""A tool call a weak model writes as text is run as a real one, or never an answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from agent import ChatAgent
from graphs.prompts import TOOL_NOT_SERVED
from memory.conversations import ConversationMemory
from tests.fakes import ScriptedModel
from tests.unit.test_agent_graph import compile_graph, run

FENCED = '```json\n{"name": "calculator", "arguments": {"expression": "6*7"}}\n```'
TAGGED = '<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>'
BARE = 'Let me see. {"tool": "calculator", "parameters": {"expression": "6*7"}}'


def test_a_call_written_as_text_is_run_as_a_tool_call(memory: ConversationMemory) -> None:
    for i, written in enumerate((FENCED, TAGGED, BARE)):
        model = ScriptedModel(replies=[written, "It is 42."])
        final, _ = run(compile_graph(memory, model), {"message": f"6 times 7? {i}"}, mode="tool")
        assert final["answer"] == "It is 42."
        tool_result = model.received[-1].messages[-1]
        assert tool_result.type == "tool" and tool_result.text == "42"
        stored = memory.read_memory("s1", "c1").messages
        assert not any("calculator" in m.text for m in stored)


def test_a_call_the_route_cannot_serve_degrades_to_a_plain_answer(
    memory: ConversationMemory,
) -> None:
    model = ScriptedModel(replies=[TAGGED])
    final, _ = run(compile_graph(memory, model, tools=()), {"message": "6 times 7?"})
    assert (final["answer"], final["degraded"]) == (TOOL_NOT_SERVED, True)
    assert [m.text for m in memory.read_memory("s1", "c1").messages][-1] == TOOL_NOT_SERVED


def test_json_naming_no_tool_is_an_answer(memory: ConversationMemory) -> None:
    answer = '{"name": "Ada", "arguments": {"age": 36}}'
    model = ScriptedModel(replies=[answer])
    final, _ = run(compile_graph(memory, model), {"message": "a JSON person?"}, mode="tool")
    assert final["answer"] == answer


def streamed(agent: ChatAgent, message: str, mode: Any) -> tuple[str, dict[str, Any]]:
    """A turn's streamed answer tokens, joined, and its result."""

    async def turn() -> list[Mapping[str, Any]]:
        stream = agent.astream(message, session_id="s", create_conversation=True, mode=mode)
        return [event async for event in stream]

    events = asyncio.run(turn())
    done = next(event for event in events if event["event"] == "done")
    tokens = "".join(event["text"] for event in events if event["event"] == "token")
    return tokens, dict(done["result"])


@pytest.mark.parametrize("written", [FENCED, TAGGED, BARE])
def test_a_call_written_as_text_is_never_streamed(
    open_agent: Callable[..., ChatAgent], written: str
) -> None:
    agent = open_agent(ScriptedModel(replies=[written, "It is 42."]), long_term_memory="off")
    tokens, result = streamed(agent, "6 times 7?", "tool")
    assert result["text"] == "It is 42."
    assert "calculator" not in tokens and "{" not in tokens
    assert tokens.endswith("It is 42.")


def test_a_call_the_route_cannot_serve_is_never_streamed(
    open_agent: Callable[..., ChatAgent],
) -> None:
    agent = open_agent(ScriptedModel(replies=[TAGGED]), long_term_memory="off")
    tokens, result = streamed(agent, "6 times 7?", "chat")
    assert (result["text"], result["degraded"]) == (TOOL_NOT_SERVED, True)
    assert tokens == ""  # the client shows the result's text


@pytest.mark.parametrize(
    "answer",
    [
        'In Python a dict is written {"a": 1}, and a set {1, 2}.',
        "```python\nprint(6 * 7)\n```",
        "Use `len` here: it is < 10, and a `<` is fine.",
        '{"name": "Ada", "arguments": {"age": 36}}',  # JSON naming no tool
    ],
)
def test_an_answer_that_only_looks_like_a_call_is_streamed_whole(
    open_agent: Callable[..., ChatAgent], answer: str
) -> None:
    agent = open_agent(ScriptedModel(replies=[answer]), long_term_memory="off")
    tokens, result = streamed(agent, "show me", "chat")
    assert tokens == result["text"] == answer
