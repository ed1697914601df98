"""Recovery benchmark: what a recovered 5-task delivery saves against running it again.

A delivery whose process died during task 3 of 5 (stages: load, plan, five tasks, three
reviewers, report) is continued with `ChatAgent.recover` and compared with a rerun of
the whole delivery. Model calls are counted by schema with the offline model; each
structured call also waits `--call-seconds` (default 0.2 s), a stand-in for a real
model's latency, so that the saved time is visible.

Run: `make bench` or `python -m bench.recovery_bench [--call-seconds S]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from agent import ChatAgent
from agent.settings import Settings
from tests.integration.recovery_worker import (
    REQUEST,
    SECRET,
    SESSION,
    counting_model,
    kill_while_stalled,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--call-seconds", type=float, default=0.2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        url = f"sqlite:///{workdir / 'agent.sqlite'}"
        conversation = kill_while_stalled(url, workdir, "task:3")
        settings = Settings(data_dir=workdir / "data", long_term_memory="off")
        recovered: Counter[str] = Counter()
        with ChatAgent(database_url=url, model=counting_model(recovered, args.call_seconds),
                       secret=SECRET, settings=settings) as agent:  # fmt: skip
            started = time.perf_counter()
            agent.recover(session_id=SESSION, conversation_id=conversation)
            recover_seconds = time.perf_counter() - started
            rerun: Counter[str] = Counter()
        with ChatAgent(database_url=url, model=counting_model(rerun, args.call_seconds),
                       secret=SECRET, settings=settings) as agent:  # fmt: skip
            started = time.perf_counter()
            agent.send(REQUEST, session_id=SESSION, create_conversation=True)
            rerun_seconds = time.perf_counter() - started
    figures = {
        "call_seconds": args.call_seconds,
        "recover_calls": sum(recovered.values()),
        "rerun_calls": sum(rerun.values()),
        "recover_seconds": round(recover_seconds, 2),
        "rerun_seconds": round(rerun_seconds, 2),
        "recover_by_schema": dict(recovered),
        "rerun_by_schema": dict(rerun),
    }
    saved = figures["rerun_calls"] - figures["recover_calls"]
    print(
        f"recovery of a 5-task delivery killed during task 3: {figures['recover_calls']} model "
        f"calls in {figures['recover_seconds']} s, against {figures['rerun_calls']} calls in "
        f"{figures['rerun_seconds']} s for a rerun ({saved} calls saved; "
        f"{args.call_seconds} s per call)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
