"""What every system under evaluation offers (`System`), and what a turn played with
`System.recalling` reports (`Recalled`); the systems themselves are in `evals.systems`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from evals.oracle import GateOutcome
from evals.recording import CallLog

Metric = Literal["fidelity", "leakage", "deletion", "store"]


@dataclass(frozen=True)
class Recalled:
    """What a turn's context held from the session's past beyond its own conversation:
    how many lines, and the tokens of the block that shows them."""

    lines: int = 0
    tokens: int = 0


class System(Protocol):
    """One system under evaluation."""

    name: str
    log: CallLog
    by_construction: frozenset[Metric]
    """Metrics this system cannot fail by construction (reported as n/a)."""

    def turn(self, session: str, conversation: str, text: str) -> str:
        """Play one user turn; returns the answer."""
        ...

    def recalling(self, session: str, conversation: str, text: str) -> Recalled:
        """Play one user turn, as `turn` does, and say what its context recalled."""
        ...

    def forget(self, session: str, match: str) -> int:
        """Delete the session's long-term items containing `match`; how many."""
        ...

    def drop(self, session: str, conversation: str) -> None:
        """Delete a conversation (a question asked on its own, in a new conversation)."""
        ...

    def memories(self, session: str) -> list[str] | None:
        """The texts the session's long-term store holds as current (None: the system
        has none)."""
        ...

    def gate(self, sessions: Iterable[str]) -> GateOutcome | None:
        """What its write gate refused in `sessions` (None: it has no gate)."""
        ...

    def close(self) -> None: ...
