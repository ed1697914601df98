"""Recall from the archive: which earlier lines a turn's context gets, within its budget.

Pure functions over the hits of one search. The query is the new message, plus the
previous user message when the new one is short or refers back ("and what about
that?"). A hit must clear a relevance floor: it shares a subject term with the query
(not a stop word, a number or a lone letter: `memory.archive.terms.term_weight`), so a
message that shares nothing with the archive injects nothing; and it must score better
than any line the context already holds (the current conversation answers first: a
line that matches no better would only compete with it). Hits are ranked by
reciprocal-rank fusion of their lexical rank and their recency rank; lines the context
already holds (this conversation's recent messages, text its summary quotes) are left
out.

Hits are what the user said: the archive is the record of the user's own words, and
an assistant's answer often repeats what its context held (a summary, remembered
items, earlier lines), so ranking answers would bring a conversation's context back
into another's. Answers come with the user lines they belong to: the answer to a
question, the assistant's question before a short reply ("yes, that one").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory.archive.lines import FORGOTTEN, REDACTED, ArchivedLine
from memory.archive.terms import line_terms, query_terms, term_weight
from memory.schema import ThreadState

RRF_K = 60
RECENCY_WEIGHT = 0.25
"""Weight of the recency rank beside the lexical rank (1) in the fusion."""
SHORT_QUERY_TERMS = 4
SHORT_ANSWER_TERMS = 6
"""A user line with fewer terms than this is an answer that needs its question."""
CANDIDATES = 50
"""Hits read per recall (the best by lexical rank), before fusion and the floor."""
LINE_CHARS = 600
"""An archived line is cut to this many characters in the context."""
NEAR_DUPLICATE = 0.8
"""A hit whose subject terms are at least this share in one line the context already
holds (a recent message, or a line recalled before it) says nothing new: it is left out,
so that a conversation that keeps saying much the same thing does not fill the block
with copies of one line."""
_REFERS_BACK = re.compile(
    r"\b(?:that|it|this|those|these|them|there|he|she|they|his|her|again|same|also)\b"
    r"|那个|这个|那些|这些|它|他|她|刚才|上面|同样|也是",
    re.IGNORECASE,
)
_SPACES = re.compile(r"\s+")
_WORDS = re.compile(r"\w+")


def recall_query(text: str, state: ThreadState) -> tuple[str, ...]:
    """The terms a turn looks for: its message's, and the previous user message's when
    the new one is short or refers back."""
    terms = query_terms(text)
    if len(terms) >= SHORT_QUERY_TERMS and not _REFERS_BACK.search(text):
        return terms
    previous = next((m.text for m in reversed(state.messages) if m.role == "user"), None)
    if previous is None:
        return terms
    return tuple(dict.fromkeys((*terms, *query_terms(previous))))


def clears_floor(line: ArchivedLine, terms: Sequence[str]) -> bool:
    """Whether `line` shares a subject term with the query (see the module docstring)."""
    return any(term_weight(term) >= 1.0 for term in line_terms(line.text).intersection(terms))


def _folded(text: str) -> str:
    return _SPACES.sub(" ", text).casefold().strip()


def fuse(hits: Sequence[ArchivedLine]) -> list[ArchivedLine]:
    """`hits` (best lexical rank first) re-ranked by reciprocal-rank fusion with recency."""
    by_recency = sorted(hits, key=lambda line: (line.created_at, line.id), reverse=True)
    recency = {line.id: rank for rank, line in enumerate(by_recency, start=1)}
    scored = [
        (1 / (RRF_K + rank) + RECENCY_WEIGHT / (RRF_K + recency[line.id]), line)
        for rank, line in enumerate(hits, start=1)
    ]
    return [line for _, line in sorted(scored, key=lambda pair: pair[0], reverse=True)]


_QUESTION = re.compile(
    r"[?？]\s*$|^\s*(?:who|what|when|where|which|why|how|should|can|could|do|does|is|are)\b"
    r"|吗|什么|哪|怎么|为什么|几",
    re.IGNORECASE,
)


def _with_neighbours(line: ArchivedLine) -> list[ArchivedLine]:
    """`line` with the assistant's question it replies to (a short reply) or the
    assistant's answer it got (a question)."""
    group = [line]
    previous, following = line.previous, line.following
    if (
        previous is not None
        and previous.role == "assistant"
        and len(line_terms(line.text)) < SHORT_ANSWER_TERMS
    ):
        group.insert(0, previous)
    if following is not None and following.role == "assistant" and _QUESTION.search(line.text):
        group.append(following)
    return group


