"""RealMem persona files as sessions to replay: each user line with the assistant line
that followed it and the gold `User` memory points it is the source of; and the text
helpers the write-quality measures and extractors share (sentences, content words).

A distractor session is one whose identifier starts with `Enhanced:` and that has no gold
points (the dataset's unrelated tasks and role-play prompts). A content word has three or
more letters and is not in `_FUNCTION_WORDS`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

USER_CHARS = 16_000
DISTRACTOR_PREFIX = "Enhanced:"

_LABEL = re.compile(r"\s*【[^】]*】\s*")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_WORD = re.compile(r"[^\W\d_]{3,}")
_FUNCTION_TEXT = """the and for are but not you your yours all any can had has have her his him
how its our out was were who why what when where which will with would could should this
that these those them they their there then than from into onto about also just very really
more most some such only own same too off over under again once here both each few other nor
yes okay sure thanks thank please good great fine nice cool well let lets got get going done
now yet did does doing being been one two"""
_FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())


def content_words(text: str) -> set[str]:
    """`text`'s words of three or more letters that are not function words."""
    return {w for w in _WORD.findall(text.casefold()) if w not in _FUNCTION_WORDS}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


@dataclass(frozen=True)
class Turn:
    user: str
    reply: str
    points: tuple[str, ...]
    """Gold `User` memory points whose source is this turn (labels left out)."""


@dataclass(frozen=True)
class Session:
    uuid: str
    distractor: bool
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Persona:
    name: str
    sessions: tuple[Session, ...]

    @property
    def points(self) -> list[str]:
        return [p for s in self.sessions for t in s.turns for p in t.points]


def load(path: Path, sessions: int | None = None) -> Persona:
    """A persona file: sessions in file order, each user line with the reply after it and
    its gold `User` points (the first `sessions` sessions when given)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for raw in document["dialogues"][:sessions]:
        lines = raw["dialogue_turns"]
        gold: dict[int, list[str]] = {}
        for point in raw.get("extracted_memory") or ():
            if point.get("source_role_snapshot") == "User":
                gold.setdefault(_source(lines, point), []).append(
                    _LABEL.sub(" ", point["content"]).strip()
                )
        turns = []
        for index, line in enumerate(lines):
            if line["speaker"] != "User":
                continue
            after = lines[index + 1] if index + 1 < len(lines) else {}
            reply = after.get("content", "") if after.get("speaker") == "Assistant" else ""
            turns.append(Turn(line["content"][:USER_CHARS], reply, tuple(gold.get(index, ()))))
        distractor = raw["session_identifier"].startswith(DISTRACTOR_PREFIX) and not gold
        out.append(Session(raw["session_uuid"], distractor, tuple(turns)))
    return Persona(document["_metadata"]["person_name"], tuple(out))


def _source(lines: list[dict[str, Any]], point: dict[str, Any]) -> int:
    """The index of a gold point's turn: the line its snapshot quotes, else its
    `source_turn` (1-based)."""
    snapshot = point.get("source_content_snapshot")
    found = [i for i, line in enumerate(lines) if line["content"] == snapshot]
    return found[0] if found else int(point["source_turn"]) - 1
