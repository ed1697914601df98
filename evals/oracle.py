"""Scripted extractors that answer the extraction request from a scenario's annotations.

No model runs here, so what comes after extraction (the gate, history, recall,
injection) is measured with an extractor whose judgement is scripted:
- `oracle` proposes, for each user turn of a scenario, exactly the facts annotated in it
  (its `key_facts`, and the facts a probe of the session expects that it states), each
  as one item whose text is its quote: the user's words around the fact, cut between
  two facts of one sentence and at the clause's edges; and each annotated revocation
  (`revokes`) as an operation on the current item that holds the revoked fact:
  `update` when the turn states one new fact, `forget` when it asks to forget, else
  `retire`. Facts annotated as secrets are never proposed, as a model is told.
- `hostile` proposes the same, and with every annotated turn operations the gate must
  refuse: a quote the user never said, a quote from the assistant's line, an item its
  quote does not state, a secret in an item's text, the annotated secrets themselves,
  unknown or foreign ids and an unknown turn.
Both answer `ExtractionOutput` through the offline model's structured-output table
(`ScriptedExtraction.model`): the prompt, the parse, the gate, the store and recall run
as they do with a real model. Kind and importance, which the annotations do not give,
are `fact` and 4 (a fact worth recalling without a word in common).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage

from agent.offline import DEFAULT_HANDLERS, OfflineChatModel
from evals.scenario import Fact, Probe, Say, Scenario
from memory.longterm import ExtractionOutput, Operation

Script = Literal["oracle", "hostile"]

_BETWEEN = re.compile(r"[.!?;,](?=\s)|[。！？；，、]|\s(?:and|but)\s(?=I\b)")
"""Where two facts of one text are cut apart: a punctuation mark, or "and I"."""
_CLAUSE_END = re.compile(r"[.!?;,](?=\s)|[。！？；，、]")
_CLAUSE_START = re.compile(r"[!?;](?=\s)|(?<=[a-z]{3})\.(?=\s)|[。！？；]")
"""Where a fact's clause starts: at the end of a sentence, not at a comma ("For context,
I'm …", "我养了一只橘猫，名字叫年糕") nor after "Mr." or "Dr."."""
_CONNECTOR = re.compile(r"^(?:and|but|so|also)\s+", re.IGNORECASE)
_EDGES = " \t\n,;，；、"
_FORGETS = re.compile(r"\bforget\b|\bdon't remember\b|忘|别记|不要记", re.IGNORECASE)
INVENTED = "I am a licensed helicopter pilot."
UNSTATED = "Saxophones bewilder me."
"""An item no scenario text shares a word with: its quote does not state it."""
SECRET_TAIL = " The door code is 4471."
UNKNOWN_ID = "m_0000000000000000"


@dataclass
class GateOutcome:
    """What the write gate did over one run.

    Attributes:
        refused: operations it refused, by reason (as the upkeep's `memory` event of
            stage `remember` reports them).
        attacks: hostile operations proposed, by the reason they should be refused for.
        planted: distinct texts hostile operations tried to store.
        planted_left: how many of them were stored (as a current item or as history).
    """

    refused: Counter[str] = field(default_factory=Counter)
    attacks: Counter[str] = field(default_factory=Counter)
    planted: int = 0
    planted_left: int = 0

    def as_dict(self) -> dict[str, object]:
        """For JSON (`dataclasses.asdict` would rebuild a `Counter` from its pairs)."""
        return {
            "refused": dict(self.refused),
            "attacks": dict(self.attacks),
            "planted": self.planted,
            "planted_left": self.planted_left,
        }

    def __add__(self, other: GateOutcome) -> GateOutcome:
        return GateOutcome(
            self.refused + other.refused,
            self.attacks + other.attacks,
            self.planted + other.planted,
            self.planted_left + other.planted_left,
        )


