"""How both backends rank a search, so that a query finds the same lines on each: the
terms too common to matter are left out, and the lines holding the rest are ranked by
BM25 as SQLite's FTS5 computes it (`bm25()`: k1 1.2, b 0.75, an inverse document
frequency of `ln((N - n + 0.5) / (n + 0.5))` floored at 1e-6, a line's length in terms
against the average). SQLite ranks with `bm25()` itself; PostgreSQL computes the same
sum (`memory.archive.postgres`), over the session's lines (FTS5 counts every line of
the file in N and the average length: on a file of one session the two agree exactly).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
"""FTS5's `bm25()` constants, which PostgreSQL's ranking repeats."""
COMMON_SHARE = 0.02
COMMON_FLOOR = 200
"""A query term in more lines than max(2% of the session's lines, 200) is left out of
the query (its weight in BM25 is next to nothing, its posting list long); the rarest
`KEEP_RAREST` terms always stay."""
KEEP_RAREST = 2


def common_cap(total: int) -> int:
    """The most lines a term may be in and still be searched for (see `COMMON_SHARE`)."""
    return int(max(COMMON_SHARE * total, COMMON_FLOOR))


def distinctive(
    terms: Sequence[str],
    counted: Mapping[str, int],
    total: int,
    count_exactly: Callable[[list[str]], Mapping[str, int]],
) -> list[str]:
    """`terms` without those too common to matter (`counted`: how many lines hold each,
    counted up to just past the cap); when fewer than `KEEP_RAREST` are left, the common
    ones are counted exactly (`count_exactly`) and the rarest of them stay."""
    cap = common_cap(total)
    counts = {term: counted.get(term, 0) for term in terms}
    common = [term for term in terms if counts[term] > cap]
    if common and len(terms) - len(common) < KEEP_RAREST:
        counts.update(count_exactly(common))
    rarest = sorted(terms, key=lambda term: counts[term])
    return [t for i, t in enumerate(rarest) if i < KEEP_RAREST or counts[t] <= cap]
