"""The offline compactor's summary: the facts of the conversation, merged and ranked.

The summary is one line per fact, in the order they were said, each the speaker's own
sentence quoted (`memory.compaction.quoted`), so no text can pass for another
speaker's line. Each compaction reads the old summary's lines back and folds the new
sentences into them: content-free sentences, questions (their answers are the facts;
unanswered ones are open questions), restatements of what is already kept, sentences
with nothing salient that mention nothing new, and the offline model's own echoing
answers add nothing (a turn that adds nothing is only counted); a sentence that says
more than an older one of the same speaker replaces it; and when the lines outgrow
the limit the least salient go first (the newer of two equally salient). A fact said
once therefore survives any number of turns that carry nothing new.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agent.offline.salience import (
    clipped_line,
    features,
    is_content_free,
    is_offline_boilerplate,
    is_question,
    salience,
    sentences,
    terms,
    without_offline_prefix,
)
from memory.limits import MAX_SUMMARY_CHARS
from memory.text import clamp, quoted

FACT_LINE = "{speaker}: {text}"
"""One summary line per fact; `text` is quoted, so a message can never pass for
another speaker's words."""
SPEAKERS = {"user": "User", "assistant": "Assistant"}
QUIET_LINE = "Earlier turns with nothing new to remember were folded."
DROPPED_LINE = "Less salient points were dropped for space."
# The counting lines hold no number: a count that changes at every compaction would read
# as a value the new summary lost. An earlier release's counted line is kept as a note.
EMPTY_SUMMARY = "Nothing from the earlier conversation needs to be remembered."
LEGACY_DROPPED_MARKER = "…"
"""What the rolling summary of earlier versions put first when it had cut lines."""
FACT_CHARS = 280
"""A fact longer than this is cut (quoting adds a few characters to the line)."""
META_RESERVE = 120
"""Characters kept free for the two counting lines, so the summary never passes its limit."""
NOTE_CHARS = MAX_SUMMARY_CHARS - META_RESERVE - 1
"""An old summary line this module did not write is kept whole, cut only to fit alone."""

_DECODER = json.JSONDecoder()
_TURN_SEPARATOR = " / "
"""Between the two quoted sides of an old rolling-summary line ("User: … / Assistant: …")."""


@dataclass(frozen=True)
class Fact:
    """One summary line.

    Attributes:
        role: who said it; None for a line of an old summary this module did not write
            (a model's summary from before the offline model took over), kept verbatim.
        text: the sentence, on one line.
        terms: what it is about (`salience.terms`).
        score: its salience.
    """

    role: str | None
    text: str
    terms: frozenset[str]
    score: int

    def line(self) -> str:
        if self.role is None:
            return self.text
        return FACT_LINE.format(speaker=SPEAKERS[self.role], text=quoted(self.text))


def quoted_sides(line: str) -> list[tuple[str, str]] | None:
    """The (role, text) pairs of a quoted summary line, or None if it is not one.

    Reads this module's lines, the local fallback's (`User: "…"`) and the old rolling
    summary's (`User: "…" / Assistant: "…"`).
    """
    sides: list[tuple[str, str]] = []
    rest = line
    while rest:
        role = next((r for r, s in SPEAKERS.items() if rest.startswith(s + ": ")), None)
        if role is None:
            return None
        try:
            text, end = _DECODER.raw_decode(rest, len(SPEAKERS[role]) + 2)
        except json.JSONDecodeError:
            return None
        if not isinstance(text, str):
            return None
        sides.append((role, text))
        rest = rest[end:]
        if rest.startswith(_TURN_SEPARATOR):
            rest = rest[len(_TURN_SEPARATOR) :]
        elif rest:
            return None
    return sides


_REVOCATION = re.compile(
    r"\bno\s+longer\b|\bnot\s+any\s?more\b|\bforget\s+(?:that|about|what|my)\b|"
    r"\bdisregard\b|不再|别再|取消|忘掉|忘记",
    re.IGNORECASE,
)
_REVOCATION_TERMS = terms("no longer want anymore forget disregard answers answer please 不再 别再")