@dataclass(frozen=True)
class Recall:
    """The archived lines a turn's context gets.

    Attributes:
        groups: best first; each a hit, after the neighbour that explains it if any
            (the context budget drops whole groups, lowest ranked first).
    """

    groups: tuple[tuple[ArchivedLine, ...], ...] = ()

    @property
    def lines(self) -> tuple[ArchivedLine, ...]:
        """Every recalled line, group by group."""
        return tuple(line for group in self.groups for line in group)

    @property
    def ids(self) -> list[int]:
        """The archived lines' ids (the `memory` event reports them)."""
        return [line.id for line in self.lines]


def line_tokens(line: ArchivedLine) -> int:
    """About how many tokens a line takes in the block (4 characters a token, as
    LangChain's approximate counter, plus its date, title and role)."""
    return (min(len(line.text), LINE_CHARS) + len(line.title) + 32) // 4 + 1


def choose(
    hits: Sequence[ArchivedLine],
    terms: Sequence[str],
    *,
    conversation_id: str,
    state: ThreadState,
    max_tokens: int,
) -> Recall:
    """The lines to recall among `hits` (see the module docstring)."""
    in_context = {m.id for m in state.messages}
    summary = _folded(state.summary)

    def wanted(line: ArchivedLine) -> bool:
        if line.text in (REDACTED, FORGOTTEN):
            return False  # nothing left to say
        if line.conversation_id == conversation_id and (
            line.message_id in in_context or line.role == "summary"
        ):
            return False
        return not (summary and len(line.text) > 20 and _folded(line.text) in summary)

    chosen: list[tuple[ArchivedLine, ...]] = []
    seen: set[int] = set()
    used = 0
    said = [hit for hit in hits if hit.role == "user"]
    # what the context already holds answers the message as well as any line that does
    # not beat it: such a line would only compete with it (another project's budget)
    held = max((hit.score for hit in said if not wanted(hit)), default=0.0)
    eligible = [
        hit for hit in said if (held == 0.0 or hit.score > held) and clears_floor(hit, terms)
    ]
    held_terms = [_subject_terms(message.text) for message in state.messages]
    for hit in fuse(eligible):
        if hit.id in seen or not wanted(hit) or _repeats(hit, held_terms):
            continue
        group = [line for line in _with_neighbours(hit) if line.id not in seen and wanted(line)]
        cost = sum(line_tokens(line) for line in group)
        if used + cost > max_tokens:
            group, cost = [hit], line_tokens(hit)
            if used + cost > max_tokens:
                continue
        used += cost
        chosen.append(tuple(group))
        seen.update(line.id for line in group)
        held_terms.extend(_subject_terms(line.text) for line in group)
    return Recall(tuple(chosen))


def _subject_terms(text: str) -> frozenset[str]:
    # plain folded words, not the index's stemmed terms: this runs on every candidate of
    # every recall, and a near copy is as near in plain words
    return frozenset(_WORDS.findall(text.casefold()))


def _repeats(line: ArchivedLine, held: Sequence[frozenset[str]]) -> bool:
    """Whether `line` nearly repeats one of the `held` lines (see `NEAR_DUPLICATE`)."""
    terms = _subject_terms(line.text)
    return bool(terms) and any(len(terms & other) >= NEAR_DUPLICATE * len(terms) for other in held)