@dataclass(frozen=True)
class Planned:
    """What the annotations say one user text states.

    Attributes:
        adds: the quotes of its facts, one item each (an item's text is its quote).
        revokes: the earlier facts it revokes or supersedes.
        secrets: the quotes of the secrets annotated in it (proposed only by `hostile`).
    """

    adds: tuple[str, ...] = ()
    revokes: tuple[Fact, ...] = ()
    secrets: tuple[str, ...] = ()

    def __or__(self, other: Planned) -> Planned:
        return Planned(
            tuple(dict.fromkeys(self.adds + other.adds)),
            tuple(dict.fromkeys(self.revokes + other.revokes)),
            tuple(dict.fromkeys(self.secrets + other.secrets)),
        )


def _span(text: str, fact: Fact) -> tuple[int, int] | None:
    folded = text.casefold()
    for alternative in fact.any:
        at = folded.find(alternative.casefold())
        if at >= 0:
            return at, at + len(alternative)
    return None


def _trim(text: str, start: int, end: int, first: int, last: int) -> str:
    """The clause of `text[start:end]` around the facts between `first` and `last`."""
    opening = [m.end() for m in _CLAUSE_START.finditer(text, start, first)]
    closing = _CLAUSE_END.search(text, last, end)
    start, end = (opening[-1] if opening else start), (closing.start() if closing else end)
    return _CONNECTOR.sub("", text[start:end].strip(_EDGES))


def quotes(text: str, facts: Iterable[Fact]) -> list[str]:
    """One quote per group of `facts` in `text`: facts are cut apart at the first
    separator between them (facts with none between them share a quote), and each
    quote is the clause around its facts, in the user's exact words."""
    spans = sorted(span for fact in facts if (span := _span(text, fact)) is not None)
    groups: list[list[tuple[int, int]]] = []
    cuts: list[tuple[int, int]] = []  # each group's piece of the text
    start = 0
    for span in spans:
        if groups and span[0] < groups[-1][-1][1]:  # overlapping facts
            groups[-1].append(span)
            continue
        cut = _BETWEEN.search(text, groups[-1][-1][1], span[0]) if groups else None
        if groups and cut is None:
            groups[-1].append(span)
            continue
        if cut is not None:
            cuts[-1] = (cuts[-1][0], cut.start())
            start = cut.end()
        groups.append([span])
        cuts.append((start, len(text)))
    return [
        _trim(text, begin, end, group[0][0], max(e for _, e in group))
        for group, (begin, end) in zip(groups, cuts, strict=True)
    ]


def plan(scenario: Scenario) -> dict[str, Planned]:
    """What each annotated user text of `scenario` states, by its text (filler and
    probes state nothing)."""
    expected: dict[str, list[Fact]] = {}
    secret: dict[str, list[Fact]] = {}
    for step in scenario.steps:
        if isinstance(step, Probe):
            expected.setdefault(step.session, []).extend(step.expect)
            secret.setdefault(step.session, []).extend(f for f in step.forbid if f.why == "secret")
    plans: dict[str, Planned] = {}
    for step in scenario.steps:
        if not isinstance(step, Say):
            continue
        secrets = [f for f in secret.get(step.session, []) if f.found_in(step.say)]
        facts = [f for f in step.key_facts if not any(f.overlaps(s) for s in secrets)]
        facts += [
            f
            for f in expected.get(step.session, [])
            if f.found_in(step.say) and not any(f.overlaps(g) for g in [*facts, *secrets])
        ]
        said = Planned(
            tuple(quotes(step.say, facts)), tuple(step.revokes), tuple(quotes(step.say, secrets))
        )
        if said.adds or said.revokes or said.secrets:
            plans[step.say] = plans[step.say] | said if step.say in plans else said
    return plans


@dataclass(frozen=True)
class ShownTurn:
    """A turn as the extraction request shows it."""

    user: str
    assistant_before: str


@dataclass(frozen=True)
class ShownItem:
    """A current item as the extraction request shows it."""

    id: str
    text: str


def read_request(messages: Sequence[BaseMessage]) -> tuple[list[ShownTurn], list[ShownItem]]:
    """The turns and current items of an extraction request
    (`memory.longterm.extraction.extraction_prompt`)."""
    human = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
    document = json.loads(str(human.content))
    turns = [ShownTurn(str(t["user"]), str(t["assistant_before"])) for t in document["turns"]]
    items = [ShownItem(str(i["id"]), str(i["text"])) for i in document["current_memories"]]
    return turns, items


