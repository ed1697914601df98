"""The evaluation's PNG chart (matplotlib): the rates per system, the tokens per turn, and
the context of the longest scenario turn by turn."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.dialogue_run import DialogueOutcome
from evals.report import SPLITS, dialogue_recall, totals
from evals.scenario_run import Outcome


def write_chart(
    path: Path, outcomes: Sequence[Outcome], dialogues: Sequence[DialogueOutcome]
) -> None:
    """Three panels: the rates per system (dev bars solid, held-out hatched), the tokens
    per turn split into context and memory calls, and the context of the longest
    scenario turn by turn."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    rows = {(row.system, row.split): row for row in totals(outcomes)}
    systems = list(dict.fromkeys(o.system for o in outcomes))
    figure, (bars_axis, tokens_axis, line_axis) = plt.subplots(
        1, 3, figsize=(19, 6), gridspec_kw={"width_ratios": [2.4, 1.2, 1.4]}
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    _rates_panel(bars_axis, rows, dialogue_recall(dialogues), systems, colours)
    _tokens_panel(tokens_axis, rows, systems)
    _longest_panel(line_axis, outcomes)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _rates_panel(
    axis: Any,
    rows: dict[tuple[str, str], Any],
    recall: dict[tuple[str, str, str, str], float | None],
    systems: list[str],
    colours: list[str],
) -> None:
    metrics: list[tuple[str, Any]] = [
        ("recall\nsame conv.", lambda s, sp: rows[(s, sp)].recall_same),
        ("recall\ncross conv.", lambda s, sp: rows[(s, sp)].recall_cross),
        ("wrong\ninjection", lambda s, sp: rows[(s, sp)].wrong_rate),
        ("fidelity", lambda s, sp: rows[(s, sp)].fidelity),
        ("dialogue evidence\n(new conv.)", lambda s, sp: recall.get((s, sp, "new", "all"))),
        ("dialogue evidence\n(last conv.)", lambda s, sp: recall.get((s, sp, "last", "all"))),
    ]
    slots = len(systems) * len(SPLITS)
    width = 0.84 / slots
    for s_index, name in enumerate(systems):
        for p_index, split in enumerate(SPLITS):
            if (name, split) not in rows:
                continue
            values = [value(name, split) or 0.0 for _, value in metrics]
            offset = (s_index * len(SPLITS) + p_index) * width
            axis.bar(
                [m + offset for m in range(len(metrics))],
                values,
                width,
                color=colours[s_index % len(colours)],
                hatch="//" if split == "heldout" else None,
                edgecolor="white" if split == "heldout" else None,
                label=f"{name} ({split})",
            )
    axis.set_xticks([m + width * (slots - 1) / 2 for m in range(len(metrics))])
    axis.set_xticklabels([label for label, _ in metrics], fontsize=8)
    axis.set(title="Rates (solid: dev, hatched: held-out; n/a drawn as 0)", ylim=(0, 1.05))
    axis.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.2))


def _tokens_panel(axis: Any, rows: dict[tuple[str, str], Any], systems: list[str]) -> None:
    for s_index, name in enumerate(systems):
        for p_index, split in enumerate(SPLITS):
            row = rows.get((name, split))
            if row is None:
                continue
            x = s_index + (p_index - 0.5) * 0.4
            other = max(row.total_tokens - row.memory_tokens - row.context_tokens, 0)
            hatch = "//" if split == "heldout" else None
            bottom = 0
            for height, colour in (
                (row.context_tokens, "#4c72b0"),
                (row.memory_tokens, "#dd8452"),
                (other, "#bbbbbb"),
            ):
                axis.bar(x, height, 0.38, bottom=bottom, color=colour, hatch=hatch)
                bottom += height
    axis.set_xticks(range(len(systems)))
    axis.set_xticklabels(systems, rotation=30, fontsize=8)
    axis.set(title="Tokens per turn: context, memory calls, answers\n(left dev, right held-out)")
    axis.legend(["context", "memory calls", "answers"], fontsize=7)


def _longest_panel(axis: Any, outcomes: Sequence[Outcome]) -> None:
    longest = max(outcomes, key=lambda o: o.turns).scenario
    for outcome in outcomes:
        if outcome.scenario == longest:
            axis.plot(
                range(1, len(outcome.tokens.context) + 1),
                outcome.tokens.context,
                label=outcome.system,
            )
    axis.set(title=f"Context tokens per turn ({longest})", xlabel="turn", ylabel="tokens")
    axis.legend(fontsize=7)
