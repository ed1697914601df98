"""The command line: `python -m agent chat` (terminal chat), `dev` and `gc`."""

from agent.cli.main import main

__all__ = ["main"]