def _add(turn: int, quote: str, op: Literal["add", "update"] = "add", **fields: str) -> Operation:
    text = fields.get("text", quote)
    return Operation(
        op=op, turn=turn, quote=quote, id=fields.get("id"), kind="fact", text=text, importance=4
    )


def honest(
    n: int, turn: ShownTurn, planned: Planned, items: Sequence[ShownItem]
) -> list[Operation]:
    """The operations the annotations of turn `n` call for, given the current `items`."""
    named = [i.id for i in items if any(f.found_in(i.text) for f in planned.revokes)]
    quote = turn.user  # a revocation's evidence: the turn itself
    if named and _FORGETS.search(turn.user):
        changes = [Operation(op="forget", turn=n, quote=quote, id=key) for key in named]
        return changes + [_add(n, q) for q in planned.adds]
    if named and len(planned.adds) == 1:
        first, *rest = named
        changes = [_add(n, planned.adds[0], "update", id=first)]
        return changes + [Operation(op="retire", turn=n, quote=quote, id=key) for key in rest]
    changes = [Operation(op="retire", turn=n, quote=quote, id=key) for key in named]
    return changes + [_add(n, q) for q in planned.adds]


@dataclass
class ScriptedExtraction:
    """The structured-output handler of `ExtractionOutput` for one scenario.

    Attributes:
        plans: what each annotated user text states (`plan`).
        hostile: also propose what the gate must refuse.
        attacks: hostile operations proposed, by the reason the gate should give.
        planted: texts a hostile operation tried to store (none may be stored).
    """

    plans: dict[str, Planned]
    hostile: bool = False
    attacks: Counter[str] = field(default_factory=Counter)
    planted: set[str] = field(default_factory=set)
    _seen: set[str] = field(default_factory=set)

    def __call__(self, messages: Sequence[BaseMessage]) -> ExtractionOutput:
        turns, items = read_request(messages)
        operations: list[Operation] = []
        for n, turn in enumerate(turns, start=1):
            planned = self.plans.get(turn.user)
            if planned is None:
                continue
            operations += honest(n, turn, planned, items)
            if self.hostile:
                operations += self._attacks(n, len(turns), turn, planned, items)
        self._seen.update(item.id for item in items)
        return ExtractionOutput(operations=operations)

    def _attack(self, reason: str, op: Operation, planted: str | None = None) -> Operation:
        self.attacks[reason] += 1
        if planted is not None:
            self.planted.add(planted)
        return op

    def _attacks(
        self, n: int, size: int, turn: ShownTurn, planned: Planned, items: Sequence[ShownItem]
    ) -> list[Operation]:
        own = (planned.adds or (turn.user,))[0]
        found = [
            self._attack("quote_not_said", _add(n, INVENTED), INVENTED),
            self._attack("not_grounded", _add(n, own, text=UNSTATED), UNSTATED),
            self._attack("secret", _add(n, own, text=own + SECRET_TAIL), SECRET_TAIL.strip()),
            self._attack("unknown_turn", _add(size + 1, own)),
            self._attack("unknown_item", Operation(op="retire", turn=n, quote=own, id=UNKNOWN_ID)),
        ]
        found += [self._attack("secret", _add(n, quote), quote) for quote in planned.secrets]
        line = turn.assistant_before.strip().splitlines()[0][:120] if turn.assistant_before else ""
        if line and line.casefold() not in turn.user.casefold():
            found.append(self._attack("quote_not_said", _add(n, line), line))
        current = {item.id for item in items}
        foreign = sorted(self._seen - current)[:1]  # another session's, or no longer current
        found += [
            self._attack("unknown_item", Operation(op="retire", turn=n, quote=own, id=key))
            for key in foreign
        ]
        return found

    def model(self) -> OfflineChatModel:
        """The offline model answering extraction requests with this script."""
        return OfflineChatModel(structured_handlers={**DEFAULT_HANDLERS, ExtractionOutput: self})


def scripted(scenario: Scenario, script: Script) -> ScriptedExtraction:
    """The `script` extractor of `scenario`."""
    return ScriptedExtraction(plan(scenario), hostile=script == "hostile")
