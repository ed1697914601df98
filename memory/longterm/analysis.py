"""What a sentence is: the analysis the long-term gate decides by (English and Chinese).

A profile item is an explicit, durable first-person statement about the user, or a
standing instruction to the assistant. Rather than look for listed cue words, each
clause of the user's own words is described by:
- its type: a statement, a question, a request for a task, an instruction, or a
  social move (greeting, thanks, praise, acknowledgement, exclamation);
- its subject: the user ("I …", "my manager is …", "我…"), someone else ("my wife
  hates …", "he …", "你辛苦了"), or nobody in particular ("Python is better …");
- its durability: a standing preference, fact, goal or boundary, against a passing
  state ("I'm tired today"), a past event ("yesterday I went …"), a hypothetical
  ("if I were …"), a one-off request ("make it shorter", "I need a summary of this").
Text the user did not state themselves (quoted with `>` or quote marks, in a code
block, after "X wrote:", an e-mail header or a "here is the email:" line, forwarded)
and slash commands are removed before the analysis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

import memory.longterm.clause_patterns as patterns


class ClauseType(StrEnum):
    STATEMENT = "statement"
    INSTRUCTION = "instruction"
    """A standing instruction to the assistant ("always answer in English")."""
    REQUEST = "request"
    """A task for now ("translate this", "please keep going")."""
    QUESTION = "question"
    SOCIAL = "social"
    REVOCATION = "revocation"


class Subject(StrEnum):
    USER = "user"
    OTHER = "other"
    NONE = "none"


@dataclass(frozen=True)
class Clause:
    """One clause of the user's own words, as analysed."""

    text: str
    type: ClauseType
    subject: Subject
    durable: bool

    @property
    def keepable(self) -> bool:
        """A durable statement about the user, or a standing instruction."""
        if self.type is ClauseType.INSTRUCTION:
            return True
        return self.type is ClauseType.STATEMENT and self.subject is Subject.USER and self.durable


# -- what the user did not state themselves -----------------------------------------


def own_words(text: str) -> str:
    """`text` without what the user did not state themselves: quoted lines, code
    blocks, quoted strings, everything after a hand-off ("X wrote:", "From: …", "Here
    is the email:", "下面是…发来的："). A slash command states nothing."""
    text = text.replace("\r", "")
    if patterns.SLASH_COMMAND.match(text):
        return ""
    text = patterns.CODE_BLOCK.sub(" ", text)
    handoff = patterns.HANDOFF.search(text)
    if handoff is not None:
        text = text[: handoff.start()]
    text = patterns.QUOTED_LINE.sub(" ", text)
    return patterns.QUOTE_MARKS.sub(" … ", text)


# -- clause split ------------------------------------------------------------------


def sentences(text: str) -> list[str]:
    return [s.strip() for s in patterns.SENTENCES.split(text) if s and s.strip(" ,.;")]


def split_clauses(sentence: str) -> list[str]:
    """A sentence's clauses: a comma starts a new clause only where a new subject or
    instruction starts after it ("I love Paris, but I live in Berlin")."""
    splitter = (
        patterns.ZH_SPLIT
        if patterns.CJK.search(sentence) and not patterns.LATIN_START.match(sentence)
        else None
    )
    split = (splitter or patterns.EN_SPLIT).split(sentence)
    parts: list[str] = []
    for separator, piece in zip(["", *split[1::2]], split[0::2], strict=True):
        piece = piece.strip(" ,;")
        if not piece:
            continue
        bare = patterns.LEAD.sub("", piece)
        appositive = re.match(r"(?:my|our)\b", bare, re.I) and not patterns.HAS_VERB.search(bare)
        if parts and (appositive or not _starts_clause(bare)):
            parts[-1] = f"{parts[-1]}{separator}{piece}"
        else:
            parts.append(bare if parts else piece)
    return [clause for part in parts for clause in _split_and(part)]


_I_DO = re.compile(r"^\W*(?:i|i'm|i've|i'd)\s+\w+", re.IGNORECASE)


