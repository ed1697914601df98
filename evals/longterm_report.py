"""The long-term memory's own figures in `make eval`, for each system that has one
(`ours` with the rules extractor, `ours_oracle` and `ours_hostile` with a scripted one):
- its targets on the scenarios: cross-conversation recall, wrong injection (all of it,
  and superseded or revoked facts alone), and what the store still holds as current at
  the end: superseded or revoked facts, forgotten ones, secrets;
- the write gate: the operations it refused, by reason (from the upkeep's `memory`
  events), and for the hostile extractor what it proposed and whether any of it was
  stored (current or history).
Each cell is dev · held-out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from functools import reduce

from evals.oracle import GateOutcome
from evals.scenario_run import Outcome

SPLITS = ("dev", "heldout")
CHANGED = ("superseded", "revoked")


def _side(cells: dict[str, str]) -> str:
    return " · ".join(cells.get(split, "–") for split in SPLITS)


def _ratio(part: int, whole: int) -> str:
    return f"{part / whole:.0%} ({part}/{whole})" if whole else "n/a"


def _sum(outcomes: Sequence[Outcome], count: Callable[[Outcome], int]) -> int:
    return sum(count(o) for o in outcomes)


def _cells(
    outcomes: Sequence[Outcome], system: str, cell: Callable[[Sequence[Outcome]], str]
) -> str:
    by_split = {
        split: cell(mine)
        for split in SPLITS
        if (mine := [o for o in outcomes if (o.system, o.split) == (system, split)])
    }
    return _side(by_split)


def _left(whys: Sequence[str]) -> Callable[[Sequence[Outcome]], str]:
    def cell(mine: Sequence[Outcome]) -> str:
        checked = _sum(mine, lambda o: sum(o.store_checks_why[w] for w in whys))
        left = _sum(mine, lambda o: sum(o.store_left_why[w] for w in whys))
        return f"{left}/{checked}" if checked else "n/a"

    return cell


TARGETS: tuple[tuple[str, Callable[[Sequence[Outcome]], str]], ...] = (
    (
        "recall, cross conv.",
        lambda m: _ratio(_sum(m, lambda o: o.hits_cross), _sum(m, lambda o: o.expected_cross)),
    ),
    (
        "wrong injection",
        lambda m: _ratio(_sum(m, lambda o: o.wrong), _sum(m, lambda o: o.forbidden)),
    ),
    (
        "superseded or revoked injected",
        lambda m: str(_sum(m, lambda o: sum(o.wrong_why[w] for w in CHANGED))),
    ),
    ("superseded or revoked left current", _left(CHANGED)),
    ("forgotten left", _left(("deleted",))),
    ("secrets left", _left(("secret",))),
)


def gate(outcomes: Sequence[Outcome], system: str, split: str) -> GateOutcome | None:
    """The gate's figures of `system` over the scenarios of `split` (None: no gate)."""
    found = [o.gate for o in outcomes if (o.system, o.split) == (system, split)]
    gates = [g for g in found if g is not None]
    return reduce(GateOutcome.__add__, gates) if gates else None


def markdown(outcomes: Sequence[Outcome]) -> str:
    """The targets table, then the gate's refusals by reason (empty when no system
    played has a long-term memory)."""
    systems = list(dict.fromkeys(o.system for o in outcomes if o.gate is not None))
    if not systems:
        return ""
    lines = [
        "Long-term memory on the scenarios (each cell dev · held-out; the store is "
        "checked at the end, current items only):",
        "",
        "| system | " + " | ".join(title for title, _ in TARGETS) + " |",
        "|---|" + "---|" * len(TARGETS),
    ]
    for name in systems:
        lines.append(
            f"| {name} | " + " | ".join(_cells(outcomes, name, c) for _, c in TARGETS) + " |"
        )
    gates = {(name, split): gate(outcomes, name, split) for name in systems for split in SPLITS}
    reasons = sorted({r for g in gates.values() if g is not None for r in [*g.refused, *g.attacks]})
    columns = [*reasons, "all"]
    lines += [
        "",
        "Write gate: operations refused, by reason (hostile: refused / proposed to be; "
        "planted: texts a hostile operation tried to store, and how many were stored):",
        "",
        "| system | " + " | ".join(columns) + " | planted: stored |",
        "|---|" + "---|" * (len(columns) + 1),
    ]
    for name in systems:
        cells = [
            _side(
                {
                    split: _refused(g, reason)
                    for split in SPLITS
                    if (g := gates[(name, split)]) is not None
                }
            )
            for reason in columns
        ]
        planted = _side(
            {
                split: f"{g.planted_left}/{g.planted}" if g.planted else "n/a"
                for split in SPLITS
                if (g := gates[(name, split)]) is not None
            }
        )
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {planted} |")
    return "\n".join(lines)


def _refused(found: GateOutcome, reason: str) -> str:
    refused: Counter[str] = found.refused
    attacks: Counter[str] = found.attacks
    if reason == "all":
        count, proposed = refused.total(), attacks.total()
    else:
        count, proposed = refused[reason], attacks[reason]
    return f"{count} / {proposed}" if proposed else str(count)
