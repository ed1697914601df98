"""Recall's relevance decision: whether a message is about the user's past at all, and
whether the archive holds what it is about.

Most messages to an assistant are requests about the world ("reverse a linked list in
Python", "how does a heat pump work?", "写一首关于春天的诗"): the user's earlier
conversations hold nothing they need, even when they share words with them (a list, a
pump, spring). Sharing words is no evidence: the archive of a few months shares words
with almost anything. Whether a message asks for its past is read first from its
language (`Reference`), before the archive is touched:
- personal: it speaks of the user's own world or of what the two sides said or did: a
  first-person possessive ("my", "our", "我家", "我爸"), "we", a first or second person
  with a verb in the past ("did you…", "you suggested", "I swapped", "你说过",
  "你建议"), a pointer back in time or to something known ("remind me", "last time", "in
  the end", "上次", "当时", "后来", "那个…");
- an event: a question in the past tense ("what did the vet give…", "when was the
  launch", "…了吗", "是什么时候…的"), or one that names someone or something (a
  capitalised word inside the sentence, "小邓", "阿峰");
- general: a request in one of the usual shapes of a request about the world ("how do
  I…", "what is…", "explain…", "write…", "convert…", "怎么…", "什么是…", "帮我写…").
A personal message recalls what matches it. A message that is neither personal, about
the past, nor naming anything recalls nothing (unless its score says so, below). A general request
recalls only when it asks about the past of, or the possessions of, names the archive
all holds ("Who is Hattie's teacher?", "Who is Freya, and how did Rafael meet her?"), never
otherwise ("reverse a linked list in Python", though the archive may say "Python").
Any other message is about an event: it recalls when it is in the past tense or names
something, and most of the names it gives are ones the archive holds (one name for a
run of capitalised words: "When did the Berlin Wall fall?" names one thing the archive
never heard of). And a message whose every subject word is one the archive never says, or
says all the time (in more than a tenth of its lines, or past the commonness cut of
`memory.archive.ranking`), has nothing in it that could single a line out: it recalls
nothing either ("Turn 42: please refine section 3 of the plan we agreed", the hundredth
time).

What the words miss, the score can still find: a message whose best hit shares enough
that is rare with one line recalls whatever the cues read (`by_score`, a floor fitted on
dev data and frozen).

Only what the message says is read: what the archive holds decides only which names it
knows. The cues are the language's, kept short on purpose; a message they miss is still
found by the `search_conversations` tool, which the model calls when asked.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory.archive.lines import ArchivedLine, Frequencies
from memory.archive.ranking import IDF_FLOOR, common_cap
from memory.archive.terms import query_terms, term_weight

_PAST_VERBS = (
    r"\w+[^e\W]ed|said|told|gave|made|wrote|sent|thought|taught|got|went|came|bought|took|"
    r"put|found|left|ran|brought|chose|kept|paid|built|sold|spent|won|lost|met|saw|ate|had|"
    r"was|were|did|drew|drove|flew|forgot|grew|heard|knew|meant|rode|sang|sat|slept|spoke|"
    r"stood|swam|threw|understood|wore"
)
_PERSONAL_EN = re.compile(
    r"\b(?:my|our|ours|mine|we|we'?re|we'?ve|we'?d)\b|\b(?-i:us)\b"
    r"|\b(?:did|didn'?t|have|haven'?t|had|was|were)\s+(?:i|you|we)\b"
    rf"|\b(?:i|you|we)\s+(?:\w+ly\s+)?(?:{_PAST_VERBS})\b"
    r"|\b(?:remind\s+me|remember|recall|last\s+time|you\s+mentioned|the\s+other\s+day"
    r"|in\s+the\s+end|end(?:ed)?\s+up|turn(?:ed)?\s+out|finally|so\s+far|by\s+then"
    r"|back\s+then|at\s+the\s+time)\b",
    re.IGNORECASE,
)
_PERSONAL_ZH = re.compile(
    r"我们|咱们|咱家|我(?:家|爸|妈|的|哥|姐|弟|妹|老公|老婆|对象|儿子|女儿|孩子|奶奶|爷爷|外婆|外公"
    r"|同事|朋友|领导|老板|上次|之前|当时|那)"
    r"|你(?:说|给|建议|推荐|提|教|讲|帮我|列|当时|之前|上次|怎么|是怎么|那)"
    r"|上次|之前|以前|当时|后来|最后|还记得|记得|说过|聊过|提过|讲过|来着"
    r"|那(?:个|份|道|笔|段|只|家|张|块|台|封|次|篇|位|本|款|条|件|回)"
)
_PAST_EN = re.compile(
    r"\b(?:did|didn'?t|was|wasn'?t|were|weren'?t|had|hadn'?t)\b"
    rf"|^\W*(?:who|what|which)(?:\s+\w+)?\s+(?:{_PAST_VERBS})\b",
    re.IGNORECASE,
)
_PAST_ZH = re.compile(r"了|(?<!过)过(?![年去来日])|什么时候|哪天|哪几天|几号")
_GENERAL_EN = re.compile(
    r"^\W*(?:please\s+|can\s+you\s+|could\s+you\s+)?"
    r"(?:how\s+(?:(?:many|much|long|far|often)\s+)?(?:do|does|can|could|should|would|to|is|are)"
    r"|what(?:'s|\s+is|\s+are|\s+does|\s+do|\s+should|\s+would|\s+causes)"
    r"|why\s+(?:is|are|do|does|would|should)|who\s+(?:is|are)|where\s+(?:is|are)|which\s+is"
    r"|is\s+(?:it|there|a|an|the)|are\s+there|can\s+(?:i|a|an|the|you)|should\s+i"
    r"|explain|describe|define|write|draft|rewrite|summari[sz]e|translate|convert"
    r"|tell\s+me|give\s+me|suggest|recommend|list|name|show\s+me|help\s+me|teach\s+me"
    r"|compare|calculate|regex|generate|create|make|reverse|sort|implement|fix)\b",
    re.IGNORECASE,
)
_GENERAL_ZH = re.compile(
    r"^\W*(?:请|麻烦你?)?(?:什么是|帮我|给我|写|推荐|翻译|把|用|解释|讲|介绍|告诉我|教我)"
    r"|(?<!是)(?:怎么|如何|怎样)(?!样)|有什么区别|是什么意思|等于多少|换算"
)
_NAME_EN = re.compile(r"(?<=[\w,;:'\"] )(?!I\b|I')[A-Z][a-z][\w'’-]*(?:\s+[A-Z][a-z][\w'’-]*)*")
"""Capitalised words inside a sentence: a name (not "I", not an acronym in capitals); a
run of them is one name ("Berlin Wall")."""
_NAME_ZH = re.compile(r"(?:小|老|阿)[\u4e00-\u9fff]")
"""How Chinese names a person familiarly: 小邓, 老陈, 阿峰."""


@dataclass(frozen=True)
class Reference:
    """What a message's words say about whether it is about the user's past.

    Attributes:
        personal: it speaks of the user's world or of what the two sides said or did.
        past: it asks about an event in the past.
        general: it has the shape of a request about the world.
        names: the terms of each name it gives.
        owner: it gives a name in the possessive ("Hattie's teacher").
    """

    personal: bool
    past: bool
    general: bool
    names: tuple[tuple[str, ...], ...]
    owner: bool = False

    @property
    def searches(self) -> bool:
        """Whether the archive is searched at all for it: it is personal, about the
        past, or names something."""
        return self.personal or self.past or bool(self.names)

    @property
    def name_terms(self) -> tuple[str, ...]:
        """The terms of all its names."""
        return tuple(dict.fromkeys(term for name in self.names for term in name))

    def recalls(self, frequencies: Frequencies) -> bool:
        """Whether it recalls, given how often the archive holds its terms (see the
        module docstring)."""
        if self.personal:
            return True
        held = sum(all(frequencies.lines_with.get(t, 0) for t in name) for name in self.names)
        if self.general:  # a request about the world, unless about the past of what it names
            return bool(self.names) and held == len(self.names) and (self.past or self.owner)
        return (self.past or bool(self.names)) and (not self.names or 2 * held > len(self.names))


@functools.lru_cache(maxsize=1024)
def reference(text: str) -> Reference:
    """What `text`'s words say about whether it asks for the user's past (see the module
    docstring)."""
    names = [match.group() for match in _NAME_EN.finditer(text)]
    names += [match.group() for match in _NAME_ZH.finditer(text)]
    return Reference(
        personal=bool(_PERSONAL_EN.search(text) or _PERSONAL_ZH.search(text)),
        past=bool(_PAST_EN.search(text) or _PAST_ZH.search(text)),
        general=bool(_GENERAL_EN.search(text) or _GENERAL_ZH.search(text)),
        names=tuple(dict.fromkeys(terms for name in names if (terms := query_terms(name)))),
        owner=any(name.endswith(("'s", "’s")) for name in names),
    )


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
"""A message its words do not mark as about the past still recalls when its best hit
scores at least this many rare words' worth (`by_score`)."""


