"""The evaluation's report: a markdown table, JSON, and a PNG chart (matplotlib)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.runner import Outcome

BASELINE = "full_history"


@dataclass(frozen=True)
class Totals:
    """One system's figures over every scenario (micro-averaged: every probe and turn
    weighs the same)."""

    system: str
    turns: int
    hit_rate: float | None
    wrong_rate: float | None
    fidelity: float | None
    tokens_per_turn: float
    savings: float | None
    calls_per_turn: float
    deletion_turns: int | None
    deletions_never: int
    leaks: int
    seconds: float


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def totals(outcomes: Sequence[Outcome]) -> list[Totals]:
    """Per system, in the order first seen."""
    systems = list(dict.fromkeys(o.system for o in outcomes))
    tokens = {
        name: statistics.fmean([t for o in outcomes if o.system == name for t in o.tokens] or [0])
        for name in systems
    }
    rows = []
    for name in systems:
        mine = [o for o in outcomes if o.system == name]
        deletions = [d for o in mine for d in o.deletions]
        finite = [d for d in deletions if d is not None]
        base = tokens.get(BASELINE)
        rows.append(
            Totals(
                system=name,
                turns=sum(o.turns for o in mine),
                hit_rate=_ratio(sum(o.hits for o in mine), sum(o.expected for o in mine)),
                wrong_rate=_ratio(sum(o.wrong for o in mine), sum(o.forbidden for o in mine)),
                fidelity=_ratio(
                    sum(o.fidelity_kept for o in mine), sum(o.fidelity_checks for o in mine)
                ),
                tokens_per_turn=tokens[name],
                savings=1 - tokens[name] / base if base else None,
                calls_per_turn=_ratio(sum(o.calls for o in mine), sum(o.turns for o in mine))
                or 0.0,
                deletion_turns=max(finite) if finite else None,
                deletions_never=sum(d is None for d in deletions),
                leaks=sum(o.leaks for o in mine),
                seconds=sum(o.seconds for o in mine),
            )
        )
    return rows


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _deletion(row: Totals) -> str:
    if row.deletions_never:
        return f"never ({row.deletions_never})"
    return "n/a" if row.deletion_turns is None else str(row.deletion_turns)


def markdown(outcomes: Sequence[Outcome]) -> str:
    """The summary table, then hit / wrong-injection rates per scenario."""
    lines = [
        "| system | hit rate | wrong injection | fidelity | tokens/turn | savings vs full "
        "| model calls/turn | deletion (turns) | leakage |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in totals(outcomes):
        lines.append(
            f"| {row.system} | {_pct(row.hit_rate)} | {_pct(row.wrong_rate)} "
            f"| {_pct(row.fidelity)} | {row.tokens_per_turn:,.0f} | {_pct(row.savings)} "
            f"| {row.calls_per_turn:.2f} | {_deletion(row)} | {row.leaks} |"
        )
    systems = list(dict.fromkeys(o.system for o in outcomes))
    scenarios = list(dict.fromkeys(o.scenario for o in outcomes))
    lines += [
        "",
        "Per scenario, hit rate / wrong injection:",
        "",
        "| scenario | " + " | ".join(systems) + " |",
        "|---|" + "---|" * len(systems),
    ]
    by_key = {(o.scenario, o.system): o for o in outcomes}
    for scenario in scenarios:
        cells = []
        for name in systems:
            outcome = by_key.get((scenario, name))
            cells.append(
                "–" if outcome is None else f"{_pct(outcome.hit_rate)} / {_pct(outcome.wrong_rate)}"
            )
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def as_json(outcomes: Sequence[Outcome], meta: dict[str, Any]) -> dict[str, Any]:
    """Totals and every outcome (misses included), with the run's settings."""
    return {
        "meta": meta,
        "totals": [row.__dict__ for row in totals(outcomes)],
        "outcomes": [
            {
                "system": o.system,
                "scenario": o.scenario,
                "turns": o.turns,
                "hit_rate": o.hit_rate,
                "wrong_rate": o.wrong_rate,
                "fidelity": o.fidelity,
                "tokens_per_turn": o.tokens_per_turn,
                "calls_per_turn": o.calls_per_turn,
                "deletions": o.deletions,
                "leaks": o.leaks,
                "misses": o.misses,
                "tokens": o.tokens,
                "seconds": round(o.seconds, 3),
            }
            for o in outcomes
        ],
    }


def write_json(path: Path, outcomes: Sequence[Outcome], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(as_json(outcomes, meta), indent=1, ensure_ascii=False) + "\n")


def write_chart(path: Path, outcomes: Sequence[Outcome]) -> None:
    """Two panels: context tokens per turn on the longest scenario, and the rate bars."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    longest = max(outcomes, key=lambda o: o.turns).scenario
    rows = totals(outcomes)
    figure, (tokens_axis, bars_axis) = plt.subplots(1, 2, figsize=(13, 4.8))
    for outcome in outcomes:
        if outcome.scenario == longest:
            tokens_axis.plot(
                range(1, len(outcome.tokens) + 1), outcome.tokens, label=outcome.system
            )
    tokens_axis.set(
        title=f"Context tokens per turn ({longest})", xlabel="turn", ylabel="tokens (approx.)"
    )
    tokens_axis.legend()
    metrics = [
        ("hit rate", "hit_rate"),
        ("wrong injection", "wrong_rate"),
        ("fidelity", "fidelity"),
    ]
    width = 0.8 / max(len(rows), 1)
    for index, row in enumerate(rows):
        values = [getattr(row, key) or 0.0 for _, key in metrics]
        positions = [m + index * width for m in range(len(metrics))]
        bars_axis.bar(positions, values, width, label=row.system)
    bars_axis.set_xticks([m + width * (len(rows) - 1) / 2 for m in range(len(metrics))])
    bars_axis.set_xticklabels([label for label, _ in metrics])
    bars_axis.set(title="Over every scenario", ylim=(0, 1.05))
    bars_axis.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
