"""Custom stream events (`stream_mode="custom"`): route, tool calls, memory status."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer


def emit(event: str, **fields: Any) -> None:
    """Send `{"event": event, **fields}` to the custom stream (a no-op outside a run)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a runnable context
        return
    writer({"event": event, **fields})


def emit_memory(stage: str, status: str, **fields: Any) -> None:
    """A `memory` status event: its stage (`write`, `remember`, `compact`, …) and status."""
    emit("memory", stage=stage, status=status, **fields)
