"""The evaluation's report: the figures per system and split, as markdown tables (dev and
held-out side by side) and JSON; the chart is `evals.report_chart`."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evals.dialogue import QuestionType
from evals.dialogue_run import DialogueOutcome
from evals.scenario_run import Outcome

SPLITS = ("dev", "heldout")
QUESTION_TYPES: tuple[QuestionType, ...] = ("single", "multi_hop", "temporal")
MODES = ("new", "last")


@dataclass(frozen=True)
class Totals:
    """One system's figures over the scenarios of one split. Recall and wrong injection
    weigh every probed fact the same; fidelity is averaged per scenario, so that one
    long scenario does not decide it. None: nothing to measure, or (for leakage,
    deletion, fidelity and the store) a metric the system cannot fail by construction."""

    system: str
    split: str
    scenarios: int
    turns: int
    recall_same: float | None
    recall_cross: float | None
    wrong_rate: float | None
    fidelity: float | None
    leaks: int | None
    deletion_turns: int | None
    deletions_never: int | None
    store_left: int | None
    store_checks: int
    context_tokens: float
    memory_tokens: float
    total_tokens: float
    calls_per_turn: float
    seconds: float


def mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def totals(outcomes: Sequence[Outcome]) -> list[Totals]:
    """Per system and split, in the order first seen."""
    rows = []
    keys = dict.fromkeys((o.system, o.split) for o in outcomes)
    for name, split in keys:
        mine = [o for o in outcomes if o.system == name and o.split == split]
        cannot = mine[0].by_construction
        deletions = [d for o in mine for d in o.deletions]
        finite = [d for d in deletions if d is not None]
        turns = sum(o.tokens.turns for o in mine)
        fidelities = [o.fidelity for o in mine if o.fidelity is not None]
        rows.append(
            Totals(
                system=name,
                split=split,
                scenarios=len(mine),
                turns=sum(o.turns for o in mine),
                recall_same=_ratio(
                    sum(o.hits_same for o in mine), sum(o.expected_same for o in mine)
                ),
                recall_cross=_ratio(
                    sum(o.hits_cross for o in mine), sum(o.expected_cross for o in mine)
                ),
                wrong_rate=_ratio(sum(o.wrong for o in mine), sum(o.forbidden for o in mine)),
                fidelity=None if "fidelity" in cannot else mean(fidelities),
                leaks=None if "leakage" in cannot else sum(o.leaks for o in mine),
                deletion_turns=None if "deletion" in cannot or not finite else max(finite),
                deletions_never=(
                    None
                    if "deletion" in cannot or not deletions
                    else sum(d is None for d in deletions)
                ),
                store_left=None if "store" in cannot else sum(o.store_left for o in mine),
                store_checks=sum(o.store_checks for o in mine),
                context_tokens=statistics.fmean([t for o in mine for t in o.tokens.context] or [0]),
                memory_tokens=sum(o.tokens.memory for o in mine) / max(turns, 1),
                total_tokens=sum(o.tokens.total for o in mine) / max(turns, 1),
                calls_per_turn=sum(o.tokens.calls for o in mine) / max(turns, 1),
                seconds=sum(o.seconds for o in mine),
            )
        )
    return rows


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _count(value: int | None) -> str:
    return "n/a" if value is None else str(value)


def _deletion(row: Totals) -> str:
    if row.deletions_never is None:
        return "n/a"
    if row.deletions_never:
        return f"never ({row.deletions_never})"
    return _count(row.deletion_turns)


def _store(row: Totals) -> str:
    if row.store_left is None:
        return "n/a"
    return f"{row.store_left}/{row.store_checks}" if row.store_checks else "n/a"


def _side(cells: dict[str, str]) -> str:
    """dev · held-out in one cell."""
    return " · ".join(cells.get(split, "–") for split in SPLITS)


COLUMNS: tuple[tuple[str, Any], ...] = (
    ("recall, same conv.", lambda r: _pct(r.recall_same)),
    ("recall, cross conv.", lambda r: _pct(r.recall_cross)),
    ("wrong injection", lambda r: _pct(r.wrong_rate)),
    ("fidelity", lambda r: _pct(r.fidelity)),
    ("leakage", lambda r: _count(r.leaks)),
    ("deletion (turns)", _deletion),
    ("store: banned items left", _store),
    ("context tok/turn", lambda r: f"{r.context_tokens:,.0f}"),
    ("memory-call tok/turn", lambda r: f"{r.memory_tokens:,.0f}"),
    ("total tok/turn", lambda r: f"{r.total_tokens:,.0f}"),
    ("calls/turn", lambda r: f"{r.calls_per_turn:.2f}"),
)


def markdown(outcomes: Sequence[Outcome]) -> str:
    """The summary table (each cell: dev · held-out), then recall / wrong injection per
    scenario."""
    rows = totals(outcomes)
    systems = list(dict.fromkeys(o.system for o in outcomes))
    lines = [
        "Scenarios, each cell dev · held-out "
        f"({_split_sizes(outcomes)}; n/a: cannot fail by construction, or nothing to measure):",
        "",
        "| system | " + " | ".join(title for title, _ in COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    for name in systems:
        mine = {row.split: row for row in rows if row.system == name}
        cells = [_side({s: cell(row) for s, row in mine.items()}) for _, cell in COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Per scenario, context recall / wrong injection:",
        "",
        "| split | scenario | " + " | ".join(systems) + " |",
        "|---|---|" + "---|" * len(systems),
    ]
    by_key = {(o.scenario, o.system): o for o in outcomes}
    for split in SPLITS:
        for scenario in dict.fromkeys(o.scenario for o in outcomes if o.split == split):
            cells = []
            for name in systems:
                outcome = by_key.get((scenario, name))
                cells.append(
                    "–"
                    if outcome is None
                    else f"{_pct(outcome.recall)} / {_pct(outcome.wrong_rate)}"
                )
            lines.append(f"| {split} | {scenario} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _split_sizes(outcomes: Sequence[Outcome]) -> str:
    sizes = []
    for split in SPLITS:
        mine = {o.scenario: o.turns for o in outcomes if o.split == split}
        sizes.append(f"{split}: {len(mine)} scenarios, {sum(mine.values()):,} turns")
    return "; ".join(sizes)


def dialogue_recall(
    outcomes: Sequence[DialogueOutcome],
) -> dict[tuple[str, str, str, str], float | None]:
    """Mean evidence recall by (system, split, mode, question type or `all`)."""
    table: dict[tuple[str, str, str, str], float | None] = {}
    for outcome_key in dict.fromkeys((o.system, o.split) for o in outcomes):
        asked = [a for o in outcomes if (o.system, o.split) == outcome_key for a in o.asked]
        for mode in MODES:
            for kind in (*QUESTION_TYPES, "all"):
                values = [a.recall for a in asked if a.mode == mode and kind in (a.type, "all")]
                table[(*outcome_key, mode, kind)] = mean(values)
    return table


def dialogue_markdown(outcomes: Sequence[DialogueOutcome]) -> str:
    """Evidence recall per question type, asked in a new conversation and in the last
    one; each cell dev · held-out."""
    table = dialogue_recall(outcomes)
    systems = list(dict.fromkeys(o.system for o in outcomes))
    sizes = "; ".join(
        f"{split}: {len({o.dialogue for o in outcomes if o.split == split})} dialogues, "
        f"{len({(o.dialogue, a.question) for o in outcomes if o.split == split for a in o.asked})}"
        " questions"
        for split in SPLITS
    )
    columns = [(mode, kind) for mode in MODES for kind in (*QUESTION_TYPES, "all")]
    lines = [
        f"Dialogues: evidence recall, each cell dev · held-out ({sizes}):",
        "",
        "| system | "
        + " | ".join(f"{kind.replace('_', '-')} ({mode} conv.)" for mode, kind in columns)
        + " | context tok/turn |",
        "|---|" + "---|" * (len(columns) + 1),
    ]
    for name in systems:
        cells = [
            _side({split: _pct(table.get((name, split, mode, kind))) for split in SPLITS})
            for mode, kind in columns
        ]
        tokens = {
            split: f"{statistics.fmean(t or [0]):,.0f}"
            for split in SPLITS
            if (
                t := [
                    x
                    for o in outcomes
                    if (o.system, o.split) == (name, split)
                    for x in o.tokens.context
                ]
            )
        }
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {_side(tokens)} |")
    return "\n".join(lines)


def as_json(
    outcomes: Sequence[Outcome], dialogues: Sequence[DialogueOutcome], meta: dict[str, Any]
) -> dict[str, Any]:
    """Totals and every outcome (misses included), with the run's settings."""
    return {
        "meta": meta,
        "totals": [asdict(row) for row in totals(outcomes)],
        "outcomes": [
            {
                "system": o.system,
                "scenario": o.scenario,
                "split": o.split,
                "turns": o.turns,
                "recall": o.recall,
                "recall_same": _ratio(o.hits_same, o.expected_same),
                "recall_cross": _ratio(o.hits_cross, o.expected_cross),
                "wrong_rate": o.wrong_rate,
                "fidelity": o.fidelity,
                "by_construction": sorted(o.by_construction),
                "deletions": o.deletions,
                "leaks": o.leaks,
                "store_left": o.store_left,
                "store_checks": o.store_checks,
                "store_left_why": o.store_left_why,
                "wrong_why": o.wrong_why,
                "gate": None if o.gate is None else o.gate.as_dict(),
                "misses": o.misses,
                "context_tokens": o.tokens.context,
                "memory_tokens": o.tokens.memory,
                "total_tokens": o.tokens.total,
                "calls": o.tokens.calls,
                "seconds": round(o.seconds, 3),
            }
            for o in outcomes
        ],
        "dialogue_recall": [
            {"system": k[0], "split": k[1], "mode": k[2], "type": k[3], "recall": v}
            for k, v in dialogue_recall(dialogues).items()
        ],
        "dialogues": [
            {
                "system": o.system,
                "dialogue": o.dialogue,
                "split": o.split,
                "asked": [asdict(a) for a in o.asked],
                "context_tokens": o.tokens.context,
                "memory_tokens": o.tokens.memory,
                "total_tokens": o.tokens.total,
                "seconds": round(o.seconds, 3),
            }
            for o in dialogues
        ],
    }


def write_json(
    path: Path,
    outcomes: Sequence[Outcome],
    dialogues: Sequence[DialogueOutcome],
    meta: dict[str, Any],
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = as_json(outcomes, dialogues, meta)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
