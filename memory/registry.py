"""The conversation registry of a session: at most ten conversations, newest first.

A new chat is a draft and stores nothing. When its first message is accepted the
draft becomes *pending* (owned by the session, resumable, not listed); once its first
turn is written, or a task list in it stops for its review, it is listed (a listed
conversation waiting for a review says so: `review`). Past `MAX_CONVERSATIONS`, the
least recently active conversation is pruned and the caller deletes its threads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from memory.errors import ConversationNotFound
from memory.hydration import assert_client_safe
from memory.limits import MAX_CONVERSATIONS, MAX_FORGOTTEN_MARKS, MAX_TITLE_CHARS, MAX_TOMBSTONES
from memory.schema import MessageId, UtcDatetime, new_message_id
from memory.text import clamp
from memory.tombstones import ForgottenMark


class ConversationEntry(BaseModel):
    """One listed conversation: `key` is `H(session:conversation)`, what retention needs
    of its thread ids (an entry older than keys has none until its next turn)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: MessageId
    title: StrictStr = Field(max_length=MAX_TITLE_CHARS)
    created_at: UtcDatetime
    last_active_at: UtcDatetime
    key: StrictStr | None = None
    review: StrictBool = False

    def to_dto(self) -> dict[str, Any]:
        """What a client reads of it (an export, the listing), camelCase."""
        return {
            "id": self.id,
            "title": self.title,
            "createdAt": self.created_at.isoformat(),
            "lastActiveAt": self.last_active_at.isoformat(),
        }


