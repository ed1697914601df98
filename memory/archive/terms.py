"""The archive's terms: what a line is indexed under and what a query looks for.

Both backends index the same terms, computed here, so a query finds the same lines on
SQLite and PostgreSQL: words folded (NFKC, case) and lightly stemmed, and CJK text as
overlapping character bigrams (Chinese has no spaces; a bigram index finds a two-
character word anywhere, which a trigram tokenizer cannot). Terms are letters and
digits only, so they can be quoted into an FTS5 or tsquery expression safely.
"""

from __future__ import annotations

import functools
import re
import unicodedata

MAX_TERMS = 2_000
"""Terms indexed per line (positions past it are not indexed)."""
MAX_QUERY_TERMS = 64
MAX_TERM_CHARS = 64
"""A longer run of letters (a pasted blob) is no word anyone searches for, and
PostgreSQL refuses lexemes past 2 KiB: it is not indexed."""
_CJK_CHARS = "\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_RUN = re.compile(rf"(?P<cjk>[{_CJK_CHARS}]+)|(?P<word>[^\W_{_CJK_CHARS}]+)")
"""A run of CJK characters, or a word of other letters and digits: "Python写一个" is the word
"python" and the run "写一个" (a word that ran on into CJK text would be one term nobody
searches for)."""


def _stem(word: str) -> str:
    """A light English stem: "decided", "decides" and "decide" all read "decid";
    "running" and "run" read "run"; "deployments" and "deploy" read "deploy"; "lived"
    and "live" read "liv" (but "note" stays itself: "not" is a stop word)."""
    for suffix in ("ments", "ment"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            doubled = len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "lsz"
            return stem[:-1] if doubled and suffix in ("ing", "ed") else stem
    stem = word[:-1] if word.endswith("e") and len(word) >= 4 else word
    return word if stem in STOP_WORDS else stem


_STOP_WORDS_TEXT = """
a an the and or but if then so to of in on at by for with from as is are was were be been
being am i me my mine myself you your yours we our us it its this that these those he she
they them his her their do does did done have has had having not no nor can could would
should will shall may might must just also very really too please what which who whom
whose when where why how all any each some such than there here about into over under
again further once only own same other more most both few up down out off don ll ve re
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
"""Words that carry no subject ("don't" reads "don" and "t", "you're" "you" and "re")."""
_CJK_STOP_TEXT = """
我们 你们 他们 她们 什么 怎么 为什 时候 当时 聊过 说过 记得 还记 一下 这个 那个 一个 没有
可以 就是 不是 我的 你的 他的 她的 是不 了吗 的吗 我说 你说 以前 之前 上次 有没 还是 或者
因为 所以 但是 如果 然后 现在 今天 知道 觉得 一些 这些 那些 关于 问题 我想 们聊 得我
"""
CJK_STOP_BIGRAMS = frozenset(_CJK_STOP_TEXT.split())
"""Bigrams that carry no subject (pronouns, "when", "we talked"): never a query term."""
_PAST_WORDS_TEXT = """
say says said tell told mention mentioned remember recall earlier before ago last time
again know think thing things something anything yes yeah ok okay
"""
QUERY_STOP_WORDS = STOP_WORDS | frozenset(_PAST_WORDS_TEXT.split())
"""Words that only say the user is asking about the past: never a query term."""


@functools.lru_cache(maxsize=16_384)
def _word_term(word: str) -> tuple[str, bool, bool]:
    """A word's entry in `_terms` (cached: every archived line is indexed, and the words
    of a conversation repeat)."""
    stop = word in QUERY_STOP_WORDS or (len(word) < 2 and not word.isdigit())
    return _stem(word), False, stop


def _terms(text: str) -> list[tuple[str, bool, bool]]:
    """(term, is CJK, is a stop word or a bigram with no subject) in text order (a word
    is a stop word as written, before stemming)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    found: list[tuple[str, bool, bool]] = []
    for run, word in _RUN.findall(folded):  # one of the two groups is empty
        if not run:
            if len(word) <= MAX_TERM_CHARS:
                found.append(_word_term(word))
        elif len(run) == 1:
            found.append((run, True, False))
        else:
            bigrams = (run[i : i + 2] for i in range(len(run) - 1))
            found.extend((bigram, True, bigram in CJK_STOP_BIGRAMS) for bigram in bigrams)
    return found


def index_terms(text: str) -> list[str]:
    """The terms a line is indexed under, in text order (stop words kept: a query drops
    its own, and positions stay true for proximity ranking)."""
    return [term for term, _, _ in _terms(text)[:MAX_TERMS]]


@functools.lru_cache(maxsize=4096)
def query_terms(text: str) -> tuple[str, ...]:
    """The distinct terms a query looks for, in text order: no stop words, no bigram
    that carries no subject, at most `MAX_QUERY_TERMS`."""
    kept = dict.fromkeys(term for term, _, stop in _terms(text) if not stop)
    return tuple(kept)[:MAX_QUERY_TERMS]


@functools.lru_cache(maxsize=8192)
def tokens(text: str) -> frozenset[str]:
    """The distinct terms of `text` that say something, however many (what long-term items
    are ranked, grounded and matched by). Cached: a session's items are read every turn."""
    return frozenset(term for term, _, stop in _terms(text) if not stop)


@functools.lru_cache(maxsize=8192)
def line_terms(text: str) -> frozenset[str]:
    """The distinct terms of a line (to see which query terms a hit shares)."""
    return frozenset(index_terms(text))


def term_weight(term: str) -> float:
    """How much one shared term says (stop words are gone already): a CJK bigram or a
    word of three letters or more ("run", "ten") is a subject; a number or a two-letter
    word or a lone character says less."""
    subject = not term.isdigit() and (len(term) >= 3 or (len(term) == 2 and not term.isascii()))
    return 1.0 if subject else 0.5