def _split_and(clause: str) -> list[str]:
    """`clause` split where "and I …" starts a statement of its own, after a verb."""
    found = patterns.AND_SPLIT.search(clause)
    left = clause[: found.start()] if found is not None else ""
    if found is None or not (_I_DO.match(left) or patterns.HAS_VERB.search(left)):
        return [clause]
    return [clause[: found.start()], *_split_and(clause[found.end() :])]


# -- the parts of a clause ---------------------------------------------------------


def _starts_clause(bare: str) -> bool:
    return bool(
        patterns.EN_FIRST.match(bare)
        or patterns.EN_IMPERATIVE.match(bare)
        or patterns.ZH_FIRST.match(bare)
        or patterns.ZH_IMPERATIVE.match(bare)
        or patterns.REVOCATION.match(bare)
        or patterns.EN_OTHER.match(bare)
        or patterns.ZH_OTHER.match(bare)
        or patterns.ZH_STANDING.match(bare)
    )


def strip_lead(text: str) -> str:
    """`text` without discourse words around it ("oh and fyi …", "…, just so you know")."""
    return patterns.TAIL.sub("", patterns.LEAD.sub("", text.strip())).strip()


def strip_remember(text: str) -> tuple[str, bool]:
    """`text` without a leading "please remember that" / "记住", and whether it had one."""
    stripped = patterns.REMEMBER.sub("", text.strip(), count=1).strip()
    return stripped, stripped != text.strip()


def is_filler(text: str) -> bool:
    """Nothing left to remember: "that", "this", "一下"."""
    return bool(patterns.FILLER_ONLY.match(text))


def is_question(text: str) -> bool:
    if patterns.POLITE_STANDING.match(text):
        return False  # "Could you always reply in Spanish?": a standing instruction
    stripped = text.rstrip()
    if stripped.endswith(("?", "？")):
        return True
    if patterns.CJK.search(text) and patterns.ZH_QUESTION.search(text):
        return True
    # "When I travel I prefer trains", "What I like is tea": a clause, not a question
    return bool(patterns.EN_QUESTION_START.match(text)) and not re.match(
        r"^(?:when|whenever|where|what|how|while)\s+(?:i|i'm|we|my)\b", text, re.I
    )


def _subject(text: str) -> Subject:
    if re.match(r"^(?:my|our)\s+(?:\w+\s+)?\w+\s+and\s+i\b|^我和我", text, re.I):
        return Subject.USER  # "my partner and I live in Leeds"
    if patterns.EN_RELATION_IS.match(text) or patterns.ZH_RELATION_IS.match(text):
        return Subject.USER  # "my manager is Priya", "我的导师是李华": the user's own world
    if patterns.EN_RELATION_DOES.match(text) or patterns.ZH_RELATION_DOES.match(text):
        return Subject.OTHER  # "my wife hates mushrooms", "我妈妈喜欢跳舞"
    if patterns.EN_FIRST.match(text) or patterns.ZH_FIRST.match(text):
        return Subject.USER
    if patterns.EN_OTHER.match(text) or patterns.ZH_OTHER.match(text):
        return Subject.OTHER
    return Subject.NONE


