"""Scenarios: scripted multi-turn, multi-conversation, multi-session scripts with annotations.

A scenario is a JSON file in `evals/scenarios/` (see its README). Steps run in order:
- `say`: a user turn in a session's conversation; `key_facts` are what later turns of
  that conversation should still have in their context (compression fidelity);
- `filler`: `count` ordinary turns, cycling through `texts`;
- `probe`: a user turn whose model context is checked: every `expect` fact must be in
  it (hit rate), no `forbid` fact may be (wrong injection; `foreign` ones are leakage);
- `forget`: the user deletes the long-term items matching `match` (systems without
  long-term memory have nothing to delete); the turns after it in that session count
  until `fact` is gone from the context (deletion propagation).
A fact is a string, or `{"any": [...], "why": ...}`: present when any of its
alternatives is in the context (case-insensitive).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCENARIO_DIR = Path(__file__).parent / "scenarios"
HELD_OUT_DIR = SCENARIO_DIR / "heldout"
"""Scenarios written before any tuning and frozen by checksum: never change code to fix
one of them."""
Why = Literal["revoked", "superseded", "foreign", "deleted", "secret", "irrelevant"]
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,60}$")]


class Fact(BaseModel):
    """Something that is, or must not be, in a model's context."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    any: list[Annotated[str, Field(min_length=2)]] = Field(min_length=1)
    why: Why | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        return {"any": [value]} if isinstance(value, str) else value

    def found_in(self, context: str) -> bool:
        """Whether any alternative appears in `context` (case-insensitive)."""
        folded = context.casefold()
        return any(text.casefold() in folded for text in self.any)

    def overlaps(self, other: Fact) -> bool:
        """Whether two facts name the same thing (one's wording contains the other's)."""
        return any(
            x.casefold() in y.casefold() or y.casefold() in x.casefold()
            for x in self.any
            for y in other.any
        )


class Where(BaseModel):
    """The session and conversation a turn belongs to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session: Name
    conversation: Name


class Say(Where):
    say: str = Field(min_length=1)
    key_facts: list[Fact] = Field(default_factory=list)
    revokes: list[Fact] = Field(default_factory=list)
    """Earlier key facts this turn revokes or supersedes: they stop counting for
    compression fidelity from this turn on."""


class Filler(Where):
    filler: int = Field(ge=1, le=200)
    texts: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)


class Probe(Where):
    probe: str = Field(min_length=1)
    expect: list[Fact] = Field(default_factory=list)
    forbid: list[Fact] = Field(default_factory=list)


class Forget(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    session: Name
    forget: str = Field(min_length=2)
    """Long-term items whose text contains this (case-insensitive) are deleted."""
    fact: Fact
    """What must be gone from the session's contexts afterwards."""


Step = Say | Filler | Probe | Forget


class Scenario(BaseModel):
    """One scenario file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Name
    title: str
    language: Literal["en", "zh", "mixed"]
    tags: list[str] = Field(default_factory=list)
    steps: list[Step] = Field(min_length=1)

    @property
    def turns(self) -> int:
        """User turns the scenario plays (forget steps are not turns)."""
        return sum(
            step.filler if isinstance(step, Filler) else 0 if isinstance(step, Forget) else 1
            for step in self.steps
        )

    def expanded(self) -> Iterator[Say | Probe | Forget]:
        """The steps with every filler unrolled into plain turns."""
        for step in self.steps:
            if isinstance(step, Filler):
                for n in range(step.filler):
                    text = step.texts[n % len(step.texts)]
                    yield Say(session=step.session, conversation=step.conversation, say=text)
            else:
                yield step


def load(path: Path) -> Scenario:
    """Read and validate one scenario file."""
    return Scenario.model_validate(json.loads(path.read_text(encoding="utf-8")))


def load_all(directory: Path = SCENARIO_DIR) -> list[Scenario]:
    """Every scenario of `directory`, by name."""
    scenarios = [load(path) for path in sorted(directory.glob("*.json"))]
    names = [s.name for s in scenarios]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"duplicate scenario names: {sorted(duplicates)}")
    return scenarios
