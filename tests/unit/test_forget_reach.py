"""What a forgetting reaches: the user's own words that stated the item, the quotes of
the items said with it, the history it replaced or that replaced it; on both backends."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from agent import ChatAgent
from agent.settings import Settings
from memory.longterm import ExtractionOutput, Operation
from tests.fakes import ScriptedModel
from tests.unit.test_forget_redaction import stored_values


def each_turn(tmp_path: Path) -> Settings:
    """Settings under which every turn's upkeep extracts (no batch to wait for)."""
    return Settings(data_dir=tmp_path / "data", extraction_batch_turns=1)


def said(agent: ChatAgent, text: str, **where: Any) -> str:
    result = agent.send(text, session_id="s", **(where or {"create_conversation": True}))
    assert agent.wait_for_upkeep(30)
    return result.conversation_id


def listed(agent: ChatAgent) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    found = agent.memories(session_id="s", include_history=True)
    return found["memories"], found["history"]


def add(quote: str, text: str) -> Operation:
    return Operation(op="add", turn=1, quote=quote, text=text, kind="fact")


def test_forgetting_takes_out_the_users_words_that_stated_the_item(
    open_agent: Callable[..., ChatAgent],
) -> None:
    words = "I've been a vegetarian since 2019"
    model = ScriptedModel(
        replies=["Noted."],
        structured=[ExtractionOutput(operations=[add(words, "I am vegetarian")])],
    )
    agent = open_agent(model, long_term_memory="model")
    cid = said(agent, f"Honestly, {words}.")
    ((item,), _) = listed(agent)
    assert item["provenance"]["quote"] == words

    agent.forget(item["id"], session_id="s")

    texts = [m["text"] for m in agent.hydrate(session_id="s", conversation_id=cid)["messages"]]
    assert texts == ["Honestly, [forgotten].", "Noted."]
    titles = [c["title"] for c in agent.conversations(session_id="s")["conversations"]]
    assert titles == ["Honestly, [forgotten]."]
    assert "since 2019" not in stored_values(agent)
    assert agent.search_conversations("vegetarian 2019", session_id="s") == []


def test_forgetting_takes_out_an_answer_that_restated_it_in_its_own_words(
    open_agent: Callable[..., ChatAgent],
) -> None:
    words = "I've been a vegetarian since 2019"
    model = ScriptedModel(
        replies=["Noted, a vegetarian since 2019. Anything else?"],
        structured=[ExtractionOutput(operations=[add(words, "I am vegetarian")])],
    )
    agent = open_agent(model, long_term_memory="model")
    cid = said(agent, f"Honestly, {words}.")
    ((item,), _) = listed(agent)

    agent.forget(item["id"], session_id="s")

    texts = [m["text"] for m in agent.hydrate(session_id="s", conversation_id=cid)["messages"]]
    assert texts == ["Honestly, [forgotten].", "[forgotten] Anything else?"]
    assert "vegetarian" not in stored_values(agent)


def test_forgetting_an_item_leaves_no_trace_in_the_quote_of_one_said_with_it(
    open_agent: Callable[..., ChatAgent],
) -> None:
    words = "I live in Lisbonqq and I work as a data engineer"
    both = [
        add("I live in Lisbonqq", "I live in Lisbonqq"),
        add(words, "I work as a data engineer"),
    ]
    model = ScriptedModel(replies=["ok"], structured=[ExtractionOutput(operations=both)])
    agent = open_agent(model, long_term_memory="model")
    said(agent, f"{words}.")
    lisbon = next(item for item in listed(agent)[0] if "Lisbonqq" in item["text"])

    agent.forget(lisbon["id"], session_id="s")

    ((kept,), _) = listed(agent)
    assert kept["text"] == "I work as a data engineer"
    assert kept["provenance"]["quote"] == "[forgotten] and I work as a data engineer"
    assert "lisbonqq" not in json.dumps(agent.export(session_id="s")).casefold()


def moved_agent(open_agent: Callable[..., ChatAgent], *more: ExtractionOutput) -> ChatAgent:
    """An agent whose model was told "I live in Lisbonqq.", then "I moved to Portoqq."."""

    def moved(messages: list[BaseMessage]) -> ExtractionOutput:
        (home,) = json.loads(str(messages[-1].content))["current_memories"]
        quote = "I moved to Portoqq"
        return ExtractionOutput(
            operations=[Operation(op="update", turn=1, quote=quote, id=home["id"], text=quote)]
        )

    first = ExtractionOutput(operations=[add("I live in Lisbonqq", "I live in Lisbonqq")])
    model = ScriptedModel(replies=["ok"] * 6, structured=[first, moved, *more])
    agent = open_agent(model, long_term_memory="model")
    cid = said(agent, "I live in Lisbonqq.")
    said(agent, "I moved to Portoqq.", conversation_id=cid)
    return agent


def test_forgetting_what_replaced_an_item_leaves_its_history_naming_nothing(
    open_agent: Callable[..., ChatAgent],
) -> None:
    agent = moved_agent(open_agent)
    ((porto,), (lisbon,)) = listed(agent)
    assert lisbon["supersededBy"] == porto["id"]

    agent.forget(porto["id"], session_id="s")

    assert listed(agent) == ([], [{**lisbon, "supersededBy": None}])


@pytest.mark.parametrize(
    "request_", ["Please forget that I lived in Lisbonqq.", "Forget that I live in Lisbonqq."]
)
def test_forget_that_i_lived_there_reaches_the_history_item(
    open_agent: Callable[..., ChatAgent], request_: str
) -> None:
    """Read by code, beside a model that proposes nothing for it."""
    agent = moved_agent(open_agent, ExtractionOutput(operations=[]))

    said(agent, request_)

    ((porto,), history) = listed(agent)
    assert (porto["text"], history) == ("I moved to Portoqq", [])
    assert agent.search_conversations("lisbonqq", session_id="s") == []


def test_the_extraction_model_is_shown_history_it_may_only_forget(
    open_agent: Callable[..., ChatAgent],
    tmp_path: Path,
) -> None:
    def moved(messages: list[BaseMessage]) -> ExtractionOutput:
        (home,) = json.loads(str(messages[-1].content))["current_memories"]
        quote = "I moved to Portoqq"
        update = Operation(op="update", turn=1, quote=quote, id=home["id"], text=quote)
        return ExtractionOutput(operations=[update])

    model = ScriptedModel(
        replies=["ok"] * 3,
        structured=[
            ExtractionOutput(operations=[add("I live in Lisbonqq", "I live in Lisbonqq")]),
            moved,
        ],
    )
    agent = open_agent(model, long_term_memory="model", settings=each_turn(tmp_path))
    cid = said(agent, "I live in Lisbonqq.")
    said(agent, "I moved to Portoqq.", conversation_id=cid)
    ((porto,), (lisbon,)) = listed(agent)
    request_ = "Please forget that I lived in Lisbonqq"
    shown: dict[str, Any] = {}

    def extracting(messages: list[BaseMessage]) -> ExtractionOutput:
        shown.update(json.loads(str(messages[-1].content)))
        return ExtractionOutput(
            operations=[
                Operation(op=op, turn=1, quote=request_, id=lisbon["id"])
                for op in ("retire", "forget")
            ]
        )

    model.structured.append(extracting)
    said(agent, f"{request_}.")

    assert [m["id"] for m in shown["current_memories"]] == [porto["id"]]
    assert shown["history"] == [{"id": lisbon["id"], "text": "I live in Lisbonqq"}]
    assert listed(agent) == ([porto], [])  # the retire of history was refused
