"""The context budget: a turn's context always fits the model.

Memory is bounded in messages; a model is bounded in tokens. Eight recent messages
of up to 16,000 characters, long-term items, pins and a 2,500-character summary can
outgrow a small model's window, and memory must never make a conversation unusable.
So the context is fitted into `ContextBudget.tokens`, in this order, until it fits:
1. clip the longest recent messages, keeping their head and tail and a marker;
2. leave the lines recalled from earlier conversations out, lowest ranked first
   (this conversation's own turns matter more than what the archive found);
3. leave the oldest recent turns out of the context (never out of memory), with
   LangChain's `trim_messages`;
4. leave long-term items out, lowest ranked first;
5. leave the summary out.
The system prompt, the pinned decisions and the new input always stay: a new input
that cannot fit beside them and the largest summary is refused at the boundary
(`ContextBudget.input_allowance`), before anything is stored.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, trim_messages
from langchain_core.messages.utils import count_tokens_approximately

from memory.context import ContextParts
from memory.limits import (
    CLIP_FLOOR_CHARS,
    DEFAULT_CONTEXT_BUDGET_TOKENS,
    MAX_OPEN_QUESTION_CHARS,
    MAX_OPEN_QUESTIONS,
    MAX_PINNED_DECISION_CHARS,
    MAX_PINNED_DECISIONS,
    MAX_SUMMARY_CHARS,
)

TokenCounter = Callable[[Sequence[BaseMessage]], int]
"""Counts the tokens of a list of messages (LangChain's `token_counter` shape)."""

CLIP_MARKER = "\n[… {count:,} characters left out to fit the model's context …]\n"
RESERVED_MEMORY_CHARS = (
    MAX_PINNED_DECISIONS * MAX_PINNED_DECISION_CHARS
    + MAX_SUMMARY_CHARS
    + MAX_OPEN_QUESTIONS * MAX_OPEN_QUESTION_CHARS
)
"""The most that pins, summary and open questions can hold: an input is accepted only if
it fits beside all of them, so fitting never has to drop what must stay."""


def clip(message: BaseMessage, keep_chars: int) -> BaseMessage:
    """`message` with its text cut to about `keep_chars`: head and tail kept, a marker
    between them saying how much was left out (the stored message is untouched)."""
    text = message.text
    if len(text) <= keep_chars:
        return message
    head = keep_chars // 2
    tail = keep_chars - head
    left_out = len(text) - head - tail
    clipped = text[:head] + CLIP_MARKER.format(count=left_out) + text[-tail:]
    return message.model_copy(update={"content": clipped})


@dataclass(frozen=True)
class ContextBudget:
    """How many tokens a turn's context may hold (`AGENT_CONTEXT_BUDGET_TOKENS`), counted
    by the model's own counter where it has a local one."""

    tokens: int = DEFAULT_CONTEXT_BUDGET_TOKENS
    counter: TokenCounter = count_tokens_approximately

    def count(self, messages: Sequence[BaseMessage]) -> int:
        return self.counter(list(messages))

    def input_allowance(self, system_prompt: str | None) -> int:
        """Tokens a new input may have: what is left beside the system prompt and the
        largest pins, summary and open questions memory can hold."""
        return _allowance(self, system_prompt)

    def input_tokens(self, text: str) -> int:
        """The tokens of a new input, counted as the context will count it."""
        return self.count([HumanMessage(content=text)])

    def fit(self, parts: ContextParts) -> ContextParts:
        """`parts` shortened until they fit (module docstring); unchanged when they do."""
        if self.count(parts.messages()) <= self.tokens:
            return parts
        parts = self._clip_recent(parts)
        while parts.recalled_count and self.count(parts.messages()) > self.tokens:
            parts = replace(parts, recalled_count=parts.recalled_count - 1)
        if self.count(parts.messages()) > self.tokens:
            parts = self._drop_oldest_turns(parts)
        while parts.long_term_count and self.count(parts.messages()) > self.tokens:
            parts = replace(parts, long_term_count=parts.long_term_count - 1)
        if parts.summary is not None and self.count(parts.messages()) > self.tokens:
            parts = replace(parts, summary=None)
        return parts

    def _clip_recent(self, parts: ContextParts) -> ContextParts:
        """Clip the longest recent message, then the next, down to what is needed (never
        below `CLIP_FLOOR_CHARS`), until the context fits or nothing is left to clip."""
        recent = list(parts.recent)
        for _ in range(4 * len(recent)):
            excess = self.count(replace(parts, recent=tuple(recent)).messages()) - self.tokens
            if excess <= 0:
                break
            index = max(range(len(recent)), key=lambda i: len(recent[i].text))
            message = recent[index]
            length = len(message.text)
            if length <= CLIP_FLOOR_CHARS:
                break
            per_token = length / max(self.count([message]), 1)
            marker = len(CLIP_MARKER.format(count=length))
            target = max(CLIP_FLOOR_CHARS, int(length - excess * per_token) - marker)
            recent[index] = clip(message, target)
        return replace(parts, recent=tuple(recent))

    def _drop_oldest_turns(self, parts: ContextParts) -> ContextParts:
        """Keep the newest recent turns that fit beside everything else (whole turns: the
        kept part starts with a user message)."""
        rest = replace(parts, recent=())
        room = self.tokens - self.count(rest.messages())
        if room <= 0:
            return rest
        kept = trim_messages(
            list(parts.recent),
            max_tokens=room,
            token_counter=self.counter,
            strategy="last",
            start_on="human",
            allow_partial=False,
        )
        return replace(parts, recent=tuple(kept))


@functools.lru_cache(maxsize=64)
def _allowance(budget: ContextBudget, system_prompt: str | None) -> int:
    """`ContextBudget.input_allowance`, counted once per budget and prompt."""
    fixed: list[BaseMessage] = [SystemMessage(content="x" * RESERVED_MEMORY_CHARS)]
    if system_prompt:
        fixed.append(SystemMessage(content=system_prompt))
    return budget.tokens - budget.count(fixed)
