"""RealMem's persona files read: sessions, lines, and each query's evidence.

The dataset's shape (its README, beside the data): per persona `dialogues`, sessions in
the benchmark's order, each with `dialogue_turns`; a user turn with `is_query` is a
question, and the assistant turn after it names the memory points (`memory_used`) and
the sessions (`memory_session_uuids`) its answer needed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SENTENCE_WORDS = 8
"""A sentence shorter than this ("Sounds good!") could be any session's."""
_LABEL = re.compile(r"^\s*【[^】]*】\s*")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_ESCAPE = re.compile(r"\\[nt\"\\]")
_NON_WORD = re.compile(r"\W+")


def normalised(text: str) -> str:
    """`text` folded to words and single spaces (a recalled line's JSON escapes too)."""
    return " " + _NON_WORD.sub(" ", _ESCAPE.sub(" ", text).casefold()).strip() + " "


@dataclass(frozen=True)
class Query:
    id: str
    category: str
    points: tuple[str, ...]
    """The `memory_used` points' contents, labels left out."""
    sessions: tuple[str, ...]
    """The evidence sessions' uuids."""


@dataclass(frozen=True)
class Line:
    speaker: str
    text: str
    query: Query | None = None


@dataclass(frozen=True)
class Session:
    uuid: str
    date: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Persona:
    name: str
    sessions: tuple[Session, ...]

    def sentences(self) -> dict[str, tuple[str, ...]]:
        """Per session, its lines' sentences long enough to name it, normalised."""
        out: dict[str, tuple[str, ...]] = {}
        for session in self.sessions:
            found = (normalised(s) for line in session.lines for s in _SENTENCE.split(line.text))
            out[session.uuid] = tuple(s for s in found if s.count(" ") > SENTENCE_WORDS)
        return out


def load_persona(path: Path) -> Persona:
    """One persona file of the dataset."""
    document = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    for raw in document["dialogues"]:
        turns = raw["dialogue_turns"]
        lines = []
        for index, turn in enumerate(turns):
            query = None
            if turn.get("is_query"):
                answer = turns[index + 1] if index + 1 < len(turns) else {}
                query = Query(
                    str(turn.get("query_id") or f"{raw['session_uuid']}-{index}"),
                    str(turn.get("category_name") or ""),
                    tuple(_LABEL.sub("", p["content"]) for p in answer.get("memory_used") or ()),
                    tuple(answer.get("memory_session_uuids") or ()),
                )
            lines.append(Line(turn["speaker"], turn["content"], query))
        sessions.append(Session(raw["session_uuid"], raw["current_time"][:10], tuple(lines)))
    return Persona(document["_metadata"]["person_name"], tuple(sessions))


def persona_files(directory: Path, names: Sequence[str] = ()) -> list[Path]:
    """The persona files in `directory`, by name (only `names`' when given)."""
    files = sorted(directory.glob("*.json"))
    return [f for f in files if not names or any(f.name.startswith(n) for n in names)]
