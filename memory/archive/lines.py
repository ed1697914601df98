"""Archived lines: what a turn's write appends, and what a search reads back."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

ArchiveRole = Literal["user", "assistant", "summary"]
ROLES: tuple[ArchiveRole, ...] = ("user", "assistant", "summary")
EMBEDDED_ROLES: tuple[ArchiveRole, ...] = ("user",)
"""The roles whose lines are embedded (with `AGENT_EMBEDDINGS_MODEL`): the user's (an
answer is found by its words, or as the neighbour of the user's line it answers)."""
REDACTED = "[redacted]"
"""An archived text that discloses a secret is kept as this (memory keeps the original)."""
FORGOTTEN = "[forgotten]"
"""An archived text the user asked to forget (through a profile item) is kept as this."""


@dataclass(frozen=True)
class ArchiveRow:
    """One line to archive: `session_key` is `H(session)` (no raw session id in storage),
    `conversation_key` `H(session:conversation)` (what deleting the conversation removes),
    `title` the conversation's when the line was written; a summary's `message_id` is
    `summary-{version}`, its `created_at` when it was superseded, its `covers` the first
    and last message ids it covered ("a..b"); `text` is what memory stored (`[redacted]`
    when it discloses a secret), `indexed` what a search finds it by when not its whole
    text (an answer without what it repeats of its own context)."""

    session_key: str
    conversation_key: str
    conversation_id: str
    title: str
    message_id: str
    role: ArchiveRole
    created_at: datetime
    text: str
    covers: str | None = None
    indexed: str | None = None


COLUMNS = tuple(f.name for f in dataclasses.fields(ArchiveRow))
"""The columns of `archive_lines` an `ArchiveRow` is written to and read from, in order."""


def lines_sql(mark: str) -> str:
    """The statement that reads a session's lines back as `ArchiveRow`s (the session key
    its one parameter, written `mark`), in the order they were archived."""
    return f"SELECT {', '.join(COLUMNS)} FROM archive_lines WHERE session_key = {mark} ORDER BY id"


@dataclass(frozen=True)
class ArchivedLine:
    """One archived line as a search reads it back: `id` is the row's (what the `memory`
    event reports), `score` its lexical relevance (higher is better, 0 when not ranked),
    `distance` a hit's cosine distance to the query's embedding (0 the same direction, 2
    the opposite; None when not found that way); when asked for, `previous` and
    `following` are the lines said just before and after it in its conversation,
    `said_before` and `said_after` the user's lines before and after it, `said_later` the
    user's line after that one."""

    id: int
    conversation_id: str
    title: str
    message_id: str
    role: ArchiveRole
    created_at: datetime
    text: str
    score: float = 0.0
    distance: float | None = None
    previous: ArchivedLine | None = field(default=None, compare=False)
    following: ArchivedLine | None = field(default=None, compare=False)
    said_before: ArchivedLine | None = field(default=None, compare=False)
    said_after: ArchivedLine | None = field(default=None, compare=False)
    said_later: ArchivedLine | None = field(default=None, compare=False)

    @functools.cached_property
    def day(self) -> str:
        """The day it was said, `YYYY-MM-DD` (UTC)."""
        return self.created_at.date().isoformat()

    def to_dto(self) -> dict[str, Any]:
        """The public shape: camelCase, no keys or scores."""
        return {
            "id": self.id,
            "conversationId": self.conversation_id,
            "title": self.title,
            "messageId": self.message_id,
            "role": self.role,
            "createdAt": self.created_at.isoformat(),
            "text": self.text,
        }


def _moment(value: datetime | str) -> datetime:
    # SQLite keeps a time as ISO text, PostgreSQL reads back a datetime
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def _neighbour(row: Sequence[Any], at: int) -> ArchivedLine | None:
    if row[at] is None:
        return None
    line = row[at], *row[1:3], *row[at + 1 : at + 3], _moment(row[at + 3]), row[at + 4]
    return ArchivedLine(*line)


def read_line(row: Sequence[Any]) -> ArchivedLine:
    """A row of either backend's search statement as a hit with its neighbours: the hit's
    line and score, then `(id, message_id, role, created_at, text)` of each neighbour
    (previous, following, said before, said after, said later), then its distance."""
    distance = None if row[33] is None else float(row[33])
    neighbours = (_neighbour(row, at) for at in range(8, 33, 5))
    line = *row[:5], _moment(row[5]), row[6], float(row[7]), distance, *neighbours
    return ArchivedLine(*line)


@dataclass(frozen=True)
class Frequencies:
    """How many of the session's lines searched (`total`) hold each of a query's terms
    (`lines_with`; a backend may stop counting past a few percent of `total`: such a term
    says next to nothing about a line)."""

    lines_with: Mapping[str, int]
    total: int


@dataclass(frozen=True)
class ArchiveWrite:
    """What one transaction of the session's documents changes in the archive: the lines
    of `drop_conversations` (conversation keys: deleted conversations) and of
    `drop_session` (its archive forgotten) go, `rows` are appended (a line already
    archived is left as it is)."""

    rows: Sequence[ArchiveRow] = ()
    drop_conversations: Sequence[str] = ()
    drop_session: str | None = None

    def __bool__(self) -> bool:
        return bool(self.rows or self.drop_conversations or self.drop_session)