def rare_word(total: int) -> float:
    """The BM25 score of one word said once in an archive of `total` lines (at tf 1 and
    an average length): ln((N - 0.5) / 1.5)."""
    return max(math.log((total - 0.5) / 1.5), IDF_FLOOR) if total > 2 else IDF_FLOOR


def by_score(hits: Sequence[ArchivedLine], total: int) -> bool:
    """Whether the best of `hits` (scored by BM25) scores at least `SCORE_FLOOR` rare
    words' worth in an archive of `total` lines: it shares that much that is rare with
    one line, whatever the cues read.

    The floor's form is frozen; only N is the archive's. Fitted once, model-free, on
    RealMem's five dev personas (772 queries that need memory, each against the lines
    said before it; the 156 off-topic dev probes against each persona's whole archive,
    780 probes): on its own, 2.7 lets 1.7% of the off-topic probes recall and 80% of the
    queries that need memory (2.5: 2.3% and 85%; 3.0: 1.2% and 75%), too few to replace
    the cues (and on the dev long archive, whose questions are short, it alone kept 17%
    of the evidence against 65%); beside them it adds 6% of the queries that need memory
    (89% to 95%) and 0.6% of the off-topic probes. wordllama's best similarity did worse
    on the same probes (at a 2% off-topic share, 10% of the queries that need memory).
    """
    best = max((hit.score for hit in hits), default=0.0)
    return best > 0.0 and best >= SCORE_FLOOR * rare_word(total)
