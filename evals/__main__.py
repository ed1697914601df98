"""`python -m evals` (`make eval`): every scenario against every system, with a table,
JSON and a chart under bench/results/.

Offline by default: every system is driven by the deterministic offline model. With
`OPENAI_API_KEY` set, the same scenarios run against the configured endpoint
(`AGENT_MODEL`), and a judge model (`evals/judge.py`) also reads each probe's answer.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from agent.models import load_chat_model
from agent.offline import OfflineChatModel
from agent.settings import Settings
from evals.judge import JUDGE_PROMPT, judge_outcomes
from evals.profile_gate import section as profile_section
from evals.report import markdown, write_chart, write_json
from evals.runner import evaluate
from evals.scenario import load_all
from evals.systems import SYSTEM_NAMES

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m evals", description=__doc__)
    parser.add_argument("--system", action="append", choices=SYSTEM_NAMES, help="(repeatable)")
    parser.add_argument("--scenario", action="append", help="scenario name (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where eval.json/png go")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args()

    settings = Settings.from_env()
    scenarios = [s for s in load_all() if not args.scenario or s.name in args.scenario]
    systems = args.system or list(SYSTEM_NAMES)
    offline = settings.offline
    model = OfflineChatModel if offline else (lambda: load_chat_model(settings))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        outcomes = evaluate(scenarios, systems, model, Path(workdir), progress=not args.quiet)
    meta = {
        "model": "offline" if offline else settings.model,
        "scenarios": len(scenarios),
        "turns": sum(s.turns for s in scenarios),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(markdown(outcomes))
    print("\n" + profile_section())
    if not offline:
        print("\nJudge prompt:\n" + JUDGE_PROMPT)
        print(judge_outcomes(outcomes, load_chat_model(settings)))
    write_json(args.out / "eval.json", outcomes, meta)
    write_chart(args.out / "eval.png", outcomes)
    print(
        f"\n{meta['turns']} turns × {len(systems)} systems in {meta['seconds']} s; "
        f"results in {args.out / 'eval.json'} and {args.out / 'eval.png'}"
    )


if __name__ == "__main__":
    main()
