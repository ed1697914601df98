"""Deterministic rules for long-term memory: the pre-filter and the `rules` extractor.

Built on one analysis of what each sentence is (`memory.longterm.analysis`: type,
subject, durability, in English and Chinese), not on a list of cue words, they decide:
- which clauses state something durable about the user or a standing instruction
  (`extract`), of which kind and importance, and which clauses revoke something;
- the subject a statement is about (`subject_of`), so that a new statement on the
  same subject supersedes the old one ("answer in English" replaces "answer in
  Chinese").
The write gate (`memory.longterm.gate`) judges items added directly and a model's
proposals by the same analysis (`verdict`). Secrets are checked on the whole text
before any clause is split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from memory.limits import MAX_MEMORY_TEXT_CHARS
from memory.longterm.analysis import (
    Clause,
    ClauseType,
    Subject,
    analyse_clause,
    is_filler,
    is_one_off_want,
    own_words,
    sentences,
    split_clauses,
    strip_lead,
)
from memory.longterm.analysis import strip_remember as analysis_strip_remember
from memory.longterm.items import MemoryKind
from memory.longterm.recall import tokens
from memory.longterm.secrets import find_secret

_DIRECTIVE = re.compile(
    r"^(?:please\s+)?(?:always\s+|never\s+|don'?t\s+|do not\s+)?"
    r"(?:use|answer|reply|respond|write|keep|be|speak|talk|call me|address me|give|avoid|"
    r"stop|include|explain|format|show)\b"
    r"|^(?:以后|今后|总是|每次|请|都)*(?:用|回答|回复|说|别|不要|叫我|称呼我)",
    re.IGNORECASE,
)

_BOUNDARY = re.compile(
    r"\b(?:don'?t|do not|never|no|avoid|stop|hate|dislike|can'?t stand|allergic|"
    r"not comfortable|uncomfortable|boundary|boundaries|please don'?t)\b"
    r"|不喜欢|不要|避免|边界|压力|操控|套路|别|讨厌|过敏",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:prefer|preferred|like|love|enjoy|favou?rite|rather|fan of|into)\b"
    r"|喜欢|偏好|更希望|倾向|习惯|爱",
    re.IGNORECASE,
)
_GOAL = re.compile(
    r"\b(?:my goal|goal is|i want to|i'd like to|i would like to|i'm trying to|i am trying to|"
    r"i'm learning|i am learning|i plan|i'm planning|i am planning|i hope to|i aim|"
    r"working (?:on|towards?)|preparing for)\b|目标|想要|希望|正在|打算|计划",
    re.IGNORECASE,
)
_STYLE = re.compile(
    r"\b(?:answer|answers|reply|replies|respond|responses|write|tone|formal|informal|casual|"
    r"concise|brief|short|shorter|long|longer|detailed|verbose|bullet|bullets|markdown|"
    r"emoji|emojis|examples|language|english|chinese|call me|address me|speak|talk)\b"
    r"|回复|回答|语气|简短|详细|中文|英文|风格",
    re.IGNORECASE,
)

_LANGUAGES = (
    r"english|chinese|mandarin|cantonese|french|spanish|german|japanese|korean|italian|"
    r"portuguese|russian|arabic|hindi|dutch|swedish|polish|turkish|vietnamese|"
    r"中文|英文|英语|汉语|日语|日文|法语|德语|韩语|西班牙语"
)
_SUBJECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("name", re.compile(r"\b(?:call me|my name|address me)\b|我叫|叫我|我的名字", re.I)),
    ("language", re.compile(rf"\b(?:{_LANGUAGES})\b|{_LANGUAGES}", re.I)),
    (
        "length",
        re.compile(
            r"\b(?:short|shorter|brief|briefer|concise|long|longer|detailed|verbose|length|"
            r"one[- ]line|terse)\b|简短|详细|简洁|长一点|短一点",
            re.I,
        ),
    ),
    ("tone", re.compile(r"\b(?:formal|informal|casual|friendly|professional|tone)\b|语气", re.I)),
    (
        "format",
        re.compile(r"\b(?:bullet(?: points)?|markdown|tables?|emoji|emojis|headings)\b", re.I),
    ),
    (
        "diet",
        re.compile(
            r"\b(?:vegetarian|vegan|pescatarian|eat meat|meat|halal|kosher|gluten)\b|素食|吃素",
            re.I,
        ),
    ),
    (
        "home",
        re.compile(
            r"\b(?:i live|i'm living|i am living|living in|based in|i'm based|i am based|"
            r"moved (?:from|to|back)|relocated|home (?:for me )?is|my home|i'm in (?-i:[A-Z]))\b"
            r"|我住|住在|在.{0,6}生活|搬到|搬来|搬去|搬回",
            re.I,
        ),
    ),
    ("manager", re.compile(r"\b(?:manager|boss|line manager)\b|领导|老板|上司|经理", re.I)),
    ("mentor", re.compile(r"\b(?:mentor|supervisor|advisor)\b|导师", re.I)),
    (
        "work",
        re.compile(
            r"\b(?:i work|my job|my employer|i'm employed|new job|changed jobs|switched jobs|"
            r"work(?:ing)? (?:as|at|for))\b|在.{0,8}工作|换工作|在.{0,10}上班|我是一名",
            re.I,
        ),
    ),
    (
        "commute",
        re.compile(r"\b(?:commute|commuting|to work by|bike to|drive to work)\b|通勤", re.I),
    ),
    ("timezone", re.compile(r"\b(?:time ?zone|utc[+-]?\d*|gmt[+-]?\d*)\b|时区", re.I)),
)
_NEGATION = re.compile(r"\b(?:not|don'?t|do not|never|no|dislike|hate|avoid)\b|不|别|没", re.I)


@dataclass(frozen=True)
class Proposal:
    """One candidate item: what the user said (`quote`: their words), what it keeps of it,
    and what kind of thing it is."""

    kind: MemoryKind
    text: str
    importance: int
    quote: str = ""


@dataclass(frozen=True)
class Extraction:
    """What an extractor found in one user text.

    Attributes:
        proposals: candidate items, in the order said.
        revocations: clauses that revoke something said before ("I no longer …").
    """

    proposals: tuple[Proposal, ...] = ()
    revocations: tuple[str, ...] = ()


def strip_remember(text: str) -> str:
    """`text` without a leading "please remember that" / "记住"."""
    body, explicit = analysis_strip_remember(text)
    return re.sub(r"^to\s+", "", body, flags=re.I) if explicit else body


def tidy(text: str) -> str:
    """A clause as stored: one line, first letter capitalised, at most 300 characters."""
    text = " ".join(text.split()).strip(" ,;").rstrip("?？ ")
    if text and text[0].isalpha() and text[0].islower():
        text = text[0].upper() + text[1:]
    if len(text) > MAX_MEMORY_TEXT_CHARS:
        cut = text[: MAX_MEMORY_TEXT_CHARS - 1]
        text = (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;") + "…"
    return text


def classify(text: str) -> MemoryKind:
    """The kind of a statement, in English and Chinese, first match wins: boundary,
    preference, goal, then style; a plain statement about oneself is a fact."""
    if _BOUNDARY.search(text):
        return "boundary"
    if _PREFERENCE.search(text):
        return "preference"
    if _GOAL.search(text):
        return "goal"
    if _STYLE.search(text) or _DIRECTIVE.match(text):
        return "style"
    return "fact"


def importance(text: str, kind: MemoryKind, *, explicit: bool) -> int:
    """1-5: boundaries and what the user asked to be remembered rank highest."""
    if kind == "boundary" or explicit:
        return 5
    if subject_of(text) in {"name", "diet", "home", "work"} or re.search(
        r"\b(?:always|never|from now on)\b|以后|总是", text, re.I
    ):
        return 4
    return 3


_NO_LONGER = re.compile(r"\b(?:no|any)\s+longer\b|\bnot\s+anymore\b", re.IGNORECASE)


def subject_of(text: str) -> str | None:
    """The subject a statement is about, when it is one a later statement replaces ("no
    longer" says the statement changed, not that it is about length)."""
    text = _NO_LONGER.sub(" ", text)
    for subject, pattern in _SUBJECTS:
        if pattern.search(text):
            return subject
    return None


def is_negated(text: str) -> bool:
    """Whether a statement says what the user does not want."""
    return bool(_NEGATION.search(text))


def analysed(text: str) -> list[tuple[Clause, bool]]:
    """(clause, asked to be remembered) for every clause of the user's own words."""
    found: list[tuple[Clause, bool]] = []
    own = own_words(text)
    whole = own.strip()
    for sentence in sentences(own):
        for piece in split_clauses(sentence):
            body, explicit = analysis_strip_remember(strip_lead(piece))
            if explicit:
                # "can you remember that I live in Berlin?" asks to keep a statement
                body = re.sub(r"^to\s+", "", body, flags=re.I)
                if re.match(r"(?:i|i'm|my|we|our|我)", body, re.I):
                    body = body.rstrip("?？ ")
                if is_filler(body):
                    continue
            found.append((analyse_clause(body, sentence, body if explicit else whole), explicit))
    return found


def _worth(clause: Clause, explicit: bool, *, direct: bool = False) -> bool:
    """Whether a clause is for the gate: a keepable statement or instruction, or a
    revocation. What the user asked to be remembered about themselves need not say how
    long it holds; an item added directly (the memory form) need not name its subject
    ("vegetarian")."""
    if clause.type is ClauseType.REVOCATION or clause.keepable:
        return True
    wanted = Subject.USER if not direct else None
    return (
        explicit
        and clause.type is ClauseType.STATEMENT
        and clause.subject is not Subject.OTHER
        and (wanted is None or clause.subject is wanted)
        and not is_one_off_want(clause.text)
    )


def _candidates(text: str) -> list[tuple[Clause, bool]]:
    """The clauses worth the gate's attention: keepable statements and instructions,
    and revocations. Nothing at all when the text discloses a secret: the detector
    reads the whole text before any split."""
    if find_secret(text) is not None:
        return []
    return [(clause, explicit) for clause, explicit in analysed(text) if _worth(clause, explicit)]


class Verdict(StrEnum):
    """Why a text holds nothing to keep."""

    EMPTY = "empty"
    QUOTED = "quoted"
    QUESTION = "question"
    OTHER = "other"
    ONE_OFF = "one_off"
    TRANSIENT = "transient"


def verdict(text: str, *, explicit: bool = False) -> Verdict | None:
    """None when `text` states something to keep (secrets aside), else why not.

    Args:
        text: what the user said.
        explicit: the user asked for it to be remembered (an item added directly): a
            statement about themselves need not say how long it holds.
    """
    if not own_words(text).strip(" .。…\n"):
        return Verdict.QUOTED if text.strip() and not _SLASH.match(text) else Verdict.EMPTY
    clauses = analysed(text)
    if any(_worth(clause, explicit or asked, direct=explicit) for clause, asked in clauses):
        return None
    types = {clause.type for clause, _ in clauses}
    if ClauseType.QUESTION in types:
        return Verdict.QUESTION
    if any(c.subject is Subject.OTHER and c.type is ClauseType.STATEMENT for c, _ in clauses):
        return Verdict.OTHER
    if ClauseType.REQUEST in types:
        return Verdict.ONE_OFF
    if any(c.type is ClauseType.STATEMENT and c.subject is Subject.USER for c, _ in clauses):
        if any(is_one_off_want(c.text) for c, _ in clauses):
            return Verdict.ONE_OFF
        return Verdict.TRANSIENT
    return Verdict.EMPTY


_SLASH = re.compile(r"^\s*/[a-z]+\b", re.I)


_REVOCATION_TOKENS = tokens(
    "no longer anymore any more forget that about stop never mind disregard not want like "
    "use using prefer true scratch said what earlier ignore actually these days now "
    "不再 别再 忘记 忘掉 取消 喜欢 我不 现在 最近 已经 说过 之前 刚才 吧"
)
_ZH_SCAFFOLD = re.compile(
    r"我们|我|现在|最近|已经|早就|如今|目前|不再|别再|再|不|没|了|都|也|吧|呢|啦"
)
"""The words of a Chinese revocation that say it is one ("我最近不跑步了" is about 跑步)."""


def revoked_words(clause: str) -> frozenset[str]:
    """What a revoking clause is about, its scaffold ("no longer", "不再…了") left out:
    nothing for a bare "scratch that" / "忘了吧"."""
    return tokens(_ZH_SCAFFOLD.sub(" ", clause)) - _REVOCATION_TOKENS


def extract(text: str) -> Extraction:
    """The `rules` extractor over the user's own text of one turn. A bare retraction
    ("…. Scratch that.") takes back what the same message said before it."""
    proposals: list[Proposal] = []
    revocations: list[str] = []
    for clause, explicit in _candidates(text):
        if clause.type is ClauseType.REVOCATION:
            if proposals and not revoked_words(clause.text):
                proposals.clear()
            else:
                revocations.append(clause.text)
            continue
        body = clause.text
        kind = classify(body)
        keep = importance(body, kind, explicit=explicit)
        proposals.append(Proposal(kind, tidy(body), keep, quote=body))
    return Extraction(tuple(proposals), tuple(revocations))


__all__ = [
    "Extraction",
    "Proposal",
    "classify",
    "extract",
    "importance",
    "is_negated",
    "strip_remember",
    "subject_of",
    "tidy",
]
