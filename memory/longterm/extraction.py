"""Extraction: the owed turns of a conversation → operations on the user's long-term items.

`model` asks the compaction model once for a batch of owed turns (each with the
assistant line it answered) and the user's items; code reads the explicit requests
beside it, and offline (`explicit`) alone. Every operation carries its `quote`, which
the gate verifies before anything is written.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable

from memory.archive.terms import tokens
from memory.limits import MAX_MEMORY_TEXT_CHARS, MAX_NEW_MEMORIES_PER_TURN
from memory.longterm.evidence import normalised_words
from memory.longterm.explicit import explicit_operations
from memory.longterm.items import MemoryItem, Source
from memory.longterm.operations import ExtractionOutput, Operation, OwedTurn
from memory.prompts import EXTRACTION_RETRY, EXTRACTION_SYSTEM
from memory.schema import validated

logger = logging.getLogger(__name__)


class InvalidExtractionOutput(ValueError):
    """The extraction model answered, but not with a usable result (asked twice)."""


@dataclass(frozen=True)
class Extractor:
    """(owed turns, the user's items, current and history) → operations; `source` is
    what wrote the items it proposes."""

    source: Source
    run: Callable[[Sequence[OwedTurn], Sequence[MemoryItem]], list[Operation]]

    def __call__(self, turns: Sequence[OwedTurn], items: Sequence[MemoryItem]) -> list[Operation]:
        return self.run(turns, items)


PROMPT_ITEMS = 60
"""Current items an extraction call is shown at most: those sharing the most words with
the batch (with few items, all), so that the input fits a small model's window."""
PROMPT_HISTORY = 20
"""History items (what a user may still ask to forget) shown at most, likewise."""
PROMPT_ASSISTANT_CHARS = 600
"""The assistant's line before a turn, cut to its end (the question it asked)."""


def _nearest(items: Sequence[MemoryItem], said: frozenset[str], limit: int) -> list[MemoryItem]:
    """The `limit` items sharing the most words with `said`, in their given order."""
    ranked = sorted(items, key=lambda item: -len(tokens(item.text) & said))[:limit]
    kept = {item.id for item in ranked}
    return [item for item in items if item.id in kept]


def _tail(text: str) -> str:
    if len(text) <= PROMPT_ASSISTANT_CHARS:
        return text
    return "…" + text[-(PROMPT_ASSISTANT_CHARS - 1) :]


def extraction_prompt(turns: Sequence[OwedTurn], items: Sequence[MemoryItem]) -> list[BaseMessage]:
    """The extraction model's input: the instruction, then the turns, the current items
    and the history (what a user may still ask to forget) as one JSON document (texts are
    values, never instructions), fitted to a small window (the items nearest the batch,
    the assistant's lines cut)."""
    system = EXTRACTION_SYSTEM.format(
        max_new=MAX_NEW_MEMORIES_PER_TURN, max_chars=MAX_MEMORY_TEXT_CHARS
    )
    said = tokens(" ".join(turn.user_text for turn in turns))
    current = _nearest([item for item in items if item.current], said, PROMPT_ITEMS)
    history = _nearest([item for item in items if not item.current], said, PROMPT_HISTORY)
    document = {
        "turns": [
            {"turn": n, "assistant_before": _tail(turn.assistant_before), "user": turn.user_text}
            for n, turn in enumerate(turns, start=1)
        ],
        "current_memories": [item.model_dump(include={"id", "kind", "text"}) for item in current],
        "history": [item.model_dump(include={"id", "text"}) for item in history],
    }
    body = json.dumps(document, ensure_ascii=False, indent=1)
    return [SystemMessage(content=system), HumanMessage(content=body)]


EXTRACTION_MAX_TOKENS = 1_500
"""The most an extraction's answer may take: a batch's operations, as JSON."""


EXPLICIT_EXTRACTOR = Extractor("explicit", explicit_operations)
"""The explicit requests alone (offline: no model judges meaning)."""


def _beside(explicit: list[Operation], proposed: list[Operation]) -> list[Operation]:
    """The model's operations after the explicit ones, less those that repeat one (an
    add of a request's words, a change of the item a request forgets): the request is
    applied as said, once."""
    adds = {(op.turn, normalised_words(op.quote)) for op in explicit if op.op == "add"}
    named = {(op.turn, op.id) for op in explicit if op.op != "add"}

    def repeats(op: Operation) -> bool:
        if op.op != "add":
            return (op.turn, op.id) in named
        quote = normalised_words(op.quote)
        return any(turn == op.turn and body in quote for turn, body in adds)

    return explicit + [op for op in proposed if not repeats(op)]


def model_extractor(runnable: Runnable[Any, Any]) -> Extractor:
    """The `model` extractor over a structured-output runnable: one call per batch.

    An answer of the wrong form is asked for once more with a stricter instruction (at
    temperature 0 the same input gives the same answer); a second raises
    `InvalidExtractionOutput`, nothing of either used: the upkeep counts the batch as
    refused, not failed, as the same model would fail the same way later."""
    retry = HumanMessage(content=EXTRACTION_RETRY.format(max_new=MAX_NEW_MEMORIES_PER_TURN))

    def ask(prompt: list[BaseMessage]) -> list[Operation]:
        try:
            raw = runnable.invoke(prompt)
        except ValueError as exc:  # StructuredOutputError, a parser's error
            raise InvalidExtractionOutput(str(exc)) from exc
        return validated(ExtractionOutput, raw, InvalidExtractionOutput).proposed()

    def run(turns: Sequence[OwedTurn], items: Sequence[MemoryItem]) -> list[Operation]:
        prompt = extraction_prompt(turns, items)
        try:
            proposed = ask(prompt)
        except InvalidExtractionOutput as exc:
            logger.info("extraction answer not usable (%s): asked again", exc)
            proposed = ask([*prompt, retry])
        return _beside(explicit_operations(turns, items), proposed)

    return Extractor("model", run)
