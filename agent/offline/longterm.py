"""The offline model's long-term extraction: the rules extractor, answering as a model.

It reads the extraction input written by `memory.longterm.extraction.extraction_prompt`
(the owed turns, the user's current items and history, with ids) and answers with an
`ExtractionOutput`: the rules' operations (`memory.longterm.extraction.rules_operations`),
each with its quote. So `AGENT_LONG_TERM_MEMORY=model` works without a network too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage

from memory.longterm import ExtractionOutput
from memory.longterm.extraction import rules_operations

NOT_AN_EXTRACTION_INPUT = (
    "the offline extraction handler needs the JSON document of "
    "memory.longterm.extraction.extraction_prompt as the last user message"
)


@dataclass(frozen=True)
class ShownItem:
    """An item as the extraction input shows it."""

    id: str
    text: str


def extraction_output(messages: Sequence[BaseMessage]) -> ExtractionOutput:
    """Answer an extraction request deterministically.

    Raises:
        ValueError: the input is not an extraction document.
    """
    human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    try:
        document = json.loads(str(human.content)) if human is not None else {}
        turns = [(str(turn["user"]), None) for turn in document["turns"]]
        shown, history = (
            [ShownItem(str(item["id"]), str(item["text"])) for item in document[key]]
            for key in ("current_memories", "history")
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(NOT_AN_EXTRACTION_INPUT) from exc
    return ExtractionOutput(operations=rules_operations(turns, shown, history))
