"""Text helpers of the memory package: a text cut to a limit, a text quoted as data."""

from __future__ import annotations

import json


def quoted(text: str) -> str:
    """`text` as a JSON string literal: it cannot close its quotes or start a new line, so
    what a user or the assistant said can never read as another speaker's line."""
    return json.dumps(text, ensure_ascii=False)


def clamp(text: str, limit: int) -> str:
    """`text` stripped and cut to at most `limit` characters (an ellipsis marks a cut)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"
