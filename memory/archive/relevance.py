"""Recall's relevance decision: whether a message is about the user's past at all, and
whether the archive holds what it is about. Most messages to an assistant are requests
about the world ("reverse a linked list in Python", "how does a heat pump work?",
"写一首关于春天的诗"): the user's earlier conversations hold nothing they need, even
when they share words with them (a list, a pump, spring). Sharing words is no evidence:
the archive of a few months shares words with almost anything. So two frozen scores
decide, and no list of words:
- the judge (`Judge`): a logistic probe over the packaged local model's embedding of the
  message, fitted on dev data by `evals.relevance_fit` and frozen in
  `relevance_judge.json`: does it ask for the user's own world or for what the two sides
  said ("what did the vet say about Milo's paw?", "你上次推荐的那本书叫什么？"), or is it
  a request about the world? A message it passes recalls what matches it, when the
  archive holds one of its subject terms rarely enough to single a line out (`distinct`;
  with dense ranking, a line near it may stand in);
- the score (`by_score`): a message whose best hit shares enough that is rare with one
  line recalls, whatever the judge says.
Without the local model (`AGENT_EMBEDDINGS_MODEL=none`, or it failed to load) only the
score decides. A message neither passes is still found by the `search_conversations`
tool, which the model calls when asked.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory.archive.lines import ArchivedLine, Frequencies
from memory.archive.ranking import IDF_FLOOR, common_cap
from memory.archive.terms import term_weight

JUDGE_PATH = Path(__file__).with_name("relevance_judge.json")


@dataclass(frozen=True)
class Judge:
    """The frozen relevance probe (see the module docstring): `weights`, one a dimension
    of `model`'s (unit) query embedding (`LOCAL_MODEL`), `bias` and the `threshold` from
    which a message asks for the user's past."""

    model: str
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def asks(self, vector: Sequence[float]) -> bool:
        if len(vector) != len(self.weights):
            raise ValueError(f"the judge reads {len(self.weights)} dimensions, not {len(vector)}")
        score = self.bias + math.fsum(w * v for w, v in zip(self.weights, vector, strict=True))
        return score >= self.threshold


@functools.cache
def judge() -> Judge:
    fitted = json.loads(JUDGE_PATH.read_text(encoding="utf-8"))
    weights = tuple(map(float, fitted["weights"]))
    return Judge(fitted["model"], weights, float(fitted["bias"]), float(fitted["threshold"]))


BACKGROUND_SHARE = 0.1
BACKGROUND_FLOOR = 5
"""A word in more than a tenth of the session's lines (and in more than five) is part of
the archive's background: it singles no line out."""


def distinct(terms: Sequence[str], frequencies: Frequencies) -> bool:
    """Whether any subject term of `terms` (not a number, not a word of a letter or two)
    is one the archive holds and rare enough in it to single a line out."""
    total = frequencies.total
    bound = min(common_cap(total), max(int(BACKGROUND_SHARE * total), BACKGROUND_FLOOR))
    return any(
        0 < frequencies.lines_with.get(term, 0) <= bound
        for term in terms
        if term_weight(term) >= 1.0
    )


SCORE_FLOOR = 2.7


def by_score(hits: Sequence[ArchivedLine], total: int) -> bool:
    """Whether the best of `hits` (scored by BM25) scores at least `SCORE_FLOOR` rare
    words' worth in an archive of `total` lines (see the module docstring).

    The floor's form is frozen; only N is the archive's. Fitted once, model-free, on
    RealMem's five dev personas (772 queries that need memory, each against the lines
    said before it; the 156 off-topic dev probes against each persona's whole archive,
    780 probes): on its own, 2.7 lets 1.7% of the off-topic probes recall and 80% of the
    queries that need memory (2.5: 2.3% and 85%; 3.0: 1.2% and 75%), too few to decide
    alone (and on the dev long archive, whose questions are short, it alone kept 17% of
    the evidence against 65%). wordllama's best similarity did worse on the same probes
    (at a 2% off-topic share, 10% of the queries that need memory).
    """
    best = max((hit.score for hit in hits), default=0.0)
    # one word said once, at tf 1 and an average length: ln((N - 0.5) / 1.5)
    rare_word = max(math.log((total - 0.5) / 1.5), IDF_FLOOR) if total > 2 else IDF_FLOOR
    return best > 0.0 and best >= SCORE_FLOOR * rare_word
