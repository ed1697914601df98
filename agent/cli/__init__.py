"""The command line: `python -m agent chat` (terminal chat) and `python -m agent dev`.

- `commands`: what the chat understands (input lines, review answers);
- `render`: what it shows (views, review payloads, turn events);
- `session`: the interactive loop;
- `main`: the argument parser and the commands.
"""

from agent.cli.main import main

__all__ = ["main"]
