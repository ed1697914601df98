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
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from agent import ChatAgent
from agent.offline import DEFAULT_HANDLERS, OfflineChatModel
from agent.settings import Settings

REPO = Path(__file__).resolve().parents[1]
SECRET = "r" * 40
SESSION = "recovery"


def paced_model(counts: Counter[str], seconds: float) -> OfflineChatModel:
    def paced(
        schema: type[BaseModel], answer: Callable[[Sequence[BaseMessage]], BaseModel]
    ) -> Callable[[Sequence[BaseMessage]], BaseModel]:
        def handler(messages: Sequence[BaseMessage]) -> BaseModel:
            counts[schema.__name__] += 1
            time.sleep(seconds)
            return answer(messages)

        return handler

    return OfflineChatModel(
        structured_handlers={
            schema: paced(schema, answer) for schema, answer in DEFAULT_HANDLERS.items()
        }
    )


def crashed_delivery(workdir: Path, database_url: str) -> str:
    """A delivery killed (SIGKILL) during task 3 of 5, in a worker process."""
    worker = workdir / "worker"
    worker.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.recovery_worker", database_url,
         str(workdir / "data"), str(worker), "task:3"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    while not (worker / "stalled").exists():
        if process.poll() is not None:
            raise RuntimeError("the worker ended before it stalled")
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return (worker / "conversation").read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--call-seconds", type=float, default=0.2)
    args = parser.parse_args()
    from tests.integration.recovery_worker import REQUEST

    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        url = f"sqlite:///{workdir / 'agent.sqlite'}"
        conversation = crashed_delivery(workdir, url)
        settings = Settings(data_dir=workdir / "data", long_term_memory="off")
        recovered: Counter[str] = Counter()
        with ChatAgent(database_url=url, model=paced_model(recovered, args.call_seconds),
                       secret=SECRET, settings=settings) as agent:  # fmt: skip
            started = time.perf_counter()
            agent.recover(session_id=SESSION, conversation_id=conversation)
            recover_seconds = time.perf_counter() - started
            rerun: Counter[str] = Counter()
        with ChatAgent(database_url=url, model=paced_model(rerun, args.call_seconds),
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
