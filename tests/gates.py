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
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk

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
    """The gate named by the latest message, if any."""
    found = _GATE.search(messages[-1].text) if messages else None
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


class GatedModel(PacedModel):
    """`PacedModel`, whose streamed answer to a message naming a gate stops after its
    first word until that gate opens."""

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        gate = gate_of(messages)
        first = True
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk
            if first and gate is not None:
                await wait_for_gate(gate)
            first = False
