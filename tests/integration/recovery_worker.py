"""A worker process for the recovery tests and benchmark: runs a delivery and stalls at a
chosen step, so that it can be killed there (SIGKILL, `kill_while_stalled`) and the run
recovered in another process (with `counting_model`, which counts the calls made).

`python -m tests.integration.recovery_worker DATABASE_URL DATA_DIR WORKDIR STALL_AT`

It creates a conversation with a chat turn (so that it is listed), writes its id to
`WORKDIR/conversation`, then sends `REQUEST` as a delivery. The offline model answers
every stage; at `STALL_AT` (`task:N` for task N, `report` for the report) it writes
`WORKDIR/stalled` and waits to be killed.

With `STALL_AT` `tasklist:N` it sends `TASKLIST_REQUEST` instead, approves the plan
(answering the strategy review) and stalls at the N-th task; `tasklist-first:N` does
the same with the task list as the conversation's first message.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from agent import ChatAgent
from agent.offline import DEFAULT_HANDLERS, OfflineChatModel
from agent.settings import Settings
from graphs.delivery import DeliveryReport, DeliveryTaskResult
from graphs.tasklist import TasklistTaskResult
from tests.integration.stalling import kill_when_stalled, stall

STALL_TIMEOUT = 60.0
SECRET = "r" * 40
SESSION = "recovery"
REQUEST = (
    "/delivery Draft the launch notes, write the support FAQ, prepare the demo script, "
    "and collect the pricing table."
)
"""Four clauses: the offline planner makes five tasks (one per clause, then a check)."""
TASKLIST_REQUEST = (
    "/tasklist Draft the launch notes, write the support FAQ, and prepare the demo script."
)
_TASK = re.compile(r'<task number="(\d+)"')


def task_number(messages: Sequence[BaseMessage]) -> int:
    """The task a `DeliveryTaskResult` request is about."""
    found = _TASK.search(" ".join(m.text for m in messages))
    return int(found.group(1)) if found else 0


def stalling_model(stall_at: str, marker: Path) -> OfflineChatModel:
    handlers: dict[type[BaseModel], Callable[[Sequence[BaseMessage]], BaseModel]] = dict(
        DEFAULT_HANDLERS
    )
    if stall_at.startswith(("tasklist:", "tasklist-first:")):
        nth, executed = int(stall_at.rpartition(":")[2]), handlers[TasklistTaskResult]
        calls = Counter[str]()

        def tasklist_task(messages: Sequence[BaseMessage]) -> BaseModel:
            calls["task"] += 1
            if calls["task"] == nth:
                stall(marker)
            return executed(messages)

        handlers[TasklistTaskResult] = tasklist_task
    elif stall_at.startswith("task:"):
        number, answer = int(stall_at.removeprefix("task:")), handlers[DeliveryTaskResult]

        def task(messages: Sequence[BaseMessage]) -> BaseModel:
            if task_number(messages) == number:
                stall(marker)
            return answer(messages)

        handlers[DeliveryTaskResult] = task
    else:

        def report(messages: Sequence[BaseMessage]) -> BaseModel:
            stall(marker)

        handlers[DeliveryReport] = report
    return OfflineChatModel(structured_handlers=handlers)


def counting_model(counts: Counter[str], pause: float = 0.0) -> OfflineChatModel:
    """The offline model, counting the structured calls it answers by schema name (each
    after `pause` seconds, a stand-in for a real model's latency)."""

    def counted(
        schema: type[BaseModel], answer: Callable[[Sequence[BaseMessage]], BaseModel]
    ) -> Callable[[Sequence[BaseMessage]], BaseModel]:
        def handler(messages: Sequence[BaseMessage]) -> BaseModel:
            counts[schema.__name__] += 1
            time.sleep(pause)
            return answer(messages)

        return handler

    handlers = {schema: counted(schema, answer) for schema, answer in DEFAULT_HANDLERS.items()}
    return OfflineChatModel(structured_handlers=handlers)


def kill_while_stalled(
    database_url: str, root: Path, stall_at: str, timeout: float = STALL_TIMEOUT
) -> str:
    """Run a delivery in a worker process (data under `root`), SIGKILL it where it
    stalls; returns its conversation id.

    Raises:
        RuntimeError: the worker ended, or did not stall within `timeout` seconds.
    """
    workdir = kill_when_stalled(__name__, database_url, root, stall_at, timeout)
    return (workdir / "conversation").read_text()


def main(database_url: str, data_dir: str, workdir: str, stall_at: str) -> None:
    folder = Path(workdir)
    model = stalling_model(stall_at, folder / "stalled")
    settings = Settings(data_dir=Path(data_dir), long_term_memory="off")
    with ChatAgent(
        database_url=database_url, model=model, secret=SECRET, settings=settings
    ) as agent:
        if stall_at.startswith("tasklist-first:"):
            planned = agent.send(TASKLIST_REQUEST, session_id=SESSION, create_conversation=True)
            cid = planned.conversation_id
            (folder / "conversation").write_text(cid)
        elif stall_at.startswith("tasklist:"):
            cid = agent.send("hello", session_id=SESSION, create_conversation=True).conversation_id
            (folder / "conversation").write_text(cid)
            agent.send(TASKLIST_REQUEST, session_id=SESSION, conversation_id=cid)
        else:
            first = agent.send("hello", session_id=SESSION, create_conversation=True)
            (folder / "conversation").write_text(first.conversation_id)
            agent.send(REQUEST, session_id=SESSION, conversation_id=first.conversation_id)
            raise SystemExit("the delivery finished: it was meant to stall")
        agent.resume({"action": "approve"}, session_id=SESSION, conversation_id=cid)
    raise SystemExit("the task list finished: it was meant to stall")


if __name__ == "__main__":
    main(*sys.argv[1:5])
