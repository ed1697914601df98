"""A worker process for the upkeep crash tests: finishes a turn, then stalls in the memory
upkeep that runs after it, so that it can be killed there (SIGKILL, `kill_in_upkeep`)
and the upkeep caught up in another process.

`python -m tests.integration.upkeep_worker DATABASE_URL DATA_DIR WORKDIR STALL_AT`

It sends `CUE_TURN` (model extraction on) in a new conversation, writes the conversation
id and the turn's upkeep state to `WORKDIR/done` once the turn is done, and waits. Its
model stalls at `STALL_AT` (`extraction` or `compaction`: the latter after
`TURNS_BEFORE_COMPACTION` more turns), writing `WORKDIR/stalled`, until it is killed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from agent import ChatAgent
from agent.offline import DEFAULT_HANDLERS, OfflineChatModel
from agent.settings import Settings
from memory import CompactionOutput
from memory.longterm import ExtractionOutput, Operation
from tests.integration.stalling import kill_when_stalled, stall

STALL_TIMEOUT = 60.0
SECRET = "u" * 40
SESSION = "upkeep"
CUE_TURN = "I prefer green tea in the afternoon."
KEPT = Operation(op="add", turn=1, quote=CUE_TURN, kind="preference", text=CUE_TURN, importance=3)
TURNS_BEFORE_COMPACTION = 4
"""Turns without a cue after the first: ten messages, past the eight compaction allows."""


def extracting(answer: Callable[[Sequence[BaseMessage]], BaseModel]) -> OfflineChatModel:
    """The offline model, with `answer` for extraction calls."""
    handlers: dict[type[BaseModel], Callable[[Sequence[BaseMessage]], BaseModel]] = dict(
        DEFAULT_HANDLERS
    )
    handlers[ExtractionOutput] = answer
    return OfflineChatModel(structured_handlers=handlers)


def keeping_model(calls: list[str]) -> OfflineChatModel:
    """The offline model whose extraction keeps `CUE_TURN` (and records each call)."""

    def extract(messages: Sequence[BaseMessage]) -> BaseModel:
        calls.append("extraction")
        return ExtractionOutput(operations=[KEPT])

    return extracting(extract)


def stalling_model(stall_at: str, marker: Path) -> OfflineChatModel:
    model = keeping_model([])
    if stall_at == "extraction":
        return extracting(lambda messages: stall(marker))
    handlers = dict(model.structured_handlers)
    handlers[CompactionOutput] = lambda messages: stall(marker)
    return OfflineChatModel(structured_handlers=handlers)


def kill_in_upkeep(
    database_url: str,
    root: Path,
    stall_at: str,
    timeout: float = STALL_TIMEOUT,
    before_kill: Callable[[subprocess.Popen[bytes], str], None] | None = None,
) -> dict[str, str]:
    """Run the worker (data under `root`), SIGKILL it where its upkeep stalls; returns
    what it wrote when its turn was done (`conversation`, `upkeep`). `before_kill` is
    called with the stalled worker and its conversation id just before the kill.

    Raises:
        RuntimeError: the worker ended, or did not stall within `timeout` seconds.
    """

    def conversation_of(process: subprocess.Popen[bytes], workdir: Path) -> None:
        if before_kill is not None:
            before_kill(process, json.loads((workdir / "done").read_text())["conversation"])

    workdir = kill_when_stalled(
        __name__,
        database_url,
        root,
        stall_at,
        timeout,
        ready=lambda folder: (folder / "done").exists(),
        before_kill=conversation_of,
    )
    return dict(json.loads((workdir / "done").read_text()))


def main(database_url: str, data_dir: str, workdir: str, stall_at: str) -> None:
    folder = Path(workdir)
    model = stalling_model(stall_at, folder / "stalled")
    # each upkeep extracts: the kill comes while the turn's extraction is owed and running
    settings = Settings(data_dir=Path(data_dir), long_term_memory="model", extraction_batch_turns=1)
    agent = ChatAgent(database_url=database_url, model=model, secret=SECRET, settings=settings)
    result = agent.send(CUE_TURN, session_id=SESSION, create_conversation=True)
    cid = result.conversation_id
    if stall_at == "compaction":
        agent.wait_for_upkeep()  # the extraction is paid; the compaction will stall
        for n in range(TURNS_BEFORE_COMPACTION):
            result = agent.send(f"Question {n}.", session_id=SESSION, conversation_id=cid)
    done = {"conversation": cid, "upkeep": result.upkeep, "compaction": result.compaction}
    (folder / "done").write_text(json.dumps(done))
    while True:  # until SIGKILL (the upkeep stalls in its own thread)
        time.sleep(1)


if __name__ == "__main__":
    main(*sys.argv[1:5])
