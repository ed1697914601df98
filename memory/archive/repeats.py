"""Near copies: whether a text nearly repeats one a context already holds.

Recall leaves out a hit that nearly repeats a line the context holds (a recent message,
or a line recalled before it): a conversation that keeps saying much the same thing
would fill the block with copies of one line. And an answer is indexed without the
sentences that nearly repeat what it was given (the user's message, the lines its
context recalled, the summary): a real assistant repeats what it was told ("You said
your boat is in Vigo…"), and indexing that again would make recall feed on itself.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Iterable

from memory.archive.passages import SENTENCE
from memory.archive.terms import QUERY_STOP_WORDS

NEAR_DUPLICATE = 0.8
"""A text whose subject words are at least this share in one held line repeats it."""
FEWEST_WORDS = 4
"""A text of fewer subject words is no copy of anything: it is cheap."""
_WORDS = re.compile(r"\w+")


@functools.lru_cache(maxsize=8192)
def _subject_words(text: str) -> frozenset[str]:
    # plain folded words without stop words, not the index's stemmed terms: this runs on
    # every candidate of every recall, and a near copy is as near in plain words
    return frozenset(_WORDS.findall(text.casefold())) - QUERY_STOP_WORDS


class Held:
    """The lines a context holds, indexed by their words, so that a near copy of one of
    them (see `NEAR_DUPLICATE`) is found without comparing a hit with each line."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self.lines: list[frozenset[str]] = []
        self.lines_with: dict[str, int] = {}
        """A bit set of the lines (bit i: `lines[i]`) holding each word."""
        for text in texts:
            self.add(text)

    def add(self, text: str) -> None:
        words = _subject_words(text)
        bit = 1 << len(self.lines)
        lines_with = self.lines_with
        for word in words:
            lines_with[word] = lines_with.get(word, 0) | bit
        self.lines.append(words)

    def repeats(self, text: str) -> bool:
        words = _subject_words(text)
        if len(words) < FEWEST_WORDS:
            return False  # a line of a word or two is no copy of anything: it is cheap
        need = math.ceil(NEAR_DUPLICATE * len(words))
        # a line that holds `need` of the words holds one of any len - need + 1 of them:
        # only the lines holding one of those are compared (which ones does not matter:
        # sorting them by rarity cost more than the comparisons it saved)
        found = 0
        for word in itertools.islice(words, len(words) - need + 1):
            found |= self.lines_with.get(word, 0)
        while found:
            low = found & -found
            if len(words & self.lines[low.bit_length() - 1]) >= need:
                return True
            found ^= low
        return False


def unrepeated(answer: str, given: Iterable[str]) -> str | None:
    """`answer` without its sentences that nearly repeat one of the `given` texts; None
    when it repeats none of them (it is indexed whole)."""
    # sentence by sentence: a copy of one, not words strewn over many
    held = Held(sentence for text in given for sentence in SENTENCE.findall(text))
    sentences = SENTENCE.findall(answer)
    kept = [sentence for sentence in sentences if not held.repeats(sentence)]
    return None if len(kept) == len(sentences) else "".join(kept).strip()