class RegistryState(BaseModel):
    """A session's registry, stored in its `chat-registry:` thread."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    conversations: list[ConversationEntry] = Field(default_factory=list)
    pending: list[MessageId] = Field(default_factory=list, max_length=MAX_CONVERSATIONS)
    selected_conversation_id: MessageId | None = None
    version: StrictInt = Field(default=0, ge=0)
    forgotten: list[StrictStr] = Field(default_factory=list, max_length=MAX_TOMBSTONES)
    """Tombstones: the ids of the long-term items the user forgot, newest last. A turn
    that recalled one of them before it was forgotten redacts its text from what it writes."""
    forgotten_marks: list[ForgottenMark] = Field(
        default_factory=list, max_length=MAX_FORGOTTEN_MARKS
    )
    """What the forgotten items and the words that stated them were, as keyed hashes
    (`memory.tombstones`), newest last: an import forgets each sentence that repeats one."""
    imported_forgotten: list[StrictStr] = Field(default_factory=list, max_length=MAX_TOMBSTONES)
    """Tombstones an imported document brought (kept apart: they never displace the
    session's own), newest last."""
    history_cleared_at: UtcDatetime | None = None
    """When the session's archive was last forgotten: a summary that may quote turns from
    before it is never archived afterwards."""

    def owns(self, conversation_id: str) -> bool:
        """Whether the conversation is listed or pending in this session."""
        return conversation_id in self.pending or self.entry(conversation_id) is not None

    def entry(self, conversation_id: str) -> ConversationEntry | None:
        """The conversation's entry, when it is listed."""
        return next((e for e in self.conversations if e.id == conversation_id), None)


@dataclass(frozen=True)
class RegistryChange:
    """A new registry state and the conversations it dropped (whose threads must go)."""

    state: RegistryState
    pruned: tuple[str, ...] = ()


new_conversation_id = new_message_id
"""A fresh conversation id for a draft (nothing is stored): random, as a message's."""


# Markdown a title shows as plain text: a link's target, emphasis and code marks, and a
# line's heading, quote or list marker (the page and the CLI print titles as text)
_MARKDOWN_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKDOWN_MARKS = re.compile(r"(\*\*|__|~~|`+|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w))")
_MARKDOWN_LINE_START = re.compile(r"^\s{0,3}(#{1,6}\s+|>\s?|[-*+]\s+|\d+[.)]\s+)", re.MULTILINE)


def make_title(text: str) -> str:
    """The first user message as plain text (Markdown marks dropped), whitespace
    collapsed, at most `MAX_TITLE_CHARS` characters."""
    plain = _MARKDOWN_LINE_START.sub("", _MARKDOWN_LINK.sub(r"\1", text))
    title = " ".join(_MARKDOWN_MARKS.sub("", plain).split()) or " ".join(text.split())
    return clamp(title, MAX_TITLE_CHARS)


def ordered(entries: list[ConversationEntry]) -> list[ConversationEntry]:
    """Newest activity first; creation breaks ties."""
    return sorted(entries, key=lambda e: (e.last_active_at, e.created_at), reverse=True)


def accept_draft(state: RegistryState, conversation_id: str) -> RegistryChange:
    """Mark a draft whose first message was accepted as pending and select it."""
    if state.owns(conversation_id):
        return RegistryChange(state)
    pending = [*state.pending, conversation_id]
    kept = {"pending": pending[-MAX_CONVERSATIONS:], "selected_conversation_id": conversation_id}
    return RegistryChange(state.model_copy(update=kept), tuple(pending[:-MAX_CONVERSATIONS]))


def _without(state: RegistryState, gone: Collection[str], **update: Any) -> RegistryState:
    """`state` (with `update`) without the conversations `gone`, listed, pending or selected."""
    selected = state.selected_conversation_id
    return state.model_copy(
        update={
            "conversations": [e for e in state.conversations if e.id not in gone],
            "pending": [cid for cid in state.pending if cid not in gone],
            "selected_conversation_id": None if selected in gone else selected,
            **update,
        }
    )


def with_listed(state: RegistryState, entries: list[ConversationEntry]) -> RegistryChange:
    """`state` listing `entries` (a turn's, or an import's beside the session's own), newest
    activity first; past `MAX_CONVERSATIONS` the least recently active are pruned."""
    entries = ordered(entries)
    pruned = tuple(e.id for e in entries[MAX_CONVERSATIONS:])
    kept = state.model_copy(update={"conversations": entries[:MAX_CONVERSATIONS]})
    return RegistryChange(_without(kept, pruned), pruned)


def record_turn(
    state: RegistryState,
    conversation_id: str,
    text: str,
    now: datetime,
    key: str | None = None,
    *,
    retitle: bool = False,
    review: bool = False,
) -> RegistryChange:
    """A turn was written: list the conversation (titled by its first message, `text`) or
    touch it, pruning past `MAX_CONVERSATIONS`; a review it waited for is over unless
    `review` (a task list stopped for it). `retitle`: the turn is the first one stored (a
    review it replaced had titled the conversation)."""
    entries = list(state.conversations)
    entry = state.entry(conversation_id)
    fields: dict[str, Any] = {"last_active_at": now, "review": review}
    fields["key"] = key if entry is None else key or entry.key
    if entry is None or retitle:
        fields["title"] = make_title(text)
    if entry is None:
        entries.append(ConversationEntry(id=conversation_id, created_at=now, **fields))
    else:
        entries[entries.index(entry)] = entry.model_copy(update=fields)
    pending = [cid for cid in state.pending if cid != conversation_id]
    return with_listed(state.model_copy(update={"pending": pending}), entries)


def settle_review(state: RegistryState, conversation_id: str, *, unlist: bool) -> RegistryChange:
    """A review ended without a turn to store (rejected, or the run failed): the flag is
    cleared, and a conversation that stores nothing (`unlist`) goes back to pending
    (still the session's, no longer listed as if it held something)."""
    entry = state.entry(conversation_id)
    if entry is None or not entry.review:
        return RegistryChange(state)
    if not unlist:
        entries = [
            e.model_copy(update={"review": False}) if e is entry else e for e in state.conversations
        ]
        return RegistryChange(state.model_copy(update={"conversations": entries}))
    pending = [*state.pending, conversation_id][-MAX_CONVERSATIONS:]
    selected = state.selected_conversation_id  # still the session's: it stays selected
    return RegistryChange(
        _without(state, {conversation_id}, pending=pending, selected_conversation_id=selected)
    )


def select(state: RegistryState, conversation_id: str) -> RegistryChange:
    """Select an owned conversation (`ConversationNotFound`: not this session's); the
    order does not change."""
    if not state.owns(conversation_id):
        raise ConversationNotFound()
    return RegistryChange(state.model_copy(update={"selected_conversation_id": conversation_id}))


def remove(state: RegistryState, conversation_id: str) -> RegistryChange:
    """Remove an owned conversation (`ConversationNotFound`: not this session's); the
    caller deletes its threads."""
    if not state.owns(conversation_id):
        raise ConversationNotFound()
    return RegistryChange(_without(state, {conversation_id}), (conversation_id,))


def expire(
    state: RegistryState, cutoff: datetime, *, busy: Collection[str] = ()
) -> tuple[RegistryState, list[ConversationEntry]]:
    """The registry without the conversations idle since before `cutoff` that have a key
    (their threads can be found) and are not `busy`, and those conversations."""
    idle = [
        e for e in state.conversations if e.last_active_at < cutoff and e.key and e.id not in busy
    ]
    return _without(state, {entry.id for entry in idle}), idle


def archives_summaries(registry: RegistryState, conversation_id: str) -> bool:
    """Whether a summary this conversation's compaction replaces may be archived: not when
    the session's archive was forgotten since the conversation began (its summary may
    quote turns from before, and a cleared archive stays cleared)."""
    cleared, entry = registry.history_cleared_at, registry.entry(conversation_id)
    return cleared is None or (entry is not None and entry.created_at > cleared)


def entry_title(registry: RegistryState, conversation_id: str) -> str:
    """The conversation's title in the registry (empty when it is not listed)."""
    entry = registry.entry(conversation_id)
    return entry.title if entry is not None else ""


def registry_dto(state: RegistryState) -> dict[str, Any]:
    """What `conversations()` returns: `{selectedConversationId, conversations, limit}`."""
    dto = {
        "selectedConversationId": state.selected_conversation_id,
        "conversations": [
            {**entry.to_dto(), "reviewPending": entry.review}
            for entry in ordered(state.conversations)
        ],
        "limit": MAX_CONVERSATIONS,
    }
    assert_client_safe(dto)
    return dto


RegistryUpdate = Callable[[RegistryState], RegistryChange]
