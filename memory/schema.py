"""Persisted memory schemas: `ChatThreadMessage`, `ThreadState`, and id validation."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
)
from pydantic_core import PydanticCustomError

from memory.errors import INVALID_ID, INVALID_TEXT_TYPE, UNSTORABLE_TEXT, InvalidInput
from memory.limits import (
    HARD_MESSAGE_CAP,
    MAX_ID_CHARS,
    MAX_OPEN_QUESTION_CHARS,
    MAX_OPEN_QUESTIONS,
    MAX_PINNED_DECISION_CHARS,
    MAX_PINNED_DECISIONS,
    MAX_RECENT_MESSAGES,
    MAX_SUMMARY_CHARS,
)

SchemaT = TypeVar("SchemaT", bound=BaseModel)
Role = Literal["user", "assistant"]
UpkeepStatus = Literal["done", "pending", "failed"]

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""What UTF-8 cannot encode (a lone surrogate: JSON lets a client send one escaped) and NUL,
which PostgreSQL's text and jsonb refuse."""
_ID_PATTERN = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_ID_CHARS}}}")
SESSION_ID = "session id"
_SESSION_ID_PATTERN = re.compile(rf"(?:[a-z]{{1,16}}:)?[A-Za-z0-9_-]{{1,{MAX_ID_CHARS}}}")
"""A session id may open with one `mode:` (a signed-in user's session: `key:alice`);
other ids never hold a colon, so `session:conversation` splits one way only."""


def validated(schema: type[SchemaT], raw: object, error: type[ValueError]) -> SchemaT:
    """`raw` as a `schema` object, or `error` naming how many fields failed (not the words)."""
    if isinstance(raw, schema):
        return raw
    try:
        return schema.model_validate(raw)
    except ValidationError as exc:
        raise error(f"invalid {schema.__name__}: {exc.error_count()} errors") from exc


def validate_id(value: object, what: str = "id") -> str:
    """`value` if it is a valid session, conversation or message id, else `InvalidInput`."""
    pattern = _SESSION_ID_PATTERN if what == SESSION_ID else _ID_PATTERN
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise InvalidInput(INVALID_ID.format(what=what, limit=MAX_ID_CHARS))
    return value


def require_text(value: object, what: str = "text") -> str:
    """`value` stripped; `InvalidInput` for anything that is not a `str`."""
    if not isinstance(value, str):
        raise InvalidInput(INVALID_TEXT_TYPE.format(what=what, type_name=type(value).__name__))
    return value.strip()


def require_storable(text: str, what: str = "text") -> str:
    """`text` if `is_storable`, else `InvalidInput` (never repeating it), before any write."""
    if not is_storable(text):
        raise InvalidInput(UNSTORABLE_TEXT.format(what=what))
    return text


def is_storable(text: str) -> bool:
    """Whether every backend can store `text` (no `_UNSTORABLE` character)."""
    return _UNSTORABLE.search(text) is None


def new_message_id() -> str:
    """A fresh random message id."""
    return uuid.uuid4().hex


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


Clock = Callable[[], datetime]
"""A time source: returns the current time, timezone-aware in UTC."""


CLOCK_SKEW = timedelta(minutes=5)
"""How far ahead of this server's clock another server's may run."""
FUTURE_TIME = "a time after now"


def _aware_utc(value: datetime, info: ValidationInfo) -> datetime:
    """`value` in UTC. Validated with a context's `now` (an import's: a conversation dated
    in the future would otherwise outrank every other and never be idle), a time after
    it is refused, or taken as now when it is at most `CLOCK_SKEW` ahead."""
    value = value.astimezone(UTC)
    now = info.context.get("now") if isinstance(info.context, dict) else None
    if now is None or value <= now:
        return value
    if value > now + CLOCK_SKEW:
        raise PydanticCustomError("future_time", FUTURE_TIME)
    return now


UtcDatetime = Annotated[AwareDatetime, AfterValidator(_aware_utc)]
MessageId = Annotated[StrictStr, AfterValidator(partial(validate_id, what="message id"))]


class ChatThreadMessage(BaseModel):
    """One user-visible message of a completed turn. It has these four fields, no more."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: MessageId
    role: Role
    text: Annotated[StrictStr, AfterValidator(str.strip), Field(min_length=1)]
    created_at: UtcDatetime


class ThreadState(BaseModel):
    """A conversation's short-term memory: recent messages, summary, pinned decisions.

    `summary_version` counts the compactions that wrote the summary, `covered_until` is
    the newest message it covers. `upkeep`, `upkeep_owed` (the user messages whose
    extraction is owed) and `embedding_owed` are written in the turn's transaction, so a
    process that dies before its upkeep ran leaves the debt on record for the next one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: list[ChatThreadMessage] = Field(default_factory=list, max_length=HARD_MESSAGE_CAP)
    summary: StrictStr = Field(default="", max_length=MAX_SUMMARY_CHARS)
    pinned_decisions: list[
        Annotated[StrictStr, Field(min_length=1, max_length=MAX_PINNED_DECISION_CHARS)]
    ] = Field(default_factory=list, max_length=MAX_PINNED_DECISIONS)
    open_questions: list[
        Annotated[StrictStr, Field(min_length=1, max_length=MAX_OPEN_QUESTION_CHARS)]
    ] = Field(default_factory=list, max_length=MAX_OPEN_QUESTIONS)
    summary_version: StrictInt = Field(default=0, ge=0)
    covered_until: MessageId | None = None
    last_compacted_at: UtcDatetime | None = None
    version: StrictInt = Field(default=0, ge=0)
    upkeep: UpkeepStatus = "done"
    upkeep_owed: list[ChatThreadMessage] = Field(default_factory=list)
    embedding_owed: MessageId | None = None

    @property
    def compaction_owed(self) -> bool:
        """Whether the memory holds more messages than compaction lets stand."""
        return len(self.messages) > MAX_RECENT_MESSAGES

    @property
    def owes_upkeep(self) -> bool:
        """Whether an extraction, a compaction or an embedding is owed."""
        return bool(self.upkeep_owed) or self.compaction_owed or self.embedding_owed is not None

    def to_document(self) -> dict[str, Any]:
        """JSON-compatible form kept in the checkpoint (no pickled objects)."""
        return self.model_dump(mode="json")

    def with_texts(self, rule: Callable[[str], str]) -> ThreadState:
        """This memory with `rule` applied to its texts (messages, summary, pins, open
        questions; never an id or a role); a text that `rule` lengthens keeps its
        length, so that its limits still hold."""

        def kept(text: str) -> str:
            return rule(text)[: len(text)]

        def in_messages(messages: list[ChatThreadMessage]) -> list[ChatThreadMessage]:
            return [m.model_copy(update={"text": kept(m.text)}) for m in messages]

        return self.model_copy(
            update={
                "messages": in_messages(self.messages),
                "upkeep_owed": in_messages(self.upkeep_owed),
                "summary": kept(self.summary),
                "pinned_decisions": [kept(pin) for pin in self.pinned_decisions],
                "open_questions": [kept(question) for question in self.open_questions],
            }
        )

    @classmethod
    def from_document(cls, document: object) -> ThreadState:
        """A stored document validated back into a `ThreadState` (else `InvalidInput`)."""
        try:
            return cls.model_validate(document)
        except ValidationError as exc:
            raise InvalidInput(
                f"stored memory does not match ThreadState: {exc.error_count()} errors"
            ) from exc
