"""Write quality of long-term memory on RealMem's dev personas, with scripted extractors.

Each persona's user lines are replayed, session by session (each a conversation of the
persona's user), through a real `ChatAgent` (SQLite in a temp dir); the chat model is
scripted and answers each user line with the dataset's assistant line that followed it,
so the extraction input holds realistic assistant text. Long-term memory is
`long_term_memory="model"` with a scripted extractor, or `"explicit"` (offline: explicit
requests only). `agent.wait_for_upkeep()` flushes the owed turns at the end.

The extractors are in `evals.realmem_extractors`, the measures in
`evals.realmem_measures`, the persona files' reading in `evals.realmem_personas`.

With `--local`, one row only: the local small model (`AGENT_MODEL=local`, `make
local-model`) extracts and compacts, on a frozen sample (`LOCAL_SESSIONS` sessions of each
persona: a separate command, as the real-model lane's figures are; each persona's time is
printed as it ends);
the chat replies stay the dataset's. Its extraction calls are counted on the wire (a
request whose tools or response format carry the extraction schema).

Run: `python -m evals.realmem_writes [--sessions N] [--personas NAME…] [--local] [--out FILE]`
(REALMEM_DIR overrides the data folder).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel

from agent import ChatAgent
from agent.local_model import endpoint_settings, serve
from agent.models import load_compaction_model
from agent.settings import Settings
from bench.agent_bench import SECRET
from evals.realmem import DATA_DIR, DATA_ENV
from evals.realmem_extractors import Extract, ReplayModel, hostile, oracle
from evals.realmem_measures import Row, count, table
from evals.realmem_personas import Persona, load
from memory.prompts import EXTRACTION_SYSTEM

SESSIONS = 40
"""Sessions replayed per persona by default (of ~200), to keep the run near 3 minutes."""
LOCAL_SESSIONS = 3
"""Sessions replayed per persona with the local model (`--local`): the frozen sample (8
did not end within 40 minutes on a busy 2-core machine; DESIGN §24 allows 30)."""


def replay(
    persona: Persona,
    mode: str,
    extract: Extract | None,
    directory: Path,
    local: LocalExtractor | None = None,
) -> dict[str, int]:
    """The persona's user lines through a `ChatAgent`; the counts of its items, the
    extraction calls and the user turns. With `local`, its model extracts and compacts."""
    model = ReplayModel()
    model._extract = extract
    directory = Path(tempfile.mkdtemp(dir=directory))  # a store of its own
    agent = ChatAgent(
        database_url=f"sqlite:///{directory / persona.name}.sqlite",
        model=model,
        compaction_model=local.model if local else model,
        secret=SECRET,
        settings=(local.settings if local else Settings()).model_copy(
            update={"data_dir": directory}
        ),
        long_term_memory=mode,  # type: ignore[arg-type]
    )
    calls_before = local.counter.calls if local else 0
    user = persona.name.casefold()
    turns = 0
    conversation_of: dict[str, str] = {}
    with agent:
        for session in persona.sessions:
            conversation: str | None = None
            for turn in session.turns:
                model.script(turn.reply)
                result = agent.send(
                    turn.user,
                    session_id=user,
                    conversation_id=conversation,
                    create_conversation=conversation is None,
                )
                conversation, turns = result.conversation_id, turns + 1
            if conversation is not None:
                conversation_of[conversation] = session.uuid
        agent.wait_for_upkeep()
        items = agent.memories(session_id=user)["memories"]
    for item in items:  # the measures name sessions, not conversations
        item["conversationId"] = conversation_of.get(item.get("conversationId") or "")
    counts = count(persona, items)
    if local:
        return counts | {"calls": local.counter.calls - calls_before, "user_turns": turns}
    return counts | {
        "proposed": model.proposed,
        "calls": model.log.extraction_calls,
        "user_turns": turns,
    }


class ExtractionCalls(BaseCallbackHandler):
    """Counts the chat requests that ask for an extraction: those whose system message is
    the extraction prompt, whatever structured-output method sent them."""

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.calls += any(
            isinstance(message.content, str) and message.content.startswith(EXTRACTION_OPENING)
            for batch in messages
            for message in batch
        )


EXTRACTION_OPENING = EXTRACTION_SYSTEM.split("{", 1)[0][:60]
"""The extraction prompt's first words (before any of its fields)."""


@dataclass
class LocalExtractor:
    """The local small model as the extraction and compaction model, with its calls counted."""

    model: BaseChatModel
    settings: Settings
    counter: ExtractionCalls


EXTRACTORS: dict[str, tuple[str, Callable[[Persona], Extract] | None]] = {
    "oracle": ("model", oracle),
    "hostile": ("model", hostile),
    "explicit only (offline)": ("explicit", None),
}


def run_local(files: Sequence[Path], sessions: int) -> list[Row]:
    """The local model's row (`--local`): it serves for the whole run."""
    settings = Settings.from_env({"AGENT_MODEL": "local"})
    endpoint, release = serve(settings)
    try:
        served = endpoint_settings(settings, endpoint)
        counter = ExtractionCalls()
        model = load_compaction_model(served)
        # the model's own callbacks, not a `with_config` binding: `bind_tools` (the
        # function-calling rung of the ladder) reaches through a binding to the bare model
        model.callbacks = [counter]
        local = LocalExtractor(model, served, counter)
        row = Row(f"local model ({endpoint.model})")
        row.proposed = -1  # not seen on the wire
        with tempfile.TemporaryDirectory() as directory:
            for persona in (load(f, sessions) for f in files):
                started = time.perf_counter()
                row.add(replay(persona, "model", None, Path(directory), local))
                took = time.perf_counter() - started
                print(f"local model: {persona.name} in {took:.0f} s", file=sys.stderr)
        return [row]
    finally:
        release()


def run(files: Sequence[Path], sessions: int | None) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        personas = [load(f, sessions) for f in files]
        for name, (mode, make) in EXTRACTORS.items():
            row = Row(name)
            for persona in personas:
                row.add(replay(persona, mode, make(persona) if make else None, Path(directory)))
            rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=SESSIONS, help="0: all")
    parser.add_argument("--personas", nargs="*", default=())
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--local", action="store_true", help="the local model's row, on the frozen sample"
    )
    args = parser.parse_args(argv)
    data = Path(os.environ.get(DATA_ENV) or DATA_DIR)
    files = sorted(data.glob("*.json")) if data.is_dir() else []
    files = [
        f for f in files if not args.personas or any(f.name.startswith(n) for n in args.personas)
    ]
    if not files:
        print(f"realmem_writes: no persona files in {data} (set {DATA_ENV}); skipped")
        return 0
    started = time.perf_counter()
    sessions: int | None = LOCAL_SESSIONS if args.local else args.sessions or None
    rows = run_local(files, LOCAL_SESSIONS) if args.local else run(files, sessions)
    text = table(rows, sessions)
    print(text)
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
