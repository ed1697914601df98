"""The write gate: what an extraction may change, decided in code.

For both extractors and for items added directly, in order:
1. explicit: only what the user said; a model's proposal must be grounded in the
   user's own words, never inferred;
2. reusable: a one-off request or a passing state is no lasting fact;
3. no secrets, ever (`memory.longterm.secrets`);
4. duplicate: a normalised duplicate refreshes `updated_at` and adds nothing;
5. conflict: a statement on the same subject supersedes the old item, and a
   revocation retires it; superseded and retired items are deleted, so they are never
   recalled again.
At most `MAX_NEW_MEMORIES_PER_TURN` new items per turn; past `MAX_MEMORY_ITEMS` the
least important, then the oldest, items go (never the ones this turn added).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from memory.limits import MAX_MEMORY_ITEMS, MAX_NEW_MEMORIES_PER_TURN
from memory.longterm.analysis import is_question
from memory.longterm.items import MemoryItem, MemoryKind, Source, memory_id, normalise
from memory.longterm.recall import tokens
from memory.longterm.rules import (
    Extraction,
    Proposal,
    Verdict,
    has_cue,
    is_negated,
    strip_remember,
    subject_of,
    tidy,
    verdict,
)
from memory.longterm.secrets import find_secret

REFUSED_EMPTY = "there is nothing to remember in that text"
REFUSED_ONE_OFF = "that reads as a one-off request, not something that holds in future"
REFUSED_TRANSIENT = "that reads as a passing state, not something that holds in future"
REFUSED_INFERRED = "only what the user said is remembered, never what was inferred"
REFUSED_SECRET = "that looks like {kind}; secrets are never remembered"
REFUSED_QUESTION = "a question is not something to remember"
REFUSED_OTHER = "that is about someone else, not about you"
REFUSED_QUOTED = "quoted, pasted or forwarded text is not something you said about yourself"
REFUSED_NOT_STATED = "that does not state something about you that holds in future"
_REASONS = {
    Verdict.EMPTY: REFUSED_EMPTY,
    Verdict.QUOTED: REFUSED_QUOTED,
    Verdict.QUESTION: REFUSED_QUESTION,
    Verdict.OTHER: REFUSED_OTHER,
    Verdict.ONE_OFF: REFUSED_ONE_OFF,
    Verdict.TRANSIENT: REFUSED_TRANSIENT,
}
REFUSED_TURN_LIMIT = "at most {limit} new items are remembered per turn"

GROUNDED_SHARE = 0.6
"""Share of a model proposal's words that must appear in what the user said."""
NEAR_DUPLICATE = 0.8
"""Token overlap (Jaccard) at which two statements of one kind say the same thing."""
_META_TOKENS = tokens(
    "user users user's prefers prefer preference wants want likes like name named called "
    "says said stated mentioned answers answer responses response replies reply language "
    "they them their 用户 偏好"
)
_REVOCATION_TOKENS = tokens(
    "no longer anymore any more forget that about stop never mind disregard not want like "
    "use using prefer true scratch said what earlier ignore actually these days now "
    "不再 别再 忘记 忘掉 取消 喜欢 我不 现在 最近 已经 说过 之前 刚才 吧"
)
_ZH_SCAFFOLD = re.compile(
    r"我们|我|现在|最近|已经|早就|如今|目前|不再|别再|再|不|没|了|都|也|吧|呢|啦"
)
"""The words of a Chinese revocation that say it is one ("我最近不跑步了" is about 跑步)."""
_POLARITY_TOKENS = tokens("not don't do no never dislike hate like love prefer want avoid")


@dataclass(frozen=True)
class Refusal:
    """A proposal the gate turned down, and why (the reason is safe to show)."""

    text: str
    reason: str


@dataclass(frozen=True)
class WritePlan:
    """What one write changes: items to put and ids to delete, applied together.

    Attributes:
        added: new items.
        refreshed: existing items said again (their `updated_at` moves on).
        retired: ids superseded by a new statement or revoked.
        evicted: ids removed to keep the session within `MAX_MEMORY_ITEMS`.
        refused: proposals the gate turned down.
    """

    added: tuple[MemoryItem, ...] = ()
    refreshed: tuple[MemoryItem, ...] = ()
    retired: tuple[str, ...] = ()
    evicted: tuple[str, ...] = ()
    refused: tuple[Refusal, ...] = field(default=())

    @property
    def puts(self) -> tuple[MemoryItem, ...]:
        return self.added + self.refreshed

    @property
    def deletes(self) -> tuple[str, ...]:
        return self.retired + self.evicted

    @property
    def changed(self) -> bool:
        return bool(self.puts or self.deletes)

    @property
    def remembered(self) -> tuple[str, ...]:
        """Texts of the items added or refreshed, as `TurnResult.remembered` reports."""
        return tuple(item.text for item in self.puts)


