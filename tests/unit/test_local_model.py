"""The one base of the in-process models: every way of calling serves the same answer."""

from __future__ import annotations

import asyncio
import time

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage

from agent.offline import OfflineChatModel
from agent.offline.local import LocalChatModel, ModelCall
from tests.fakes import ScriptedModel

CALL = {"name": "calculator", "args": {"expression": "6*7"}, "id": "call-1", "type": "tool_call"}


def test_a_streamed_tool_call_merges_back_to_the_scripted_answer() -> None:
    reply = AIMessage(content="Let me work it out.", tool_calls=[CALL])
    model = ScriptedModel(replies=[reply, reply])

    async def both() -> tuple[AIMessage, AIMessageChunk]:
        invoked = await model.ainvoke([HumanMessage("6*7?")])
        merged: AIMessageChunk | None = None
        async for chunk in model.astream([HumanMessage("and again?")]):
            merged = chunk if merged is None else merged + chunk
        assert merged is not None
        return invoked, merged

    invoked, streamed = asyncio.run(both())
    assert invoked.text == streamed.text == "Let me work it out."
    assert invoked.tool_calls == streamed.tool_calls == [CALL]
    # recorded in order, sync and async alike: the context each call was sent
    assert [messages[-1].text for messages in model.calls] == ["6*7?", "and again?"]


def test_a_model_records_only_when_asked() -> None:
    quiet, recording = OfflineChatModel(), OfflineChatModel(record=True)
    for model in (quiet, recording):
        model.invoke([HumanMessage("hello")])
        list(model.stream([HumanMessage("hello again")]))
    assert quiet.calls == []
    assert [messages[-1].text for messages in recording.calls] == ["hello", "hello again"]


class _Paced(LocalChatModel):
    @property
    def _llm_type(self) -> str:
        return "paced-test"

    def respond(self, call: ModelCall) -> AIMessage:
        return AIMessage(content="one two three")

    def pause(self, call: ModelCall) -> float:
        return 0.02


def test_a_paced_answer_streams_piece_by_piece_and_invoke_waits_as_long() -> None:
    model = _Paced()
    started = time.perf_counter()
    pieces = [chunk.text for chunk in model.stream("go")]
    streamed = time.perf_counter() - started
    started = time.perf_counter()
    assert model.invoke("go").text == "".join(pieces) == "one two three"
    assert pieces == ["one ", "two ", "three"]
    assert min(streamed, time.perf_counter() - started) >= 3 * 0.02
