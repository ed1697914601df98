"""What forgetting a profile item changes in the archive: which lines, and how much.

The item was learnt from a user line: that line (it holds most of the item's terms)
and the answer to it read `[forgotten]` as a whole. Elsewhere (an answer that listed
what the agent remembered, a later line that mentions it) only the sentences that
repeat the item go: those holding most of its terms, or a name it contains ("my
dog's name is Biscuit": any sentence with "Biscuit"). Forgetting errs on the side of
too much: the user asked for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memory.archive.lines import FORGOTTEN, ArchivedLine
from memory.archive.terms import line_terms, query_terms

FORGET_SHARE = 0.6
"""A sentence repeats an item when it holds this share of the item's terms (the share
the write gate asks of a model's proposal to the user's words)."""
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*[ \t]*\n?|\n")
_NAME = re.compile(r"(?<=[\s,;:(\"'“‘])[A-Z][\w'-]+")


@dataclass(frozen=True)
class Forgetting:
    """The archive's changes for one forgotten item: new texts by line id (`changes`),
    the message ids of the answers to the lines it was learnt from (`answers`: they go
    whole), new conversation titles by old title (`titles`: a title is a first message)."""

    changes: dict[int, str]
    answers: tuple[str, ...]
    titles: dict[str, str]

    def applied(self, lines: Sequence[ArchivedLine]) -> list[ArchivedLine]:
        return [
            replace(
                line,
                text=FORGOTTEN
                if line.message_id in self.answers
                else self.changes.get(line.id, line.text),
                title=self.titles.get(line.title, line.title),
            )
            for line in lines
        ]


def names_in(text: str) -> frozenset[str]:
    """The terms of the capitalised words inside `text` (not its first word, not "I")."""
    found = {match.group() for match in _NAME.finditer(text) if match.group() != "I"}
    return frozenset(term for word in found for term in query_terms(word))


def plan_forgetting(hits: Sequence[ArchivedLine], text: str) -> Forgetting:
    """The changes that forget `text` among `hits` (the lines sharing its terms)."""
    terms = frozenset(query_terms(text))
    if not terms:
        return Forgetting({}, (), {})
    names = names_in(text)
    changes: dict[int, str] = {}
    answers: list[str] = []
    titles: dict[str, str] = {}
    for hit in hits:
        if hit.title not in titles:
            titles[hit.title] = _forget_sentences(hit.title, terms, names)
        if hit.text == FORGOTTEN:
            continue
        if hit.role == "user" and len(line_terms(hit.text) & terms) >= FORGET_SHARE * len(terms):
            changes[hit.id] = FORGOTTEN
            if hit.message_id.endswith("-u"):
                answers.append(hit.message_id.removesuffix("-u") + "-a")
            continue
        kept = _forget_sentences(hit.text, terms, names)
        if kept != hit.text:
            changes[hit.id] = kept
    changed = {old: new for old, new in titles.items() if new != old}
    return Forgetting(changes, tuple(answers), changed)


def forget_sentences(text: str, forgotten: Sequence[str]) -> str:
    """`text` with each sentence that repeats one of the `forgotten` texts (most of its
    terms, or a name it contains) replaced by `[forgotten]`, as forgetting an item does
    to the archived lines that mention it."""
    for item in forgotten:
        terms = frozenset(query_terms(item))
        if terms:
            text = _forget_sentences(text, terms, names_in(item))
    return text


def _forget_sentences(text: str, terms: frozenset[str], names: frozenset[str]) -> str:
    def repeats(sentence: str) -> bool:
        own = line_terms(sentence)
        return bool(own & names) or len(own & terms) >= FORGET_SHARE * len(terms)

    return forget_sentences_where(text, repeats)


def forget_sentences_where(text: str, repeats: Callable[[str], bool]) -> str:
    """`text` with each sentence that `repeats` a forgotten text replaced by
    `[forgotten]` (the very same string when none does)."""
    sentences = _SENTENCE.findall(text)
    kept = [
        FORGOTTEN + (" " if s.endswith((" ", "\n")) else "") if repeats(s) else s for s in sentences
    ]
    return text if kept == sentences else "".join(kept).strip() or FORGOTTEN