def grounded(proposal: str, user_text: str) -> bool:
    """Whether a model's proposal restates the user's words (explicit, not inferred)."""
    own = tokens(proposal) - _META_TOKENS
    if not own:
        return False
    said = tokens(user_text)
    return len(own & said) / len(own) >= GROUNDED_SHARE


def refusal_reason(text: str, said: str | None = None, source: Source = "explicit") -> str | None:
    """Why the gate's checks 2-3 turn `text` down, or None when they let it through.

    Args:
        text: the proposed item.
        said: what the user said, when a model wrote `text`.
        source: `rules` proposals were judged clause by clause already (only the secret
            check is repeated); an `explicit` text is judged as the user typed it; a
            `model` proposal stands only if what the user said holds something to keep
            by the same analysis (a model's restatement, "Answer in English", may drop
            the words that made it lasting, "from now on"), and is no question itself.
    """
    for checked in (text, said):
        secret = find_secret(checked) if checked else None
        if secret is not None:
            return REFUSED_SECRET.format(kind=secret.value)
    if source == "rules":
        return None
    if source == "model":
        if said is not None and not has_cue(said):
            found = verdict(said)
            return _REASONS[found] if found is not None else REFUSED_NOT_STATED
        return REFUSED_QUESTION if is_question(text) else None
    found = verdict(text, explicit=True)
    return None if found is None else _REASONS[found]


def _same_statement(item: MemoryItem, key: str, kind: MemoryKind, words: frozenset[str]) -> bool:
    if item.key == key:
        return True
    if item.kind != kind:
        return False
    other = tokens(item.text)
    union = other | words
    return bool(union) and len(other & words) / len(union) >= NEAR_DUPLICATE


def _supersedes(item: MemoryItem, subject: str | None, text: str) -> bool:
    """Whether a new statement `text` on `subject` replaces `item`."""
    if subject is not None and item.subject == subject:
        return True
    core = tokens(text) - _POLARITY_TOKENS
    return (
        bool(core)
        and core == tokens(item.text) - _POLARITY_TOKENS
        and (is_negated(text) != is_negated(item.text))
    )


class Said(Protocol):
    """Anything with an id and a text (an item, or an item as a model was shown it)."""

    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...


def revoked_by(clause: str, items: Iterable[Said]) -> list[str]:
    """Ids of the items a revocation clause ("I no longer want Chinese") is about: those
    sharing the most of its words, when they share two, or a third of them."""
    words = tokens(_ZH_SCAFFOLD.sub(" ", clause)) - _REVOCATION_TOKENS
    if not words:
        return []
    overlaps = [(len(words & tokens(item.text)), item.id) for item in items]
    best = max((count for count, _ in overlaps), default=0)
    # one shared word is enough when it is a third of what the clause is about (a short
    # Chinese clause, "我不再吃辣了", is about a few character pairs)
    if best == 0 or (best < 2 and best * 3 < len(words)):
        return []
    return [item_id for count, item_id in overlaps if count == best]


def _revoked(clause: str, items: Sequence[MemoryItem], conversation_id: str | None) -> list[str]:
    """What a revocation retires: the items on its subject ("I'm no longer vegetarian"
    retires the diet), else those it names by its words; a bare "scratch that" /
    "忘了吧" retires the newest item said in this conversation."""
    subject = subject_of(clause)
    if subject is not None:
        on_subject = [item.id for item in items if item.subject == subject]
        if on_subject:
            return on_subject
    if not tokens(_ZH_SCAFFOLD.sub(" ", clause)) - _REVOCATION_TOKENS:
        said_here = [item for item in items if item.conversation_id == conversation_id]
        if conversation_id is None or not said_here:
            return []
        return [max(said_here, key=lambda item: item.updated_at).id]
    return revoked_by(clause, items)


def _retired(
    extraction: Extraction, active: dict[str, MemoryItem], conversation_id: str | None
) -> list[str]:
    """The ids an extraction retires: those it names, then those its revocations hit."""
    retired = [item_id for item_id in extraction.retire if item_id in active]
    for clause in extraction.revocations:
        remaining = [item for item in active.values() if item.id not in retired]
        retired.extend(_revoked(clause, remaining, conversation_id))
    return retired