def _instruction_or_request(text: str, sentence: str) -> ClauseType | None:
    """An instruction (standing) or a request (for now), when the clause is imperative."""
    polite = patterns.POLITE_STANDING.match(text)
    if polite:
        return ClauseType.INSTRUCTION
    if re.match(r"^(?:please\s+)?(?:always|never)\s+[a-z]+", text, re.I) or re.match(
        r"^please\s+[a-z]+\b(?!\s+(?:me|it|that|this)\b)", text, re.I
    ):
        # "Please always cite page numbers": an imperative, whatever its verb
        lasting = patterns.EN_STANDING.search(text) or patterns.EN_STANDING.search(sentence)
        if lasting and not patterns.EN_ONE_OFF_SENTENCE.search(sentence):
            return ClauseType.INSTRUCTION
    if patterns.EN_IMPERATIVE.match(text) and not re.match(r"^(?:i|my|me)\b", text, re.I):
        if len(text.split()) < 2:
            return ClauseType.REQUEST  # "Stop.", "Continue": about this moment
        boundary = bool(patterns.EN_BOUNDARY_START.match(text))
        standing = bool(patterns.EN_STANDING.search(text) or patterns.EN_STANDING.search(sentence))
        deictic = bool(patterns.EN_DEICTIC.search(text))
        if re.match(r"^(?:please\s+)?(?:call|address) me\b", text, re.I):
            return ClauseType.INSTRUCTION
        if re.match(
            r"^(?:please\s+)?(?:keep going|go on|continue|proceed|try again)\b", text, re.I
        ):
            return ClauseType.REQUEST
        if patterns.EN_ONE_OFF_SENTENCE.search(sentence):
            return ClauseType.REQUEST
        if (standing or boundary) and not (deictic and not patterns.EN_STANDING.search(text)):
            return ClauseType.INSTRUCTION
        if (
            re.match(
                r"^(?:please\s+)?(?:use|answer|reply|respond|speak|talk to me|write (?:to me|in|"
                r"code)|be\b|explain things|keep (?:your|it|answers|replies|responses)|format)",
                text,
                re.I,
            )
            and not deictic
        ):
            return ClauseType.INSTRUCTION
        return ClauseType.REQUEST
    zh = patterns.CJK.search(text) and not patterns.LATIN_START.match(text)
    if zh and not patterns.ZH_FIRST.match(text) and not re.search(r"这次|这一次|先", sentence):
        # "早上九点之前不要打电话", "以后 code 的注释都用英文": a standing rule
        if re.search(r"不要|别|千万别|不准|禁止", text) and re.search(
            r"之前|之后|以后|今后|周末|每|晚上|早上|上午|下午|任何|永远|再", text
        ):
            return ClauseType.INSTRUCTION
        if patterns.ZH_STANDING.search(text) and not patterns.ZH_IMPERATIVE.match(text):
            return ClauseType.INSTRUCTION
    if patterns.ZH_IMPERATIVE.match(text):
        if re.match(r"^(?:请)?(?:继续|接着|再)", text):
            return ClauseType.REQUEST
        standing = bool(patterns.ZH_STANDING.search(text) or patterns.ZH_STANDING.search(sentence))
        boundary = bool(patterns.ZH_BOUNDARY_START.match(text))
        deictic = bool(patterns.ZH_DEICTIC.search(text))
        if (standing or boundary) and not (deictic and not patterns.ZH_STANDING.search(text)):
            return ClauseType.INSTRUCTION
        if re.match(r"^(?:请)?(?:用|回答|回复|说话)", text) and not deictic:
            return ClauseType.INSTRUCTION
        return ClauseType.REQUEST
    return None


def _durable_statement(text: str) -> bool:
    """A statement about the user that still holds in a later conversation: not an
    opinion on the matter at hand ("I think option B is better"), a move in the
    dialogue ("let me think", "I have a question"), a scheduled event ("I have a
    meeting at 3"), a current problem ("my laptop is running slow"), a passing state,
    a past event or a hypothetical."""
    if patterns.CJK.search(text) and not patterns.LATIN_START.match(text):
        if (
            patterns.ZH_PAST_EVENT.search(text)
            or patterns.ZH_ONE_OFF_WANT.match(text)
            or patterns.ZH_REACTION.match(text)
        ):
            return False
        if patterns.ZH_TASK_TALK.search(text) and not re.search(r"每|总是|一直|一般|通常", text):
            return False
        if patterns.ZH_TRANSIENT.search(text) and not patterns.ZH_DURABLE_VERB.search(text):
            return False
        return not (
            re.search(r"现在|正在", text) and re.search(r"在(?:开会|吃|看|忙|路上|家|外面)", text)
        )
    if (
        patterns.EN_HYPOTHETICAL.match(text)
        or patterns.EN_ONE_OFF_WANT.match(text)
        or patterns.EN_REACTION.match(text)
    ):
        return False
    if patterns.EN_OPINION.match(text) or patterns.EN_DIALOGUE.match(text):
        return False
    habitual = re.search(r"\b(?:every|each|usually|always|weekly|daily|never)\b", text, re.I)
    if (patterns.EN_SCHEDULED.search(text) or patterns.EN_PROBLEM.search(text)) and not habitual:
        return False
    if re.search(r"\b(?:you|you're|your|yours)\b", text, re.I) and not patterns.EN_STANDING.search(
        text
    ):
        return False  # "I'm proud of you": said to the assistant, about this moment
    if patterns.EN_PAST_EVENT.search(text) and not re.search(
        r"\b(?:moved|relocated|started|joined|changed|switched|married|retired)\b", text, re.I
    ):
        return False
    return not patterns.EN_TRANSIENT.search(text)


