"""Gates: a model stops mid-answer until the test opens the answer's gate.

A race test needs its concurrent request to arrive while a turn certainly runs. A
message that contains `gate-NAME` is answered by `GatedModel` up to its first word;
the model then waits until the file NAME exists in the directory named by the
environment's `GATE_DIR_VARIABLE` (`open_gate` creates the file). The test reads that
first word from the stream, makes its request, opens the gate: no sleep, no timing.
A file works alike for a model in the test's process and in a server's.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk

from agent.offline.local import LocalChatModel
from tests.fakes import PacedModel

GATE_DIR_VARIABLE = "TEST_GATE_DIR"
GATE_TIMEOUT_S = 60.0
"""A gate the test never opens fails the turn (loudly) instead of holding it forever."""
POLL_S = 0.02
_GATE = re.compile(r"\bgate-([a-z0-9]+)\b")


def new_gate() -> str:
    """A gate name no other message of the run uses."""
    return uuid.uuid4().hex[:12]


def gate_path(directory: Path, name: str) -> Path:
    """The file whose existence opens gate `name`."""
    return directory / name


def open_gate(directory: Path, name: str) -> None:
    """Let the answer that waits at gate `name` go on."""
    directory.mkdir(parents=True, exist_ok=True)
    gate_path(directory, name).touch()


def gate_of(messages: list[BaseMessage]) -> str | None:
    """The gate named by the person's latest message, if any."""
    latest = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    found = _GATE.search(latest)
    return found.group(1) if found else None


async def wait_for_gate(name: str) -> None:
    """Wait until the test opens gate `name`.

    Raises:
        TimeoutError: the gate stayed shut for `GATE_TIMEOUT_S` seconds.
    """
    gate = gate_path(Path(os.environ[GATE_DIR_VARIABLE]), name)
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while not gate.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gate {name} was never opened")
        await asyncio.sleep(POLL_S)


async def held_at_gate(
    messages: list[BaseMessage], chunks: AsyncIterator[ChatGenerationChunk]
) -> AsyncIterator[ChatGenerationChunk]:
    """A model's streamed `chunks`, stopped after the first until the gate that the
    person's latest message names opens (all of them at once when it names none)."""
    gate = gate_of(messages)
    first = True
    async for chunk in chunks:
        yield chunk
        if first and gate is not None:
            await wait_for_gate(gate)
        first = False


class Gated(LocalChatModel):
    """A local model whose streamed answer to a message naming a gate stops after its
    first piece until that gate opens: put it before the model in a class's bases.
    `LocalChatModel` paces a whole answer, never one piece, hence this one override."""

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        chunks = super()._astream(messages, stop, run_manager, **kwargs)
        async for chunk in held_at_gate(messages, chunks):
            yield chunk


class GatedModel(Gated, PacedModel):
    """`PacedModel`, whose streamed answer to a message naming a gate stops after its
    first word until that gate opens."""