def _evicted(kept: Sequence[MemoryItem], new: int) -> list[str]:
    """The least important, then oldest, of `kept` that must go for `new` items to fit
    within `MAX_MEMORY_ITEMS`."""
    overflow = len(kept) + new - MAX_MEMORY_ITEMS
    if overflow <= 0:
        return []
    by_worth = sorted(kept, key=lambda item: (item.importance, item.updated_at))
    return [item.id for item in by_worth[:overflow]]


def _admit_all(
    extraction: Extraction,
    active: dict[str, MemoryItem],
    retired: list[str],
    user_text: str,
    conversation_id: str | None,
    now: datetime,
    source: Source,
) -> tuple[list[MemoryItem], dict[str, MemoryItem], list[Refusal]]:
    """(the items added, the items said again, the refusals) of an extraction's
    proposals; what a new item supersedes is appended to `retired`."""
    added: list[MemoryItem] = []
    refreshed: dict[str, MemoryItem] = {}
    refused: list[Refusal] = []
    for proposal in extraction.proposals:
        outcome = _admit(proposal, active, retired, added, user_text, source)
        if outcome is None:
            continue
        if isinstance(outcome, Refusal):
            refused.append(outcome)
            continue
        text, key, subject, duplicate = outcome
        if duplicate is not None:
            importance = max(duplicate.importance, proposal.importance)
            refreshed[duplicate.id] = duplicate.model_copy(
                update={"updated_at": now, "importance": importance}
            )
            continue
        if len(added) >= MAX_NEW_MEMORIES_PER_TURN:
            refused.append(
                Refusal(text, REFUSED_TURN_LIMIT.format(limit=MAX_NEW_MEMORIES_PER_TURN))
            )
            continue
        retired.extend(
            item.id
            for item in active.values()
            if item.id not in retired
            and item.id not in refreshed
            and _supersedes(item, subject, text)
        )
        added.append(
            MemoryItem(
                id=memory_id(),
                kind=proposal.kind,
                text=text,
                importance=proposal.importance,
                created_at=now,
                updated_at=now,
                conversation_id=conversation_id,
                key=key,
                subject=subject,
                source=source,
            )
        )
    return added, refreshed, refused


def plan_write(
    current: Sequence[MemoryItem],
    extraction: Extraction,
    *,
    user_text: str,
    conversation_id: str | None,
    now: datetime,
    source: Source,
) -> WritePlan:
    """Pass `extraction` through the gate against the session's `current` items.

    Args:
        current: the session's items, as stored.
        extraction: proposals, revocation clauses and ids to retire.
        user_text: what the user said (model proposals must be grounded in it).
        conversation_id: where it was said (None for items added directly).
        now: the write's time.
        source: rules, model or explicit.
    """
    active = {item.id: item for item in current}
    retired = _retired(extraction, active, conversation_id)
    added, refreshed, refused = _admit_all(
        extraction, active, retired, user_text, conversation_id, now, source
    )
    for item_id in retired:  # an item said again and revoked in one turn is revoked
        refreshed.pop(item_id, None)
    kept = [item for item in active.values() if item.id not in retired]
    evicted = _evicted(kept, len(added))
    for item_id in evicted:
        refreshed.pop(item_id, None)
    return WritePlan(
        added=tuple(added),
        refreshed=tuple(refreshed.values()),
        retired=tuple(dict.fromkeys(retired)),
        evicted=tuple(evicted),
        refused=tuple(refused),
    )


def _admit(
    proposal: Proposal,
    active: dict[str, MemoryItem],
    retired: Sequence[str],
    added: Sequence[MemoryItem],
    user_text: str,
    source: Source,
) -> Refusal | tuple[str, str, str | None, MemoryItem | None] | None:
    """Checks 1-4 for one proposal: a refusal, (text, key, subject, duplicate of), or
    None for a statement this turn already made."""
    text = tidy(strip_remember(proposal.text))
    key = normalise(text)
    if not key:
        return Refusal(proposal.text, REFUSED_EMPTY)
    if source == "model" and not grounded(text, user_text):
        return Refusal(text, REFUSED_INFERRED)
    reason = refusal_reason(text, user_text if source == "model" else None, source)
    if reason is not None:
        return Refusal(text, reason)
    words = tokens(text)
    for item in added:
        if _same_statement(item, key, proposal.kind, words):
            return None
    for item in active.values():
        if item.id not in retired and _same_statement(item, key, proposal.kind, words):
            return text, key, subject_of(text), item
    return text, key, subject_of(text), None
