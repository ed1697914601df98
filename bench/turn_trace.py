"""The path of one turn, traced: which of the project's modules a `ChatAgent.send`
enters between the call and its result (memory upkeep apart), which it enters again
after leaving them, and how often it calls a few functions that should run once.

A module counts again only when the turn re-enters it: a call into it while no frame of
it is on the stack (of the calling thread, or of the thread that started the turn: a
graph node runs in a worker thread on behalf of the caller).

With `--count`, one exchange (a `send` and its upkeep) is counted instead: its reads
(storage round trips loading a conversation's memory or registry document) and its
commits (write transactions), each by the function that asked for it; the archive's and
the long-term store's queries are counted apart.

Run: `python -m bench.turn_trace [--turns N] [--count] [--calls module:function …]`.
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
STORAGE = ("memory.storage", "memory.session_documents", "memory.archive", "memory.longterm")
ARCHIVE_QUERIES = ("search", "frequencies", "page", "count", "lines")
ITEM_QUERIES = ("batch", "search", "get", "abatch", "asearch", "aget")
KINDS = {
    "read": "reads",
    "commit": "commits",
    "archive query": "archive queries",
    "item query": "item queries",
}
MESSAGE = "Turn {n}: I live in Porto, and please keep the budget section short."


def asker(frame: FrameType | None) -> str:
    """The nearest project function outside storage on the stack: who asked."""
    while frame is not None:
        module = module_of(frame)
        if module is not None and not module.startswith(STORAGE):
            return f"{module}:{frame.f_code.co_name}"
        frame = frame.f_back
    return "(unknown)"


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


class StorageCounter:
    """Counts an agent's storage round trips while `on`, by kind and by who asked."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.each: list[Counter[str]] = []
        self.by: Counter[tuple[str, str]] = Counter()
        self.lock = threading.Lock()
        self.on = False

    def wrap(self, owner: Any, name: str, kind: str) -> None:
        method = getattr(owner, name, None)
        if method is None:
            return

        def counted(*args: Any, **kwargs: Any) -> Any:
            if self.on:
                with self.lock:
                    self.kinds[kind] += 1
                    self.each[-1][kind] += 1
                    self.by[(kind, asker(sys._getframe(1)))] += 1
            return method(*args, **kwargs)

        setattr(owner, name, counted)

    def attach(self, agent: ChatAgent) -> None:
        documents = agent.memory.threads.documents
        self.wrap(documents, "get_documents", "read")
        self.wrap(documents, "transaction", "commit")  # put_documents opens one too
        backend = agent.memory.archive.backend
        for name in ARCHIVE_QUERIES:
            self.wrap(backend, name, "archive query")
        if agent.long_term is not None:
            for name in ITEM_QUERIES:
                self.wrap(agent.long_term.store, name, "item query")

    def report(self, exchanges: int) -> None:
        for kind, kinds in KINDS.items():
            total = self.kinds.get(kind, 0)
            most = max((each[kind] for each in self.each), default=0)
            print(f"{kinds} per exchange: {total / exchanges:g} (at most {most})")
            for (counted_kind, by), times in sorted(self.by.items()):
                if counted_kind == kind:
                    print(f"  {by}: {times / exchanges:g}")


def trace_agent(directory: str) -> ChatAgent:
    """The traced agent: SQLite in `directory`, the zero-latency scripted model."""
    return ChatAgent(
        database_url=f"sqlite:///{directory}/trace.sqlite",
        model=ScriptedChatModel(),
        secret="trace-secret-" + "x" * 32,
        long_term_memory="explicit",
    )


def count_exchanges(turns: int, exchanges: int) -> None:
    """Play `turns` exchanges, then count the next `exchanges` ones."""
    counter = StorageCounter()
    with tempfile.TemporaryDirectory() as tmp:
        agent = trace_agent(tmp)
        with agent:
            counter.attach(agent)
            first = agent.send(MESSAGE.format(n=0), session_id="trace", create_conversation=True)
            cid = first.conversation_id
            agent.wait_for_upkeep()
            for n in range(1, turns + exchanges):
                counter.on = n >= turns
                counter.each.append(Counter())
                agent.send(MESSAGE.format(n=n), session_id="trace", conversation_id=cid)
                agent.wait_for_upkeep()
            counter.on = False
    counter.report(exchanges)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=12, help="turns played before the traced one")
    parser.add_argument("--calls", action="append", default=[], help="module:function to count")
    parser.add_argument(
        "--count", action="store_true", help="count an exchange's reads and commits instead"
    )
    parser.add_argument("--exchanges", type=int, default=5, help="exchanges counted (--count)")
    args = parser.parse_args(argv)
    if args.count:
        count_exchanges(args.turns, args.exchanges)
        return
    tracer = Tracer(args.calls)
    tracer.caller_stack = {"agent.service"}
    # every thread the agent starts (its loop, LangGraph's workers) is traced, idle
    # until the traced turn
    threading.setprofile(tracer.profile)
    with tempfile.TemporaryDirectory() as tmp:
        agent = trace_agent(tmp)
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
