"""`/export FILE` and `/import FILE`: a session's export document to and from a file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.cli.commands import UsageError
from memory.files import PRIVATE_FILE_MODE
from memory.limits import MAX_EXPORT_BYTES

if TYPE_CHECKING:
    from agent.service import ChatAgent

CANNOT = "cannot {verb} {path}: {why}"


def export_to(agent: ChatAgent, session_id: str, path: str) -> str:
    """Write the session's export document to `path`, readable by this user only, as the
    agent's files are; the line that says so (`UsageError`: it cannot be written)."""
    document = json.dumps(agent.export(session_id=session_id), ensure_ascii=False)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        fd = os.open(Path(path).expanduser(), flags, PRIVATE_FILE_MODE)
        os.fchmod(fd, PRIVATE_FILE_MODE)  # also when the file existed with another mode
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(document)
    except OSError as exc:
        raise UsageError(CANNOT.format(verb="write", path=path, why=exc.strerror)) from None
    return f"exported this session to {path}"


def import_from(agent: ChatAgent, session_id: str, path: str) -> str:
    """Import the export document in `path`: what it did, a line per part (`UsageError`:
    unreadable; `InvalidRequest`: refused, nothing written)."""
    try:
        with Path(path).expanduser().open("rb") as source:
            document = source.read(MAX_EXPORT_BYTES + 1)  # past the limit: refused whole
    except OSError as exc:
        raise UsageError(CANNOT.format(verb="read", path=path, why=exc.strerror)) from None
    summary: dict[str, Any] = agent.import_(document, session_id=session_id)
    lines = [f"imported {path}:"]
    for part, counts in summary.items():
        lines.append(f"  {part}: " + ", ".join(f"{n} {what}" for what, n in counts.items()))
    return "\n".join(lines)
