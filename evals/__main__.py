"""`python -m evals` (`make eval`): every scenario and dialogue of the dev and held-out
splits against every system, with tables, JSON and a chart under bench/results/.

Offline by default: every system is driven by the deterministic offline model. With
`OPENAI_API_KEY` set (or an OpenAI-compatible `OPENAI_BASE_URL`), the same sets run
against the configured endpoint (`AGENT_MODEL`), and a judge model (`evals/judge.py`)
also reads each probe's and each dialogue question's answer. `ours_oracle` and
`ours_hostile` play the scenarios with a scripted extractor (`evals/oracle.py`) in
either case.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from agent.models import load_chat_model
from agent.offline import OfflineChatModel
from agent.settings import Settings
from evals.dialogue import load_split
from evals.dialogue_run import DialogueOutcome, evaluate_dialogues
from evals.judge import JUDGE_PROMPT, dialogue_answers, judge_outcomes
from evals.longterm_report import markdown as longterm_markdown
from evals.profile_gate import section as profile_section
from evals.report import SPLITS, dialogue_markdown, markdown, write_json
from evals.report_chart import write_chart
from evals.scenario import HELD_OUT_DIR, SCENARIO_DIR, load_all
from evals.scenario_run import Outcome, evaluate
from evals.systems import SYSTEM_NAMES

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evals", description=__doc__)
    parser.add_argument("--system", action="append", choices=SYSTEM_NAMES, help="(repeatable)")
    parser.add_argument("--scenario", action="append", help="scenario name (repeatable)")
    parser.add_argument("--dialogue", action="append", help="dialogue name (repeatable)")
    parser.add_argument("--split", action="append", choices=SPLITS, help="(repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where eval.json/png go")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser.parse_args()


def play_splits(
    args: argparse.Namespace, systems: list[str], model: Callable[[], BaseChatModel]
) -> tuple[list[Outcome], list[DialogueOutcome], int]:
    """Every chosen scenario and dialogue of every chosen split against `systems`; the
    outcomes and how many user turns a system plays."""
    outcomes: list[Outcome] = []
    dialogues: list[DialogueOutcome] = []
    turns = 0
    chosen = args.scenario or args.dialogue
    with tempfile.TemporaryDirectory() as workdir:
        for split in args.split or list(SPLITS):
            directory = SCENARIO_DIR if split == "dev" else HELD_OUT_DIR
            scenarios = [
                s for s in load_all(directory) if not chosen or s.name in (args.scenario or [])
            ]
            chats = [d for d in load_split(split) if not chosen or d.name in (args.dialogue or [])]
            turns += sum(s.turns for s in scenarios) + sum(d.turns for d in chats)
            outcomes += evaluate(
                scenarios, systems, model, Path(workdir), split=split, progress=not args.quiet
            )
            dialogues += evaluate_dialogues(
                chats, systems, model, Path(workdir), split=split, progress=not args.quiet
            )
    return outcomes, dialogues, turns


def main() -> None:
    args = arguments()
    settings = Settings.from_env()  # the agent's own: endpoint, method, timeouts
    systems = args.system or list(SYSTEM_NAMES)
    offline = settings.offline
    model = OfflineChatModel if offline else (lambda: load_chat_model(settings))
    started = time.perf_counter()
    outcomes, dialogues, turns = play_splits(args, systems, model)
    splits: list[str] = args.split or list(SPLITS)
    meta = {
        "model": "offline" if offline else settings.model,
        "splits": splits,
        "scenarios": len({(o.split, o.scenario) for o in outcomes}),
        "dialogues": len({(o.split, o.dialogue) for o in dialogues}),
        "turns": turns,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if outcomes:
        print(markdown(outcomes))
        longterm = longterm_markdown(outcomes)
        print("\n" + longterm if longterm else "")
    if dialogues:
        print("\n" + dialogue_markdown(dialogues))
    print("\n" + profile_section())
    if not offline:
        judge_all(settings, outcomes, dialogues, splits)
    write_json(args.out / "eval.json", outcomes, dialogues, meta)
    if outcomes:
        write_chart(args.out / "eval.png", outcomes, dialogues)
    print(
        f"\n{meta['turns']:,} turns × {len(systems)} systems in {meta['seconds']} s; "
        f"results in {args.out / 'eval.json'} and {args.out / 'eval.png'}"
    )


def judge_all(
    settings: Settings,
    outcomes: list[Outcome],
    dialogues: list[DialogueOutcome],
    splits: list[str],
) -> None:
    """A judge model's reading of every answer, split by split."""
    judge = load_chat_model(settings)
    print("\nJudge prompt:\n" + JUDGE_PROMPT)
    for split in splits:
        answered = [o for o in outcomes if o.split == split]
        answered += dialogue_answers([d for d in dialogues if d.split == split])
        table = judge_outcomes(answered, judge, settings.structured_output_method)
        print(f"\nJudged answers ({split}):\n" + table)


if __name__ == "__main__":
    main()
