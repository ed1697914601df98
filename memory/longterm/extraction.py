"""Extraction: turn the user's own text of a completed turn into proposals for the gate.

`rules` is deterministic (`memory.longterm.rules`); `model` asks the compaction model
(structured output, temperature 0) with the user's current items, so that it can
name the ones to retire. Either way the gate (`memory.longterm.gate`) decides what is
written, and a model's proposals are checked against the user's words.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory.limits import (
    MAX_IMPORTANCE,
    MAX_MEMORY_TEXT_CHARS,
    MAX_NEW_MEMORIES_PER_TURN,
    MIN_IMPORTANCE,
)
from memory.longterm.items import MEMORY_KINDS, MemoryItem, MemoryKind, Source
from memory.longterm.rules import Extraction, Proposal, extract
from memory.prompts import EXTRACTION_SYSTEM


@dataclass(frozen=True)
class Extractor:
    """(user text, current items) → proposals, revocations and ids to retire.

    Attributes:
        source: what wrote the items it proposes (`rules` or `model`).
        run: the extraction itself.
        needs_items: whether `run` reads the current items (the model names the ones to
            retire; the rules leave matching to the gate).
    """

    source: Source
    run: Callable[[str, Sequence[MemoryItem]], Extraction]
    needs_items: bool = False

    def __call__(self, user_text: str, items: Sequence[MemoryItem]) -> Extraction:
        return self.run(user_text, items)


class ProposedMemory(BaseModel):
    """One item the extraction model proposes."""

    model_config = ConfigDict(extra="forbid")

    kind: MemoryKind = Field(description="boundary, preference, goal, style or fact")
    text: str = Field(description="What the user said, in their own words.")
    importance: int = Field(description="1 (minor) to 5 (must always be respected).")


class ExtractionOutput(BaseModel):
    """What the extraction model returns (its structured-output schema)."""

    model_config = ConfigDict(extra="forbid")

    memories: list[ProposedMemory] = Field(
        description="Lasting things the user stated explicitly; empty when none."
    )
    retire: list[str] = Field(description="Ids of current memories the user revoked or replaced.")


class InvalidExtractionOutput(ValueError):
    """The extraction model answered, but not with a usable result."""


def extraction_prompt(user_text: str, items: Sequence[MemoryItem]) -> list[BaseMessage]:
    """The extraction model's input: the instruction, then the user text and the current
    items as one JSON document (texts are values, never instructions)."""
    system = EXTRACTION_SYSTEM.format(
        max_new=MAX_NEW_MEMORIES_PER_TURN, max_chars=MAX_MEMORY_TEXT_CHARS
    )
    document = {
        "user_text": user_text,
        "current_memories": [
            {"id": item.id, "kind": item.kind, "text": item.text} for item in items
        ],
    }
    body = json.dumps(document, ensure_ascii=False, indent=1)
    return [SystemMessage(content=system), HumanMessage(content=body)]


def structured_extractor(model: BaseChatModel, method: str | None = None) -> Runnable[Any, Any]:
    """`model` bound to the `ExtractionOutput` schema (structured output)."""
    if method is None:
        return model.with_structured_output(ExtractionOutput)
    return model.with_structured_output(ExtractionOutput, method=method)


def parse_extraction(raw: object) -> Extraction:
    """The model's answer as an `Extraction` (importance clamped to 1-5).

    Raises:
        InvalidExtractionOutput: when it does not match `ExtractionOutput`.
    """
    try:
        output = raw if isinstance(raw, ExtractionOutput) else ExtractionOutput.model_validate(raw)
    except ValidationError as exc:
        raise InvalidExtractionOutput(
            f"invalid extraction output: {exc.error_count()} errors"
        ) from exc
    proposals = tuple(
        Proposal(
            memory.kind if memory.kind in MEMORY_KINDS else "fact",
            memory.text,
            min(max(memory.importance, MIN_IMPORTANCE), MAX_IMPORTANCE),
        )
        for memory in output.memories
    )
    return Extraction(proposals=proposals, retire=tuple(output.retire))


RULES_EXTRACTOR = Extractor("rules", lambda user_text, items: extract(user_text))
"""The deterministic extractor; the gate matches its revocations to the current items."""


def model_extractor(runnable: Runnable[Any, Any]) -> Extractor:
    """The `model` extractor over a structured-output runnable (`structured_extractor`)."""

    def run(user_text: str, items: Sequence[MemoryItem]) -> Extraction:
        return parse_extraction(runnable.invoke(extraction_prompt(user_text, items)))

    return Extractor("model", run, needs_items=True)
