"""Shared by the offline-model tests: a conversation's stored state from (user,
assistant) turns. (The offline model records what it is sent with `record=True`.)"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memory.schema import ChatThreadMessage, ThreadState

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def thread_state(
    turns: Sequence[tuple[str, str]], summary: str = "", pins: Sequence[str] = ()
) -> Any:
    messages = []
    for index, (user, assistant) in enumerate(turns):
        at = T0 + timedelta(minutes=index)
        messages.append(ChatThreadMessage(id=f"u{index}", role="user", text=user, created_at=at))
        messages.append(
            ChatThreadMessage(id=f"a{index}", role="assistant", text=assistant, created_at=at)
        )
    return ThreadState(messages=messages, summary=summary, pinned_decisions=list(pins))
