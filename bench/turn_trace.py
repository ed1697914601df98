"""The path of one turn, traced: which of the project's modules a `ChatAgent.send`
enters between the call and its result (memory upkeep apart), which it enters again
after leaving them, and how often it calls a few functions that should run once.

A module counts again only when the turn re-enters it: a call into it while no frame of
it is on the stack (of the calling thread, or of the thread that started the turn: a
graph node runs in a worker thread on behalf of the caller).

Run: `python -m bench.turn_trace [--turns N] [--count module:function …]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from agent import ChatAgent
from bench.scripted import ScriptedChatModel

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "graphs", "memory")
MESSAGE = "Turn {n}: I live in Porto, and please keep the budget section short."


def module_of(frame: FrameType) -> str | None:
    path = Path(frame.f_code.co_filename)
    try:
        relative = path.resolve().relative_to(ROOT)
    except ValueError:
        return None
    if relative.parts[0] not in PACKAGES or "vendor" in relative.parts:
        return None
    return ".".join(relative.with_suffix("").parts)


class Tracer:
    def __init__(self, counted: list[str]) -> None:
        self.entered: list[str] = []
        self.reentered: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.paths: Counter[tuple[str, str]] = Counter()
        self.counted = {tuple(name.rsplit(":", 1)) for name in counted}
        self.caller_stack: set[str] = set()
        self.lock = threading.Lock()
        self.on = False

    def stack_modules(self, frame: FrameType | None) -> set[str]:
        found: set[str] = set()
        while frame is not None:
            module = module_of(frame)
            if module is not None:
                found.add(module)
            frame = frame.f_back
        return found

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not self.on:
            return
        module = module_of(frame)
        if module is None:
            return
        if (module, frame.f_code.co_name) in self.counted:
            with self.lock:
                self.calls[f"{module}:{frame.f_code.co_name}"] += 1
        caller = frame.f_back
        while caller is not None and module_of(caller) is None:
            caller = caller.f_back  # a library between two of the project's frames
        by = module_of(caller) if caller is not None else None
        if by == module:
            return  # a call inside the module (perhaps through a library: a validator)
        on_stack = self.stack_modules(caller) | self.caller_stack
        with self.lock:
            if module not in self.entered:
                self.entered.append(module)
            elif module not in on_stack:
                self.reentered[module] += 1
                self.paths[(by or "(graph runtime)", module)] += 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=12, help="turns played before the traced one")
    parser.add_argument("--count", action="append", default=[], help="module:function to count")
    args = parser.parse_args(argv)
    tracer = Tracer(args.count)
    tracer.caller_stack = {"agent.service"}
    # every thread the agent starts (its loop, LangGraph's workers) is traced, idle
    # until the traced turn
    threading.setprofile(tracer.profile)
    with tempfile.TemporaryDirectory() as tmp:
        agent = ChatAgent(
            database_url=f"sqlite:///{tmp}/trace.sqlite",
            model=ScriptedChatModel(),
            secret="trace-secret-" + "x" * 32,
            long_term_memory="explicit",
        )
        with agent:
            first = agent.send(MESSAGE.format(n=0), session_id="trace", create_conversation=True)
            cid = first.conversation_id
            for n in range(1, args.turns):
                agent.send(MESSAGE.format(n=n), session_id="trace", conversation_id=cid)
                agent.wait_for_upkeep()
            sys.setprofile(tracer.profile)
            tracer.on = True
            agent.send(MESSAGE.format(n=args.turns), session_id="trace", conversation_id=cid)
            tracer.on = False
            sys.setprofile(None)
            agent.wait_for_upkeep()
    threading.setprofile(None)  # type: ignore[arg-type,unused-ignore]
    print(f"modules entered by one send: {len(tracer.entered)}")
    for module in tracer.entered:
        again = tracer.reentered.get(module, 0)
        print(f"  {module}" + (f"  (re-entered {again}x)" if again else ""))
    print(f"re-entries: {sum(tracer.reentered.values())}")
    for (by, module), times in tracer.paths.most_common():
        print(f"  {by} -> {module}: {times}")
    for name in sorted(tracer.calls):
        print(f"calls of {name}: {tracer.calls[name]}")


if __name__ == "__main__":
    main()
