"""A tool call a weak model writes as text is run as a real one, or never an answer."""

from __future__ import annotations

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
