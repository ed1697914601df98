"""Long-term memory items: the stored value, its public DTO, and text normalisation.

An item is current until a later statement changes it ("I moved to Porto" after "I
live in Lisbon"): it is then history, `invalid_at` set and `superseded_by` the item
that replaced it (None for a plain revocation, "I'm no longer vegetarian"). History is
kept, never injected into a context, and listed apart; only a forgetting deletes an
item (and redacts its text everywhere). Every item carries its provenance: the
message, conversation, the user's own words (`quote`) and the time it came from.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr, ValidationError
from pydantic.alias_generators import to_camel

from memory.errors import InvalidInput
from memory.limits import MAX_IMPORTANCE, MAX_MEMORY_TEXT_CHARS, MAX_QUOTE_CHARS, MIN_IMPORTANCE
from memory.schema import UtcDatetime

MemoryKind = Literal["boundary", "preference", "goal", "style", "fact"]
MEMORY_KINDS: tuple[MemoryKind, ...] = get_args(MemoryKind)
Source = Literal["rules", "model", "explicit"]

INVALID_KIND = "kind must be one of: " + ", ".join(MEMORY_KINDS)
_CONTRACTIONS = {
    "i'm": "i am",
    "i've": "i have",
    "i'd": "i would",
    "i'll": "i will",
    "don't": "do not",
    "doesn't": "does not",
    "didn't": "did not",
    "can't": "cannot",
    "won't": "will not",
    "isn't": "is not",
    "aren't": "are not",
    "it's": "it is",
    "let's": "let us",
}
STRAIGHT_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "`": "'"})
_WORDS = re.compile(r"[\w']+")


def memory_id() -> str:
    """A fresh item id (opaque, URL-safe)."""
    return "m_" + uuid.uuid4().hex[:16]


def check_kind(kind: object) -> MemoryKind:
    """`kind` if it is one of `MEMORY_KINDS`, else `InvalidInput`."""
    if kind not in MEMORY_KINDS:
        raise InvalidInput(INVALID_KIND)
    return kind


def normalise(text: str) -> str:
    """`text` as compared for duplicates: NFKC, case-folded, contractions spelled out,
    punctuation and extra spaces gone. "I'm vegetarian!" and "i am  vegetarian" match."""
    text = unicodedata.normalize("NFKC", text).translate(STRAIGHT_QUOTES).casefold()
    words = [_CONTRACTIONS.get(word, word) for word in _WORDS.findall(text)]
    return " ".join(word.strip("'") for word in words if word.strip("'"))


def _one_line(text: str) -> str:
    return " ".join(text.split())


StoredText = Annotated[
    StrictStr, AfterValidator(_one_line), Field(min_length=1, max_length=MAX_MEMORY_TEXT_CHARS)
]


class Provenance(BaseModel):
    """Where an item came from: the user's message (None when added directly), its
    conversation, the user's own words that state it, and when they were said."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    message_id: StrictStr | None = None
    conversation_id: StrictStr | None = None
    quote: Annotated[StrictStr, Field(max_length=MAX_QUOTE_CHARS)] = ""
    at: UtcDatetime


class MemoryItem(BaseModel):
    """One long-term item as stored (the store item's value) and used internally; `key`
    is its text normalised (for duplicates), `subject` an earlier release's."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: StrictStr
    kind: MemoryKind
    text: StoredText
    importance: int = Field(ge=MIN_IMPORTANCE, le=MAX_IMPORTANCE)
    created_at: UtcDatetime
    updated_at: UtcDatetime
    conversation_id: StrictStr | None = None
    key: StrictStr
    subject: StrictStr | None = None
    source: Source = "explicit"
    provenance: Provenance | None = None
    invalid_at: UtcDatetime | None = None
    superseded_by: StrictStr | None = None

    @property
    def current(self) -> bool:
        """Whether it holds now (not changed by a later statement)."""
        return self.invalid_at is None

    def to_value(self) -> dict[str, Any]:
        """The store item's value (JSON; the id is the store key)."""
        return self.model_dump(mode="json", exclude={"id"})

    @classmethod
    def from_value(cls, key: str, value: dict[str, Any]) -> MemoryItem | None:
        """The item stored under `key`, or None for a value that does not validate."""
        try:
            # a value without a source is from a release before sources: the rules'
            item = cls.model_validate({"source": "rules", **value, "id": key})
        except ValidationError:
            return None
        if item.source == "rules" and item.current:
            # the retired rules extractor's items are history: listed, forgettable,
            # never recalled (kept so, the first write that touches them)
            return item.model_copy(update={"invalid_at": item.updated_at})
        return item

    def to_dto(self) -> dict[str, Any]:
        """The public shape, camelCase: the fields `_PUBLIC` names, its provenance's too (a
        field added later stays internal until named there). History says when it stopped
        holding and what replaced it."""
        shown = _PUBLIC if self.current else _PUBLIC | _HISTORY
        return _camel(self.model_dump(include=shown))


_PUBLIC: dict[str, Any] = dict.fromkeys(
    ["id", "kind", "text", "importance", "created_at", "updated_at", "conversation_id"], True
) | {"provenance": {"message_id", "conversation_id", "quote", "at"}}
_HISTORY = dict.fromkeys(["invalid_at", "superseded_by"], True)


def _camel(value: Any) -> Any:
    """`value` with camelCase keys and its times in ISO 8601 (`+00:00`, as `isoformat`)."""
    if isinstance(value, dict):
        return {to_camel(key): _camel(field) for key, field in value.items()}
    return value.isoformat() if isinstance(value, datetime) else value


def tidy(text: str) -> str:
    """A text as stored: one line, first letter capitalised, at most
    `MAX_MEMORY_TEXT_CHARS` characters (cut at a word)."""
    text = _one_line(text).strip(" ,;")
    if text and text[0].isalpha() and text[0].islower():
        text = text[0].upper() + text[1:]
    if len(text) > MAX_MEMORY_TEXT_CHARS:
        cut = text[: MAX_MEMORY_TEXT_CHARS - 1]
        text = cut.rsplit(" ", 1)[0].rstrip(" ,;") + "…"
    return text