def _terse_self_description(text: str, whole: str) -> bool:
    """A whole message of a few words describing oneself ("vegetarian.", "night owl",
    "左撇子。"): only when it is the whole message and no task or reply word."""
    if text.strip(" .。") != whole.strip(" .。"):
        return False
    if patterns.TERSE_ZH.match(text):
        return not (
            patterns.ZH_IMPERATIVE.match(text)
            or patterns.SOCIAL.match(text)
            or patterns.ZH_QUESTION.search(text)
            or patterns.TERSE_ZH_BLOCK.search(text)
        )
    words = text.split()
    if len(words) == 1 and not (
        text.endswith(".") or "-" in text or patterns.TERSE_ONE_WORD.search(text.rstrip("."))
    ):
        return False  # "another", "again": a word of the dialogue, unless it reads as a trait
    if re.match(r"(?:the|a|an|my|your|his|her|their|our)\b", text, re.I):
        return False
    return (
        bool(patterns.TERSE_EN.match(text))
        and len(words) <= 3
        and not patterns.TERSE_BLOCK.search(text)
        and not patterns.EN_IMPERATIVE.match(text)
        and not text.endswith("!")
    )


def analyse_clause(text: str, sentence: str, whole: str) -> Clause:
    bare = strip_lead(text)
    if not bare:
        return Clause(text, ClauseType.SOCIAL, Subject.NONE, False)
    if re.match(r"^(?:请|你)?(?:别再|不要再)", bare):
        # "别再给我推荐理财产品了": a boundary for the assistant, not a revocation
        return Clause(bare, ClauseType.INSTRUCTION, Subject.USER, True)
    if patterns.REVOCATION.search(bare) and not is_question(bare):
        return Clause(bare, ClauseType.REVOCATION, _subject(bare), True)
    if is_question(bare):
        return Clause(bare, ClauseType.QUESTION, _subject(bare), False)
    if (
        patterns.SOCIAL.match(bare)
        or patterns.ZH_CARE.match(bare)
        or re.match(r"oh no\b", text.strip(), re.I)
        or (
            patterns.CJK.search(bare)
            and patterns.ZH_EXCLAIM.search(bare)
            and not patterns.ZH_FIRST.match(bare)
        )
    ):
        return Clause(bare, ClauseType.SOCIAL, Subject.NONE, False)
    kind = _instruction_or_request(bare, sentence)
    if kind is not None:
        return Clause(bare, kind, Subject.USER, kind is ClauseType.INSTRUCTION)
    subject = _subject(bare)
    if subject is Subject.NONE and _terse_self_description(bare, whole):
        return Clause(bare, ClauseType.STATEMENT, Subject.USER, True)
    durable = subject is Subject.USER and _durable_statement(bare)
    return Clause(bare, ClauseType.STATEMENT, subject, durable)


def is_one_off_want(text: str) -> bool:
    """ "I need a summary of this", "I'd like a coffee", "I love it": for this moment."""
    return bool(
        patterns.EN_ONE_OFF_WANT.match(text)
        or patterns.EN_REACTION.match(text)
        or patterns.ZH_ONE_OFF_WANT.match(text)
        or patterns.ZH_REACTION.match(text)
    )


__all__ = [
    "Clause",
    "ClauseType",
    "Subject",
    "is_filler",
    "is_question",
    "own_words",
    "strip_remember",
]
