"""Following a turn's memory upkeep in the terminal chat: its lines print as they arrive
for a moment after the turn, and what is left before the next command's output."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

from agent.cli.printer import TurnPrinter, print_upkeep
from agent.client_events import ClientEvent

UPKEEP_WAIT = 3.0
"""Seconds the prompt waits after a turn for its upkeep's lines: after it, a line printed
while someone types would break their line, so the rest waits for the next command."""
UPKEEP_LATER = "[memory: upkeep still running; what it did prints with your next command]"


class UpkeepFollower:
    """Prints the memory upkeep that follows each turn's `done`, on the chat's `runner`."""

    def __init__(self, runner: asyncio.Runner) -> None:
        self._runner = runner
        self._upkeep: asyncio.Task[None] | None = None
        """The last turn's memory upkeep, still printing its lines (`UPKEEP_WAIT`)."""

    def settle(self) -> None:
        """Print the rest of what the last turn's memory upkeep did, once it ends (one that
        outlasted `UPKEEP_WAIT`): the next command runs after its lines."""
        upkeep, self._upkeep = self._upkeep, None
        if upkeep is not None:
            self._join(upkeep, None)

    def follow(self, events: AsyncGenerator[ClientEvent, None], printer: TurnPrinter) -> None:
        """Print the memory upkeep's lines that follow a turn's `done` as they arrive, for
        up to `UPKEEP_WAIT` seconds; past that the prompt comes back and says so."""
        upkeep = self._runner.get_loop().create_task(print_upkeep(events, printer))
        if not self._join(upkeep, UPKEEP_WAIT):
            self._upkeep = upkeep
            printer.line(UPKEEP_LATER)

    def _join(self, upkeep: asyncio.Task[None], timeout: float | None) -> bool:
        """Run the upkeep's printing until it ends or `timeout`; whether it ended."""
        with contextlib.suppress(KeyboardInterrupt):  # the upkeep goes on in the agent
            self._runner.run(asyncio.wait({upkeep}, timeout=timeout))
        if not upkeep.done():
            return False
        upkeep.result()  # a failure of its stream is the command's (logged, in words)
        return True
