"""The terminal chat's input: the terminal, or piped input echoed as a transcript."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

Reader = Callable[[str], str]
"""Prints a prompt and returns the next line; raises `EOFError` at the end of input."""


def terminal_reader(prompt: str) -> str:
    """`input`, ending the prompt line when the person presses Ctrl-D."""
    try:
        return input(prompt)
    except EOFError:
        print()
        raise


def echo_reader(source: TextIO, out: TextIO) -> Reader:
    """A reader for piped input that echoes each line after its prompt, like a transcript."""

    def read(prompt: str) -> str:
        line = source.readline()
        if not line:
            raise EOFError
        line = line.rstrip("\r\n")
        out.write(f"{prompt}{line}\n")
        out.flush()
        return line

    return read
