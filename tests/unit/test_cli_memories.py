"""The terminal chat's long-term memory commands with a real agent: /remember, /memories
(with their quotes, and the history of what changed) and /forget N."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent import ChatAgent
from agent.offline import DEFAULT_HANDLERS, OfflineChatModel, StructuredHandler
from agent.settings import Settings
from memory.longterm import ExtractionOutput, Operation
from tests.unit.cli_support import chat


def test_long_term_memory_commands(tmp_path: Path) -> None:
    with ChatAgent(
        database_url=f"sqlite:///{tmp_path / 'a.sqlite'}",
        model=OfflineChatModel(),
        secret="s" * 40,
        settings=Settings(data_dir=tmp_path / "data"),
    ) as agent:
        out, err, code = chat(
            agent,
            "Remember that I prefer short answers.",
            "/remember my password is hunter2",
            "/remember I am vegetarian",
            "/memories",
            "/forget 2",
            "/forget 9",
            "/new",
            "what should I cook?",
            "/memories",
        )
        assert code == 0
        assert "[long-term memory: remembered 1]" in out
        assert "remembered [fact] I am vegetarian" in out
        listing = out.split("> /memories\n")[1]
        assert "  1. [fact] I am vegetarian" in listing
        assert "  2. [fact] I prefer short answers" in listing
        assert "forgot item 2" in out
        # the next conversation's answer shows what the offline model was given
        assert "- [fact] I am vegetarian" in out.split("> what should I cook?")[1]
        assert "short answers" not in out.split("> what should I cook?")[1]
        assert err.splitlines() == [
            "error: that looks like a password or pass phrase; secrets are never remembered",
            "error: no item 9: /memories shows 1",
        ]
        assert [m["text"] for m in agent.memories(session_id="s1")["memories"]] == [
            "I am vegetarian"
        ]


def moving_extractor(messages: Any) -> ExtractionOutput:
    """A scripted extraction model: the first turn states two facts, the second a move."""
    document = json.loads(str(messages[-1].content))
    said = document["turns"][0]["user"]
    if said.startswith("I live in Lisbon"):
        return ExtractionOutput(
            operations=[
                Operation(op="add", turn=1, quote=quote, kind="fact", text=quote)
                for quote in ("I live in Lisbon", "I work as a data engineer.")
            ]
        )
    home = next(m for m in document["current_memories"] if "Lisbon" in m["text"])
    quote = "I moved to Porto."
    move = Operation(op="update", turn=1, quote=quote, id=home["id"], kind="fact", text=quote)
    return ExtractionOutput(operations=[move] if said == quote else [])


def test_memories_show_their_quotes_and_history_what_changed(tmp_path: Path) -> None:
    handlers: dict[type[BaseModel], StructuredHandler] = {
        **DEFAULT_HANDLERS,
        ExtractionOutput: moving_extractor,
    }
    with ChatAgent(
        database_url=f"sqlite:///{tmp_path / 'a.sqlite'}",
        model=OfflineChatModel(structured_handlers=handlers),
        secret="s" * 40,
        settings=Settings(data_dir=tmp_path / "data", extraction_batch_turns=1),
        long_term_memory="model",
    ) as agent:
        out, err, code = chat(
            agent,
            "I live in Lisbon and I work as a data engineer.",
            "I moved to Porto.",
            "/remember I drink green tea",
            "/memories",
            "/memories history",
        )
        assert (code, err) == (0, "")
        listing = agent.memories(session_id="s1", include_history=True)
        said = {item["text"]: item["provenance"]["at"][:10] for item in listing["memories"]}
        (lisbon,) = listing["history"]
        listings = out.split("> /memories")
        assert listings[1].splitlines()[1:7] == [
            "long-term memory (3 of 100):",
            "  1. [fact] I drink green tea",
            f"       added by you on {said['I drink green tea']}",
            "  2. [fact] I moved to Porto.",
            f"       said on {said['I moved to Porto.']}: “I moved to Porto.”",
            "  3. [fact] I work as a data engineer.",
        ]
        assert listings[2].splitlines()[1:5] == [
            "long-term memory history (1; never used again, /forget N forgets one):",
            "  1. [fact] I live in Lisbon",
            f"       changed on {lisbon['invalidAt'][:10]}: replaced by “I moved to Porto.”",
            f"       said on {lisbon['provenance']['at'][:10]}: “I live in Lisbon”",
        ]

        # /forget N takes the number from the last listing: here the history's
        out, err, code = chat(agent, "/memories history", "/forget 1", "/memories history")
        assert (code, err) == (0, "")
        assert "forgot item 1" in out
        assert out.rstrip().endswith(
            "long-term memory history: nothing you said has changed an item yet"
        )
        texts = [item["text"] for item in agent.memories(session_id="s1")["memories"]]
        assert texts == ["I drink green tea", "I moved to Porto.", "I work as a data engineer."]
