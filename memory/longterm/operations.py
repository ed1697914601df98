"""Operations on a user's long-term items, as an extractor proposes them: what each
changes, and the user's words (`quote`) that state it. `ExtractionOutput` is the
extraction model's structured-output schema, one model per operation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.longterm.items import MemoryKind


@dataclass(frozen=True)
class OwedTurn:
    """A completed turn owed an extraction (`assistant_before`: the line it answered, ""
    when none is known)."""

    message_id: str
    conversation_id: str
    user_text: str
    assistant_before: str
    at: datetime


class Operation(BaseModel):
    """One change to the user's items, with the user's words that state it (the flat
    form the gate reads; the model writes `Proposed`)."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["add", "update", "retire", "forget"]
    turn: int
    """The number (1-based) of the turn the quote comes from."""
    quote: str
    id: str | None = None
    """For update, retire, forget: the item."""
    kind: MemoryKind | None = None
    text: str | None = None
    importance: int | None = None


class _Proposed(BaseModel):
    """What every proposed operation carries: where its quote comes from, and the quote."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(description="the number of the turn the quote comes from")
    quote: str = Field(
        min_length=1, description="the user's exact words in that turn that state it"
    )


class ProposedAdd(_Proposed):
    op: Literal["add"] = Field(description="add a new item")
    kind: MemoryKind = Field(description="boundary, preference, goal, style or fact")
    text: str = Field(min_length=1, description="the item, one subject, first person")
    importance: int | None = Field(default=None, description="1 (minor) to 5 (always respect)")


class ProposedUpdate(_Proposed):
    op: Literal["update"] = Field(description="update an item that changed")
    id: str = Field(min_length=1, description="the item")
    kind: MemoryKind | None = Field(
        default=None, description="boundary, preference, goal, style or fact (default: kept)"
    )
    text: str = Field(min_length=1, description="the item as it now holds, first person")
    importance: int | None = Field(default=None, description="1 (minor) to 5 (always respect)")


class ProposedRetire(_Proposed):
    op: Literal["retire"] = Field(description="retire an item that no longer holds")
    id: str = Field(min_length=1, description="the item")


class ProposedForget(_Proposed):
    op: Literal["forget"] = Field(description="forget an item the user asked you to forget")
    id: str = Field(min_length=1, description="the item")


Proposed = Annotated[
    ProposedAdd | ProposedUpdate | ProposedRetire | ProposedForget, Field(discriminator="op")
]
"""One operation as the model writes it: each op requires what it needs (an `add` its
`text` and `kind`), so a grammar-constrained model cannot leave them out."""


def _from_flat(op: Operation) -> dict[str, Any]:
    fields = op.model_dump(exclude_none=True)
    return {"kind": "fact", **fields} if op.op == "add" else fields


class ExtractionOutput(BaseModel):
    """What the extraction model returns (its structured-output schema)."""

    model_config = ConfigDict(extra="forbid")

    operations: list[Proposed] = Field(description="The changes; empty when there are none.")

    @field_validator("operations", mode="before")
    @classmethod
    def _flat(cls, operations: Any) -> Any:
        # in-process extractors (the offline model, scripted ones) build flat
        # `Operation`s; an add of theirs with no kind is a fact, as the gate takes it
        if not isinstance(operations, list):
            return operations
        return [_from_flat(op) if isinstance(op, Operation) else op for op in operations]

    def proposed(self) -> list[Operation]:
        """The operations, flat (the gate reads every field of each)."""
        return [Operation(**op.model_dump()) for op in self.operations]
