"""Text helpers: a text cut to a limit, a text quoted as data, a text's approximate tokens."""

from __future__ import annotations

import json
import re

_CJK = re.compile("[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


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


def approximate_tokens(text: str) -> int:
    """About how many tokens `text` takes: a CJK character is about one token, other
    text four characters a token (LangChain's approximate counter alone would count a
    Chinese sentence at a quarter of what a tokenizer makes of it)."""
    cjk = len(_CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4
