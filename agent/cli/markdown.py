"""Answers as Markdown in a terminal, rendered with `rich` as they stream in (piped
output stays plain text, a transcript)."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown


class MarkdownView:
    """Shows an answer as Markdown, re-rendered as its tokens arrive; a line printed in
    between closes the rendering so far, and later text starts a new block."""

    def __init__(self, out: TextIO, *, width: int | None = None, force: bool = False) -> None:
        """Render to `out` (a terminal; `force` for one that does not say so, in tests)."""
        self.console = Console(file=out, width=width, force_terminal=force or None)
        self._live: Live | None = None
        self._text = ""

    def feed(self, text: str) -> None:
        """Add streamed answer text and redraw the block."""
        self._text += text
        if self._live is None:
            self._live = Live(
                Markdown(self._text),
                console=self.console,
                auto_refresh=False,
                vertical_overflow="visible",
            )
            self._live.start()
        self._live.update(Markdown(self._text), refresh=True)

    def close(self) -> None:
        """Leave the block on screen as it is; later text starts a new one."""
        if self._live is not None:
            self._live.stop()
        self._live, self._text = None, ""

    def show(self, text: str) -> None:
        """Print a whole answer (a workflow's, which arrives in one piece)."""
        self.close()
        self.console.print(Markdown(text))
