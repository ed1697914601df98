"""The write gate: every operation an extractor proposes is verified in code.

Whoever proposed it (a model, an explicit request, the memory form), an operation
stands only when:
1. its `quote` is the user's own words in that turn, whole words, outside quoted,
   pasted, forwarded or role-forged parts (`memory.longterm.evidence`);
2. neither the item nor its quote discloses a secret;
3. the item restates its quote (or the assistant's line a short answer answered:
   "Yes, Denver."), within the limits;
4. an item it changes, retires or forgets is this session's; only a `forget` whose quote
   holds a documented forget form deletes, and not when it names several items (the
   user is asked which); any other `forget` is a `retire`, keeping history;
5. a near duplicate refreshes the item it repeats; at most `MAX_NEW_MEMORIES_PER_TURN`
   new items per turn, each on a distinct quote.
Changes are kept as history (a statement older than the item it would replace becomes
that item's history). Nothing supersedes an item unless an operation names it: code
never guesses what a statement is about.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.limits import (
    MAX_HISTORY_ITEMS,
    MAX_IMPORTANCE,
    MAX_MEMORY_ITEMS,
    MAX_NEW_MEMORIES_PER_TURN,
    MAX_QUOTE_CHARS,
    MIN_IMPORTANCE,
)
from memory.longterm.evidence import MESSAGES, Reason, grounded, normalised_words, verify
from memory.longterm.explicit import asks_to_forget, strip_form
from memory.longterm.items import (
    MemoryItem,
    MemoryKind,
    Provenance,
    Source,
    memory_id,
    normalise,
    tidy,
)
from memory.longterm.operations import Operation, OwedTurn
from memory.schema import is_storable

NEAR_DUPLICATE = 0.8
"""Word overlap (Jaccard) at which two statements of one kind say the same thing: the
words as written, so "I don't like X" never repeats "I like X"."""


def _words(text: str) -> frozenset[str]:
    return frozenset(normalised_words(text).replace(",", " ").replace(".", " ").split())


def _same_statement(item: MemoryItem, key: str, kind: str, text: str) -> bool:
    if item.key == key:
        return True
    if item.kind != kind:
        return False
    other, words = _words(item.text), _words(text)
    union = other | words
    return bool(union) and len(other & words) / len(union) >= NEAR_DUPLICATE


@dataclass(frozen=True)
class Refusal:
    """An operation the gate turned down, and why."""

    reason: Reason
    message: str


@dataclass(frozen=True)
class WritePlan:
    """What one write changes, applied together: `refreshed` items were said again,
    `changed` ones are kept as history, `forgotten` ones are deleted and their texts
    redacted, `evicted` ids go to keep within the limits."""

    added: tuple[MemoryItem, ...] = ()
    refreshed: tuple[MemoryItem, ...] = ()
    changed: tuple[MemoryItem, ...] = ()
    forgotten: tuple[MemoryItem, ...] = ()
    evicted: tuple[str, ...] = ()
    refused: tuple[Refusal, ...] = ()

    @property
    def puts(self) -> tuple[MemoryItem, ...]:
        return self.added + self.refreshed + self.changed

    @property
    def deletes(self) -> tuple[str, ...]:
        return tuple(item.id for item in self.forgotten) + self.evicted

    @property
    def altered(self) -> bool:
        return bool(self.puts or self.deletes)

    @property
    def retired(self) -> int:
        return len(self.changed) + len(self.forgotten)

    @property
    def refusals(self) -> dict[str, int]:
        """How many operations the gate refused, by reason (for the `memory` event)."""
        return dict(Counter(refusal.reason.value for refusal in self.refused))

    @property
    def remembered(self) -> tuple[str, ...]:
        """Texts of the items added or said again, as `TurnResult.remembered` reports."""
        return tuple(item.text for item in self.added + self.refreshed)


class _Plan:
    """A write being planned: the session's items as the operations change them."""

    def __init__(self, items: Sequence[MemoryItem], source: Source) -> None:
        self.source = source
        self.items = {item.id: item for item in items}
        self.added: dict[str, MemoryItem] = {}
        self.refreshed: dict[str, MemoryItem] = {}
        self.changed: dict[str, MemoryItem] = {}
        self.forgotten: dict[str, MemoryItem] = {}
        self.refused: list[Refusal] = []
        self.batch: dict[str, str] = {}  # `turn:N:K` → the item that add became
        self.quotes: dict[int, set[str]] = {}  # the quotes of each turn's new items

    def current(self) -> list[MemoryItem]:
        return [item for item in self.items.values() if item.current]

    def refuse(self, reason: Reason, kind: str = "") -> None:
        self.refused.append(Refusal(reason, MESSAGES[reason].format(kind=kind)))

    def invalidate(self, item: MemoryItem, by: str | None, at: datetime) -> None:
        """Keep `item` as history: a later statement, said `at`, changed it."""
        gone = item.model_copy(update={"invalid_at": at, "superseded_by": by})
        self.items[item.id] = self.changed[item.id] = gone
        # (an item this write added and a later turn of it changed is stored as history)
        self.added.pop(item.id, None)
        self.refreshed.pop(item.id, None)

    def target(self, op: Operation) -> MemoryItem | None:
        return self.items.get(self.batch.get(op.id or "", op.id or ""))

    def apply(self, op: Operation, turn: OwedTurn) -> MemoryItem | Reason | None:
        """Apply `op`: why it cannot stand, or for an `add` or `update` the item it became
        (a new one, or the one it repeats)."""
        if op.op == "add" or op.op == "update":
            return self.put(op, turn)
        item = self.target(op)
        deletes = op.op == "forget" and asks_to_forget(op.quote)
        if item is None or (not deletes and not item.current):
            return Reason.UNKNOWN_ITEM
        if not deletes:  # a retire, or a forget the user never asked for: history
            self.invalidate(item, None, turn.at)
        else:  # forget: the item and what it was learnt from go
            self.forgotten[item.id] = self.items.pop(item.id)
        return None

    def put(self, op: Operation, turn: OwedTurn) -> MemoryItem | Reason:
        """An `add`, or an `update` (superseding its item): the item it became, or why not."""
        old = self.target(op) if op.op == "update" else None
        if op.op == "update" and (old is None or not old.current):
            return Reason.UNKNOWN_ITEM
        text = tidy(strip_form(op.text or ""))
        key = normalise(text)
        if not key:
            return Reason.EMPTY
        if not is_storable(text):
            return Reason.UNSTORABLE
        if not grounded(text, op.quote, turn.assistant_before):
            return Reason.NOT_GROUNDED
        kind = op.kind or (old.kind if old is not None else "fact")
        for item in self.current():
            # an update's own item is what it changes, not what it repeats, unless said
            # word for word
            if old is not None and item.id == old.id and item.key != key:
                continue
            if not _same_statement(item, key, kind, text):
                continue
            if item.id not in self.added:  # (else: said twice in one write)
                grade = max(item.importance, _importance(op))
                said = max(item.updated_at, turn.at)
                self.refreshed[item.id] = item.model_copy(
                    update={"updated_at": said, "importance": grade}
                )
            return item
        quote = normalised_words(op.quote)
        if op.op == "add" and quote in self.quotes.setdefault(op.turn, set()):
            return Reason.SAME_QUOTE
        if op.op == "add" and len(self.quotes[op.turn]) >= MAX_NEW_MEMORIES_PER_TURN:
            return Reason.TURN_LIMIT
        new = MemoryItem(
            id=memory_id(),
            kind=kind,
            text=text,
            importance=_importance(op),
            # when it was said: the turns of one batch keep their order
            created_at=turn.at,
            updated_at=turn.at,
            conversation_id=turn.conversation_id or None,
            key=key,
            source=self.source,
            provenance=Provenance(
                message_id=turn.message_id or None,
                conversation_id=turn.conversation_id or None,
                quote=op.quote.strip()[:MAX_QUOTE_CHARS],
                at=turn.at,
            ),
        )
        self.items[new.id] = self.added[new.id] = new
        # only what an operation names is replaced: code never guesses a subject
        if old is None:  # an add
            self.quotes[op.turn].add(quote)
        elif old.updated_at > turn.at:  # a late extraction: what was said since stands
            self.invalidate(new, old.id, old.updated_at)
        else:
            self.invalidate(old, new.id, turn.at)
        return new

    def evictions(self) -> list[str]:
        """The ids that must go to keep the session within its limits: the least
        important, then oldest, current items (never this write's own), and the oldest
        history."""
        current = [item for item in self.current() if item.id not in self.added]
        over = len(self.current()) - MAX_MEMORY_ITEMS
        by_worth = sorted(current, key=lambda item: (item.importance, item.updated_at))
        gone = [item.id for item in by_worth[: max(over, 0)]]
        history = [item for item in self.items.values() if not item.current]
        history.sort(key=lambda item: item.invalid_at or item.updated_at)
        gone += [item.id for item in history[: max(len(history) - MAX_HISTORY_ITEMS, 0)]]
        return gone


