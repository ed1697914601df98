"""Recall from the archive: which earlier lines a turn's context gets, within its budget.

Whether a message recalls anything at all is decided first (`memory.archive.relevance`);
then these pure functions pick among the hits of one search (`recall_query`). Both sides
are searched: what the assistant said (a recipe, a plan, the numbers it worked out) is
what users most often come back for, and the index weighs each word by how rare it is in
the session, so the words every answer repeats weigh next to nothing. A hit must clear a
floor: it shares a subject term with the query (not a stop word, a number or a lone
letter: `memory.archive.terms.term_weight`). This conversation's own lines are recalled
once compaction folded them out of view, never while they are in it. With embeddings,
the lines nearest the message's embedding are hits too: one sharing no subject term must
be within a distance (`ArchiveEmbeddings.max_distance`). Hits are ranked by their units
(`by_units`), then fused with their embedding's and recency ranks (`fuse`); each comes
with the lines it needs to make sense (`_with_neighbours`), and what the hits leave of
the budget goes to the lines around them (`_widen`), in two rounds (`FIRST_ROUND`).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from memory.archive.lines import FORGOTTEN, REDACTED, ArchivedLine
from memory.archive.passages import passage
from memory.archive.repeats import Held
from memory.archive.terms import line_terms, query_terms, term_weight
from memory.limits import DEFAULT_RECALL_DISTANCE
from memory.prompts import RECALL_BLOCK, RECALL_HEADING, RECALL_LINE
from memory.schema import ThreadState
from memory.text import approximate_tokens, clamp, quoted

RRF_K = 60
RECENCY_WEIGHT = 0.25
"""Weight of the recency rank beside the lexical rank (1) in the fusion."""
STANDS_ALONE = 2
"""A message with fewer subject terms than this is read with the previous user message."""
SHORT_ANSWER_TERMS = 6
"""A user line with fewer terms than this is an answer that needs its question."""
CANDIDATES = 40
"""Hits read per recall (the best by lexical rank), before fusion and the floor."""
FIRST_ROUND = 20
"""Hits taken (and widened to the lines around them) before the rest: on the dev long
archive the lines around the best 20 hold more evidence than the hits ranked 21st to
30th (evidence in a new conversation's block: 64% with 20, 61% with 30, 63% with 15),
but RealMem's long lines leave budget that only later hits can fill."""
SHORT_LINE_TERMS = 40
"""A line with fewer terms than this is scored with its short neighbours (`by_units`): a
short line often says half of what a question asks ("We got a dog." / "A greyhound,
Pickle"), while a long one (RealMem's median line has ~77 words) says it alone, and is
nobody's context (a short line beside it would rise on its score). On the dev long
archive (lines of median 14 terms) 40 recalled more than 16, 24 or 30."""
MIN_LINE_TOKENS = 8
"""No recalled line costs less (its role, quotes and a word): below it the block is full."""
LINE_CHARS = 1_500
"""A recalled line shows at most this many characters: a longer one its passage for the
query (`memory.archive.passages`; either side's: an answer is as much what was found as
a question). RealMem's assistant lines run to hundreds of words, and what a question
needs of one is often said over several of its sentences: 600 characters lost it."""
_SPACES = re.compile(r"\s+")


def recall_query(text: str, state: ThreadState) -> tuple[tuple[str, ...], str]:
    """The terms a turn looks for and the text its embedding is computed from: its
    message's, after the previous user message's when the new one is too short to stand
    alone ("and what about that?", "the price?"; a longer one says what it is about, even
    when it says "it")."""
    terms = query_terms(text)
    if len(terms) >= STANDS_ALONE:
        return terms, text
    previous = next((m.text for m in reversed(state.messages) if m.role == "user"), None)
    if previous is None:
        return terms, text
    return tuple(dict.fromkeys((*terms, *query_terms(previous)))), f"{previous}\n{text}"


def clears_floor(line: ArchivedLine, terms: Sequence[str]) -> bool:
    """Whether `line` shares a subject term with the query (see the module docstring)."""
    return any(term_weight(term) >= 1.0 for term in line_terms(line.text).intersection(terms))


def by_units(hits: Sequence[ArchivedLine]) -> list[ArchivedLine]:
    """`hits` (best BM25 first) by the score of their units (`SHORT_LINE_TERMS`): a short
    line's own plus that of its short neighbours that are hits too (ties keep the order)."""
    scores = {hit.id: hit.score for hit in hits}

    def short(line: ArchivedLine | None) -> bool:
        return line is not None and len(line_terms(line.text)) < SHORT_LINE_TERMS

    def unit(hit: ArchivedLine) -> float:
        if not short(hit):
            return hit.score
        # (a neighbour's terms are counted only when it is a hit: a hit's are cached)
        around = [n for n in (hit.previous, hit.following) if n and n.id in scores and short(n)]
        return hit.score + sum(scores[n.id] for n in around)

    return sorted(hits, key=unit, reverse=True)


def _folded(text: str) -> str:
    return _SPACES.sub(" ", text).casefold().strip()


def fuse(hits: Sequence[ArchivedLine], nearest: Sequence[ArchivedLine] = ()) -> list[ArchivedLine]:
    """`hits` and `nearest` (best first) as one ranking: reciprocal-rank fusion of each
    line's ranks in them and its recency rank (ties keep the lexical order)."""
    lines = {line.id: line for line in hits}
    for line in nearest:
        lines.setdefault(line.id, line)
    by_recency = sorted(lines.values(), key=lambda line: (line.created_at, line.id), reverse=True)
    scores = {
        line.id: RECENCY_WEIGHT / (RRF_K + rank) for rank, line in enumerate(by_recency, start=1)
    }
    for ranking in (hits, nearest):
        for rank, line in enumerate(ranking, start=1):
            scores[line.id] += 1 / (RRF_K + rank)
    return sorted(lines.values(), key=lambda line: scores[line.id], reverse=True)


def _with_neighbours(line: ArchivedLine) -> list[ArchivedLine]:
    """`line` with what makes it make sense, read from its form alone: a short reply after
    the lines it replies to (the assistant's, and the user's before it); a question before
    its answer (the assistant's, and the user's next line)."""
    short = len(line_terms(line.text)) < SHORT_ANSWER_TERMS
    before = (line.said_before, line.previous) if short else ()
    after = (line.following, line.said_after) if line.text.rstrip().endswith(("?", "？")) else ()
    group = {n.id: n for n in (*before, line, *after) if n is not None}
    return list(group.values())


@dataclass(frozen=True)
class Recall:
    """The archived lines a turn's context gets: `groups`, best first, each a hit after
    the neighbour that explains it if any (the budget drops whole groups, lowest first)."""

    groups: tuple[tuple[ArchivedLine, ...], ...] = ()

    @property
    def lines(self) -> tuple[ArchivedLine, ...]:
        return tuple(line for group in self.groups for line in group)

    @property
    def ids(self) -> list[int]:
        """The archived lines' ids (the `memory` event reports them)."""
        return [line.id for line in self.lines]


@functools.lru_cache(maxsize=4096)
def shown(text: str) -> str:
    """A line's text as the block shows it (quoted, cut to `LINE_CHARS`); cached: a recall
    prices each of its candidates, and the next turn's mostly again."""
    return quoted(clamp(text, LINE_CHARS))


def _heading(line: ArchivedLine) -> tuple[str, str]:
    return line.day, line.conversation_id


@functools.lru_cache(maxsize=4096)
def line_tokens(role: str, text: str) -> int:
    """About how many tokens a line takes in the block, its heading not included."""
    return approximate_tokens(RECALL_LINE.format(role=role, text=shown(text))) + 1


@functools.lru_cache(maxsize=1024)
def heading_tokens(title: str) -> int:
    return approximate_tokens(RECALL_HEADING.format(date="2000-01-01", title=quoted(title))) + 1


FRAME_TOKENS = approximate_tokens(RECALL_BLOCK.format(lines="")) + 1
"""The block's own words, before any line."""


def render(lines: Sequence[ArchivedLine]) -> str:
    """The block's lines, oldest first, under one heading (date and conversation title)
    per conversation and day: a heading per line would spend the budget on titles."""
    ordered = sorted(
        {line.id: line for line in lines}.values(), key=lambda line: (line.created_at, line.id)
    )
    out: list[str] = []
    current: tuple[str, str] | None = None
    for line in ordered:
        if _heading(line) != current:
            current = _heading(line)
            out.append(RECALL_HEADING.format(date=current[0], title=quoted(line.title)))
        out.append(RECALL_LINE.format(role=line.role, text=shown(line.text)))
    return "\n".join(out)


class _Block:
    """The block being filled: which lines it holds, what they cost, what is left."""

    def __init__(
        self,
        conversation_id: str,
        state: ThreadState,
        max_tokens: int,
        excluded: Collection[str] = (),
        terms: Sequence[str] = (),
    ) -> None:
        self.conversation_id = conversation_id
        self.terms = tuple(terms)
        self.excluded = frozenset(excluded)
        self.in_context = {m.id for m in state.messages}
        self.summary = _folded(state.summary)
        self.max_tokens = max_tokens
        self.used = FRAME_TOKENS  # the whole block is within its budget
        self.seen: set[int] = set()
        self.headed: set[tuple[str, str]] = set()
        self.held = Held(message.text for message in state.messages)

    def new(self, line: ArchivedLine | None) -> bool:
        """Whether `line` is not in the block yet and says something the context does not
        hold already (a recent message of this conversation, this conversation's summary,
        or a line its summary quotes)."""
        if line is None or line.id in self.seen:
            return False
        if line.text in (REDACTED, FORGOTTEN) or line.message_id in self.excluded:
            return False  # nothing left to say, or no longer true
        if line.conversation_id == self.conversation_id and (
            line.message_id in self.in_context or line.role == "summary"
        ):
            return False
        folded = bool(self.summary) and len(line.text) > 20
        return not (folded and _folded(line.text) in self.summary)

    def fit(self, line: ArchivedLine) -> ArchivedLine:
        """`line` as the block shows it: a long one cut to its passage for the query."""
        if len(line.text) <= LINE_CHARS:
            return line
        return dataclasses.replace(line, text=passage(line.text, self.terms, LINE_CHARS))

    def cost(self, lines: Sequence[ArchivedLine]) -> int:
        """What adding `lines` costs: theirs, and the headings the block lacks."""
        headings = {_heading(line): line for line in lines if _heading(line) not in self.headed}
        lines_cost = sum(line_tokens(line.role, line.text) for line in lines)
        return lines_cost + sum(heading_tokens(line.title) for line in headings.values())

    def full(self) -> bool:
        return self.max_tokens - self.used < MIN_LINE_TOKENS

    def take(self, lines: Sequence[ArchivedLine], spent: int) -> None:
        self.used += spent
        self.headed.update(_heading(line) for line in lines)
        self.seen.update(line.id for line in lines)
        for line in lines:  # what the block shows of them (an answer is cut short)
            self.held.add(shown(line.text))


def choose(
    hits: Sequence[ArchivedLine],
    terms: Sequence[str],
    *,
    conversation_id: str,
    state: ThreadState,
    max_tokens: int,
    nearest: Sequence[ArchivedLine] = (),
    max_distance: float = DEFAULT_RECALL_DISTANCE,
    exclude_message_ids: Collection[str] = (),
) -> Recall:
    """The lines to recall among `hits` (best lexical rank first) and `nearest` (nearest
    embedding first), none of `exclude_message_ids` (see the module docstring)."""
    block = _Block(conversation_id, state, max_tokens, exclude_message_ids, terms)
    lexical = [hit for hit in hits if hit.role != "summary" and clears_floor(hit, terms)]
    # the context sets no bar (RealMem dev: a new turn recalled nothing a fifth of the times a
    # new conversation recalled), but this conversation's lines out of view holding every
    # subject term do: another's look-alike (the other project's budget) would pass for its own
    wanted = {term for term in terms if term_weight(term) >= 1.0}
    own = [hit for hit in lexical if hit.conversation_id == conversation_id and block.new(hit)]
    if wanted and wanted <= {term for hit in own for term in line_terms(hit.text)}:
        lexical = own
    # a line sharing no subject term with the message is related by its embedding alone
    close = [
        hit
        for hit in nearest
        if hit.role != "summary"
        and hit.distance is not None
        and (hit.distance <= max_distance or clears_floor(hit, terms))
    ]
    taken: list[tuple[ArchivedLine, list[ArchivedLine]]] = []
    ranked = fuse(by_units(lexical), close)
    for hits_of_round in (ranked[:FIRST_ROUND], ranked[FIRST_ROUND:]):
        start = len(taken)
        _take(block, hits_of_round, taken)
        _widen(block, taken[start:])
    return Recall(tuple(tuple(group) for _, group in taken))


def _take(
    block: _Block,
    hits: Sequence[ArchivedLine],
    taken: list[tuple[ArchivedLine, list[ArchivedLine]]],
) -> None:
    """Add `hits` to the block, best first, each with the neighbours that explain it
    (alone when the group does not fit), onto `taken`."""
    for hit in hits:
        if block.full():
            return
        if not block.new(hit):
            continue
        shown_hit = block.fit(hit)
        alone = block.cost([shown_hit])
        if block.used + alone > block.max_tokens or block.held.repeats(shown_hit.text):
            continue  # (the price first: once the block is nearly full, most hits fail it)
        group = [
            shown_hit if line.id == hit.id else block.fit(line)
            for line in _with_neighbours(hit)
            if block.new(line)
        ]
        group = [line for line in group if line.id == hit.id or not block.held.repeats(line.text)]
        spent = block.cost(group)
        if block.used + spent > block.max_tokens:
            group, spent = [shown_hit], alone
        block.take(group, spent)
        taken.append((hit, group))


def _widen(block: _Block, taken: Sequence[tuple[ArchivedLine, list[ArchivedLine]]]) -> None:
    """Spend what the hits left of the budget on the lines around them, best hit first
    (the line after a hit and the user's next, then the line before it and the user's
    further on): an answer follows its question, a fact is often said a line or two
    after the one that names what the question asks about ("We have a dog." → "Tell me
    everything." → "A rescue greyhound called Pickle"), and an unspent budget recalls
    nothing. Only what the hits left: a hit is worth more than a hit's surroundings."""
    for hit, group in taken:
        for line in (hit.following, hit.said_after, hit.previous, hit.said_later, hit.said_before):
            if block.full():
                return
            if line is None or not block.new(line):
                continue
            line = block.fit(line)
            spent = block.cost([line])
            if block.used + spent <= block.max_tokens and not block.held.repeats(line.text):
                block.take([line], spent)
                group.append(line)