@dataclass
class Digest:
    """The summary being built: facts in the order said, and two counters.

    Attributes:
        facts: the kept facts, oldest first.
        seen: every term met so far, to tell a first mention from a restatement.
        quiet_turns: folded turns that added nothing.
        dropped: facts dropped for space, over the conversation.
    """

    facts: list[Fact] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    quiet_turns: int = 0
    dropped: int = 0

    def admit(self, role: str | None, sentence: str, limit: int = FACT_CHARS) -> bool:
        """Add one sentence (or an old line) if it carries something new; whether it was
        added."""
        text = clipped_line(sentence, limit)
        if not text or is_question(text) or is_content_free(text):
            # A question asks rather than tells: its answer is the fact, and an
            # unanswered one is kept as an open question.
            return False
        about = terms(text)
        first_mention = bool(about - self.seen)
        self.seen |= about
        if not features(text) and not first_mention:
            return False  # nothing salient, and about nothing that was not said before
        if role == "user" and _REVOCATION.search(text):
            # "I no longer want answers in Chinese": what it revokes is not in force any
            # more, so the statement it revokes leaves the summary (the revocation stays)
            revoked = about - _REVOCATION_TERMS
            self.facts = [f for f in self.facts if not (revoked & f.terms)]
        elif any(about <= fact.terms for fact in self.facts):
            return False  # a restatement of a kept fact
        # A fuller statement of the same speaker replaces the one it contains.
        self.facts = [f for f in self.facts if not (f.role == role and f.terms < about)]
        self.facts.append(Fact(role, text, about, salience(text, by_user=role == "user")))
        return True

    def read(self, summary: str) -> None:
        """Take the facts and counters of an old summary back, through the same rules."""
        for line in summary.splitlines():
            line = line.strip()
            if not line or line in (LEGACY_DROPPED_MARKER, EMPTY_SUMMARY):
                continue
            if line == QUIET_LINE:
                self.quiet_turns += 1
                continue
            if line == DROPPED_LINE:
                self.dropped += 1
                continue
            sides = quoted_sides(line)
            if sides is None:
                # Kept whole: split, a sentence inside it could start a line that reads
                # like a speaker's ("Assistant: …").
                self.admit(None, line, NOTE_CHARS)
                continue
            for role, text in sides:
                self.add_message(role, text)

    def add_message(self, role: str, text: str) -> bool:
        """Add the sentences of one message; whether any was new."""
        if role == "assistant":
            if is_offline_boilerplate(text):
                return False
            text = without_offline_prefix(text)
        added = [self.admit(role, sentence) for sentence in sentences(text)]
        return any(added)

    def fold(self, messages: Sequence[tuple[str, str]]) -> None:
        """Add folded messages turn by turn, counting the turns that add nothing."""
        for turn in turns(messages):
            added = [self.add_message(role, text) for role, text in turn]
            if not any(added):
                self.quiet_turns += 1

    def render(self, limit: int = MAX_SUMMARY_CHARS) -> str:
        """The summary: the most salient facts that fit, in the order said, then the
        counters."""
        lines = [fact.line() for fact in self.facts]
        kept = _most_salient(self.facts, lines, limit - META_RESERVE)
        dropped = self.dropped + len(lines) - len(kept)
        body = [lines[i] for i in kept]
        if self.quiet_turns:
            body.append(QUIET_LINE)
        if dropped:
            body.append(DROPPED_LINE)
        return clamp("\n".join(body), limit) or EMPTY_SUMMARY


def _most_salient(facts: Sequence[Fact], lines: Sequence[str], budget: int) -> list[int]:
    """Indexes of the facts kept, in order: all when they fit, else the best ranked
    (salience, then the newer) until the first that does not fit."""
    if sum(len(line) + 1 for line in lines) <= budget:
        return list(range(len(lines)))
    # Stopping at the first misfit keeps the rule simple to state: every kept fact
    # ranks above every dropped one.
    kept: list[int] = []
    used = 0
    for i in sorted(range(len(lines)), key=lambda i: (facts[i].score, i), reverse=True):
        used += len(lines[i]) + 1
        if used > budget:
            break
        kept.append(i)
    return sorted(kept)


def turns(messages: Iterable[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Messages grouped into turns: a user message and the replies after it (a leading
    reply is a turn of its own)."""
    grouped: list[list[tuple[str, str]]] = []
    for role, text in messages:
        if role == "user" or not grouped:
            grouped.append([])
        grouped[-1].append((role, text))
    return grouped


def merged_summary(old_summary: str, fold: Sequence[tuple[str, str]]) -> str:
    """The old summary with the folded messages merged in, at most `MAX_SUMMARY_CHARS`."""
    digest = Digest()
    digest.read(old_summary)
    digest.fold(fold)
    return digest.render()
