"""Extraction: the owed turns of a conversation → operations on the user's long-term items.

`model` asks the compaction model (structured output, temperature 0) once per upkeep for
every owed turn, each with the assistant line it answered, and the user's current items;
`rules` is the deterministic offline stand-in (`memory.longterm.rules`). Either way an
operation carries `quote`, the user's own words that state it, and the gate
(`memory.longterm.gate`) verifies every operation in code before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from pydantic import ValidationError

from memory.limits import MAX_MEMORY_TEXT_CHARS, MAX_NEW_MEMORIES_PER_TURN
from memory.longterm.items import MemoryItem, Source
from memory.longterm.operations import ExtractionOutput, Operation, OperationName, OwedTurn
from memory.longterm.revocation import Said, forgets, named_by, newest_said_in
from memory.longterm.rules import extract, revoked_words
from memory.prompts import EXTRACTION_SYSTEM
from memory.structured import StructuredPolicy, as_policy


class InvalidExtractionOutput(ValueError):
    """The extraction model answered, but not with a usable result."""


@dataclass(frozen=True)
class Extractor:
    """(owed turns, the user's items, current and history) → operations.

    Attributes:
        source: what wrote the items it proposes (`rules` or `model`).
        run: the extraction itself.
    """

    source: Source
    run: Callable[[Sequence[OwedTurn], Sequence[MemoryItem]], list[Operation]]

    def __call__(self, turns: Sequence[OwedTurn], items: Sequence[MemoryItem]) -> list[Operation]:
        return self.run(turns, items)


def extraction_prompt(turns: Sequence[OwedTurn], items: Sequence[MemoryItem]) -> list[BaseMessage]:
    """The extraction model's input: the instruction, then the turns, the current items
    and the history (what a user may still ask to forget) as one JSON document (texts
    are values, never instructions)."""
    system = EXTRACTION_SYSTEM.format(
        max_new=MAX_NEW_MEMORIES_PER_TURN, max_chars=MAX_MEMORY_TEXT_CHARS
    )
    document = {
        "turns": [
            {"turn": n, "assistant_before": turn.assistant_before, "user": turn.user_text}
            for n, turn in enumerate(turns, start=1)
        ],
        "current_memories": [
            {"id": item.id, "kind": item.kind, "text": item.text} for item in items if item.current
        ],
        "history": [{"id": item.id, "text": item.text} for item in items if not item.current],
    }
    body = json.dumps(document, ensure_ascii=False, indent=1)
    return [SystemMessage(content=system), HumanMessage(content=body)]


EXTRACTION_MAX_TOKENS = 1_500
"""The most an extraction's answer may take: a batch's operations, as JSON."""


def structured_extractor(
    model: BaseChatModel, structured: StructuredPolicy | str | None = None
) -> Runnable[Any, Any]:
    """`model` bound to the `ExtractionOutput` schema (`memory.structured`)."""
    return as_policy(structured).bind(model, ExtractionOutput, max_tokens=EXTRACTION_MAX_TOKENS)


def parse_extraction(raw: object) -> list[Operation]:
    """The model's answer as operations.

    Raises:
        InvalidExtractionOutput: when it does not match `ExtractionOutput`.
    """
    try:
        output = raw if isinstance(raw, ExtractionOutput) else ExtractionOutput.model_validate(raw)
    except ValidationError as exc:
        raise InvalidExtractionOutput(
            f"invalid extraction output: {exc.error_count()} errors"
        ) from exc
    return output.proposed()


@dataclass(frozen=True)
class _Added:
    """An item a turn of the batch adds, as a later turn's revocation may name it."""

    id: str
    text: str


def rules_operations(
    turns: Sequence[tuple[str, str | None]], items: Sequence[Said], history: Sequence[Said] = ()
) -> list[Operation]:
    """The rules stand-in's operations for a batch of `(user text, conversation id)`
    turns, given the user's current `items` and `history`: an `add` per statement worth
    keeping (`memory.longterm.rules.extract`), a `retire` (a change) or a `forget` per
    item a revocation names (`memory.longterm.revocation`; only a forgetting names
    history); an item a turn of the batch added is named `turn:N:K` (its turn, its place
    in the turn)."""
    operations: list[Operation] = []
    added: list[_Added] = []
    for n, (text, conversation_id) in enumerate(turns, start=1):
        found = extract(text)
        for clause in found.revocations:
            named = named_by(clause, [*items, *added, *(history if forgets(clause) else ())])
            if not named and not revoked_words(clause):  # a later bare "scratch that"
                kept = [item for item in items if isinstance(item, MemoryItem)]
                named = newest_said_in(kept, conversation_id)
            op: OperationName = "forget" if forgets(clause) else "retire"
            operations += [Operation(op=op, turn=n, quote=clause, id=key) for key in named]
        for k, proposal in enumerate(found.proposals, start=1):
            operations.append(
                Operation(
                    op="add",
                    turn=n,
                    quote=proposal.quote,
                    kind=proposal.kind,
                    text=proposal.text,
                    importance=proposal.importance,
                )
            )
            added.append(_Added(f"turn:{n}:{k}", proposal.text))
    return operations


RULES_EXTRACTOR = Extractor(
    "rules",
    lambda turns, items: rules_operations(
        [(t.user_text, t.conversation_id) for t in turns],
        [item for item in items if item.current],
        [item for item in items if not item.current],
    ),
)
"""The deterministic extractor (the offline stand-in)."""


def model_extractor(runnable: Runnable[Any, Any]) -> Extractor:
    """The `model` extractor over a structured-output runnable (`structured_extractor`):
    one call for the whole batch of owed turns."""

    def run(turns: Sequence[OwedTurn], items: Sequence[MemoryItem]) -> list[Operation]:
        return parse_extraction(runnable.invoke(extraction_prompt(turns, items)))

    return Extractor("model", run)
