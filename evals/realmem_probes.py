"""What a RealMem probe's context holds (`evals.realmem`): its evidence found or not, the
BM25 baseline's context beside it, and whether an off-topic probe recalled anything."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from rank_bm25 import BM25Okapi

from evals.dialogue import content_words
from evals.realmem_data import Query, normalised
from evals.systems import LAST_MESSAGES, bm25_words
from memory.context import LONG_TERM_BLOCK_ID, RECALL_BLOCK_ID
from memory.longterm.recall import ALWAYS_ON_KINDS

POINT_SHARE = 0.6
_ITEM_KIND = re.compile(r"^- \[(\w+)\] ", re.MULTILINE)


@dataclass(frozen=True)
class Probe:
    """One query asked one way, by one system."""

    persona: str
    query: str
    category: str
    system: str
    mode: str
    points: tuple[bool, ...]
    sessions: tuple[bool, ...]
    recalled_tokens: int
    """Tokens of the recalled block (`bm25`: of the lines it added)."""


def judge(
    text: str, query: Query, sentences: dict[str, tuple[str, ...]]
) -> tuple[tuple[bool, ...], tuple[bool, ...]]:
    """Per point, whether `text` holds it; per evidence session, whether a line of it."""
    words = set(content_words(text))
    points = []
    for point in query.points:
        wanted = set(content_words(point))
        points.append(bool(wanted) and len(wanted & words) / len(wanted) >= POINT_SHARE)
    folded = normalised(text)
    found = tuple(any(s in folded for s in sentences.get(u, ())) for u in query.sessions)
    return tuple(points), found


def memory_text(context: Sequence[BaseMessage]) -> str:
    """The context without the system prompt and the turn's own message."""
    kept = [m for m in context[:-1] if not (isinstance(m, SystemMessage) and m.id is None)]
    return "\n".join(m.text for m in kept)


@dataclass(frozen=True)
class Said:
    conversation: str
    role: str
    text: str
    terms: tuple[str, ...]
    tokens: int


def said(conversation: str, role: str, text: str) -> Said:
    terms = tuple(bm25_words(text)) or ("\x00",)
    tokens = count_tokens_approximately([HumanMessage(content=f"{role}: {text}")])
    return Said(conversation, role, text, terms, tokens)


def bm25_context(
    lines: Sequence[Said], query: str, conversation: str | None, budget: int
) -> tuple[str, int]:
    """What `bm25` shows for `query`: the conversation's last lines (none when it is
    None), and the best other earlier lines within `budget` tokens, in the order said."""
    mine = [i for i, line in enumerate(lines) if line.conversation == conversation]
    shown = mine[-LAST_MESSAGES:]
    terms = bm25_words(query)
    chosen: list[int] = []
    if lines and terms:
        scores = BM25Okapi([line.terms for line in lines]).get_scores(terms)
        ranked = sorted((i for i in range(len(lines)) if scores[i] > 0), key=lambda i: -scores[i])
        used = 0
        for i in (i for i in ranked if i not in shown):
            if used + lines[i].tokens <= budget:
                chosen.append(i)
                used += lines[i].tokens
    text = "\n".join(f"{lines[i].role}: {lines[i].text}" for i in sorted(chosen + shown))
    return text, sum(lines[i].tokens for i in chosen)


def recalls_anything(context: Sequence[BaseMessage]) -> tuple[bool, bool]:
    """Whether `context` holds recalled lines; whether it holds a long-term item that is
    not always on (a boundary or a style instruction applies to every message)."""
    ids = {message.id: message.text for message in context}
    kinds = _ITEM_KIND.findall(ids.get(LONG_TERM_BLOCK_ID, ""))
    return RECALL_BLOCK_ID in ids, any(kind not in ALWAYS_ON_KINDS for kind in kinds)