def _importance(op: Operation) -> int:
    return min(max(op.importance or 3, MIN_IMPORTANCE), MAX_IMPORTANCE)


def _ambiguous(operations: Sequence[Operation]) -> list[Operation]:
    """The deleting forgets whose one quote names several items: forgetting cannot be
    undone, so the user is asked which they meant."""
    named: dict[tuple[int, str], set[str]] = {}
    for op in operations:
        if op.op == "forget" and asks_to_forget(op.quote):
            named.setdefault((op.turn, normalised_words(op.quote)), set()).add(op.id or "")
    return [
        op
        for op in operations
        if op.op == "forget" and len(named.get((op.turn, normalised_words(op.quote)), ())) > 1
    ]


def plan_write(
    items: Sequence[MemoryItem],
    operations: Sequence[Operation],
    turns: Sequence[OwedTurn],
    *,
    source: Source,
) -> WritePlan:
    """Pass `operations` (each naming its 1-based turn) through the gate against the
    session's stored `items` (current and history), in the order of their turns."""
    plan = _Plan(items, source)
    adds: dict[int, int] = {}
    ambiguous = _ambiguous(operations)
    for op in sorted(operations, key=lambda op: op.turn):
        # an add is named `turn:N:K` by its place among its turn's proposed adds,
        # whatever the gate makes of it, as the extractor counts
        if op.op == "add":
            adds[op.turn] = adds.get(op.turn, 0) + 1
        refused = (Reason.AMBIGUOUS, "") if op in ambiguous else verify(op, turns)
        if refused is not None:
            plan.refuse(*refused)
            continue
        became = plan.apply(op, turns[op.turn - 1])
        if isinstance(became, Reason):
            plan.refuse(became)
        elif op.op == "add" and became is not None:
            plan.batch[f"turn:{op.turn}:{adds[op.turn]}"] = became.id
    evicted = plan.evictions()
    for item_id in [*plan.forgotten, *evicted]:  # neither is written
        for kept in (plan.added, plan.refreshed, plan.changed):
            kept.pop(item_id, None)
    return WritePlan(
        added=tuple(plan.added.values()),
        refreshed=tuple(plan.refreshed.values()),
        changed=tuple(plan.changed.values()),
        forgotten=tuple(plan.forgotten.values()),
        evicted=tuple(evicted),
        refused=tuple(plan.refused),
    )


def explicit(
    text: str, kind: MemoryKind, importance: int, now: datetime
) -> tuple[Operation, OwedTurn]:
    """What the user adds through the memory form: an add whose quote is its text."""
    turn = OwedTurn(message_id="", conversation_id="", user_text=text, assistant_before="", at=now)
    operation = Operation(op="add", turn=1, quote=text, kind=kind, text=text, importance=importance)
    return operation, turn
