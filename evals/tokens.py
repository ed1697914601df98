"""A token estimate that does not undercount Chinese.

`count_tokens_approximately` divides characters by four, which suits English but counts
a Chinese sentence at a quarter of what a tokenizer makes of it: a CJK character is
about one token. Here CJK characters count one each, everything else four characters
per token, plus a few tokens per message for its role and framing.
"""

from __future__ import annotations

from collections.abc import Iterable

from langchain_core.messages import BaseMessage

from memory.text import approximate_tokens

PER_MESSAGE = 3


def count_text(text: str) -> int:
    return approximate_tokens(text)


def count_messages(messages: Iterable[BaseMessage]) -> int:
    total = 0
    for message in messages:
        total += PER_MESSAGE + count_text(message.text)
        for call in getattr(message, "tool_calls", None) or []:
            total += count_text(str(call.get("args", "")))
    return total
