"""A turn's context: what a model sees, built from server-side memory only, and fitted
into the model's window.

Order (a stable prefix first): system prompt, long-term block, the lines recalled from
earlier conversations, pinned decisions block, summary block (with the open
questions), recent messages, the latest user input. Client-sent history is never an
input here. `ContextParts` keeps the context in the pieces a `ContextBudget` may
shorten; each model call of a turn fits them again.

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

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

from memory.archive.lines import ArchivedLine
from memory.archive.recall import Recall, render
from memory.limits import (
    CLIP_FLOOR_CHARS,
    DEFAULT_CONTEXT_BUDGET_TOKENS,
    MAX_OPEN_QUESTION_CHARS,
    MAX_OPEN_QUESTIONS,
    MAX_PINNED_DECISION_CHARS,
    MAX_PINNED_DECISIONS,
    MAX_SUMMARY_CHARS,
)
from memory.longterm.items import MemoryItem
from memory.prompts import (
    LONG_TERM_BLOCK,
    OPEN_QUESTIONS_BLOCK,
    PINNED_BLOCK,
    RECALL_BLOCK,
    SUMMARY_BLOCK,
)
from memory.schema import ThreadState

LONG_TERM_BLOCK_ID = "memory-long-term"
PINNED_BLOCK_ID = "memory-pinned-decisions"
SUMMARY_BLOCK_ID = "memory-summary"
RECALL_BLOCK_ID = "memory-recall"


def long_term_block(items: Sequence[MemoryItem]) -> SystemMessage | None:
    """The recalled long-term items, one `[kind] text` line each, or None when none."""
    if not items:
        return None
    lines = "\n".join(f"- [{item.kind}] {item.text}" for item in items)
    return SystemMessage(content=LONG_TERM_BLOCK.format(items=lines), id=LONG_TERM_BLOCK_ID)


def recall_block(groups: Sequence[Sequence[ArchivedLine]]) -> SystemMessage | None:
    """The recalled lines, oldest first, under their date and conversation title (or None)."""
    lines = [line for group in groups for line in group]
    if not lines:
        return None
    return SystemMessage(content=RECALL_BLOCK.format(lines=render(lines)), id=RECALL_BLOCK_ID)


@dataclass(frozen=True)
class ContextParts:
    """A turn's context in the pieces a `ContextBudget` may shorten: `long_term` items and
    `recalled` groups (best first) keep their first `*_count`; `tail` is the turn's own
    messages (the input, a tool turn's calls and results), which always stay."""

    system: SystemMessage | None
    long_term: tuple[MemoryItem, ...]
    long_term_count: int
    pins: SystemMessage | None
    summary: SystemMessage | None
    recent: tuple[BaseMessage, ...]
    tail: tuple[BaseMessage, ...] = ()
    recalled: tuple[tuple[ArchivedLine, ...], ...] = ()
    recalled_count: int = 0

    def messages(self) -> list[BaseMessage]:
        """The context, in the module docstring's order."""
        kept = long_term_block(self.long_term[: self.long_term_count])
        earlier = recall_block(self.recalled[: self.recalled_count])
        head = (self.system, kept, earlier, self.pins, self.summary)
        return [block for block in head if block is not None] + [*self.recent, *self.tail]


def context_parts(
    state: ThreadState,
    latest_input: str | None,
    *,
    system_prompt: str | None = None,
    long_term: Sequence[MemoryItem] = (),
    recalled: Recall | None = None,
) -> ContextParts:
    """The pieces of a turn's context, before any fitting."""
    items = tuple(long_term)
    groups = recalled.groups if recalled is not None else ()
    pins = "\n".join(f"{n}. {pin}" for n, pin in enumerate(state.pinned_decisions, start=1))
    summary = SUMMARY_BLOCK.format(summary=state.summary)  # with the open questions
    if state.open_questions:
        questions = "\n".join(f"- {question}" for question in state.open_questions)
        summary += OPEN_QUESTIONS_BLOCK.format(questions=questions)
    return ContextParts(
        system=SystemMessage(content=system_prompt) if system_prompt else None,
        long_term=items,
        long_term_count=len(items),
        pins=SystemMessage(PINNED_BLOCK.format(pins=pins), id=PINNED_BLOCK_ID) if pins else None,
        summary=SystemMessage(summary, id=SUMMARY_BLOCK_ID) if state.summary else None,
        recent=tuple(  # the stored ids kept, for tracing
            (HumanMessage if m.role == "user" else AIMessage)(content=m.text, id=m.id)
            for m in state.messages
        ),
        tail=() if latest_input is None else (HumanMessage(content=latest_input),),
        recalled=groups,
        recalled_count=len(groups),
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
    head, tail = keep_chars // 2, keep_chars - keep_chars // 2
    clipped = text[:head] + CLIP_MARKER.format(count=len(text) - keep_chars) + text[-tail:]
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
        """The newest recent turns that fit beside the rest (whole: starting on a user's)."""
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
