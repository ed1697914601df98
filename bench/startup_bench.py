"""Start-up: how long importing the HTTP app, the CLI and the graph takes, each in a fresh
interpreter (what `uvicorn agent.server:app`, `python -m agent` and `langgraph dev` pay
before they serve), and the heaviest packages that remain.

Each figure is the median of several runs: the wall time of the whole process (the
interpreter's own start included) and the import's cumulative time as `python -X
importtime` reports it. The app and the CLI import no model, graph or storage stack
(`tests/unit/test_startup_imports.py`); the app's lifespan opens the agent, which
imports them then, once the server is up.

Run: `make bench` or `python -m bench.startup_bench [--runs N]`.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODULES = ("agent.server", "agent.cli.main", "agent.graph")
IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| *(\S+)")
HEAVIEST = 5


def import_once(module: str) -> tuple[float, float, Counter[str]]:
    """(process wall seconds, the import's cumulative seconds, the microseconds spent in
    each top-level package's own modules) for one fresh interpreter importing `module`."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    cumulative, packages = 0.0, Counter[str]()
    for found in map(IMPORT_LINE.match, done.stderr.splitlines()):
        if found is None:
            continue
        packages[found[3].split(".")[0]] += int(found[1])  # the module's own time
        if found[3] == module:
            cumulative = int(found[2]) / 1e6
    return wall, cumulative, packages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    print(f"start-up: importing each module in a fresh interpreter, median of {runs} runs")
    print(f"{'module':<16} {'import s':>9} {'process s':>10}  heaviest packages (s)")
    for module in MODULES:
        samples = [import_once(module) for _ in range(runs)]
        wall = statistics.median(s[0] for s in samples)
        cumulative = statistics.median(s[1] for s in samples)
        packages = sorted(samples, key=lambda s: s[1])[len(samples) // 2][2]
        named = ", ".join(f"{name} {us / 1e6:.2f}" for name, us in packages.most_common(HEAVIEST))
        print(f"{module:<16} {cumulative:>9.3f} {wall:>10.3f}  {named}")


if __name__ == "__main__":
    main()
