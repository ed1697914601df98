"""The write-quality eval's measures over a persona's current items, summed per
extractor into rows, and their Markdown table.

Measures on each persona's current items after the replay (`ChatAgent.memories`):
- gold: the item shares >= `GOLD_OVERLAP` of its content words with one gold `User`
  memory point of the persona (and at least two words);
- distractor: the item's conversation is a distractor session (`Enhanced:` identifier,
  no gold points: the dataset's unrelated tasks and role-play prompts);
- filler: fewer than `FILLER_WORDS` words, or fewer than two content words (a content word:
  `evals.realmem_personas.content_words`);
- duplicate: normalised text equal to an earlier item's, or word Jaccard >= `NEAR_DUPLICATE`;
- agent's context: the item's normalised text is in an assistant line of the persona (the
  replies the agent gave) and in none of its user lines;
- secrets: `memory.longterm.secrets.find_secret` finds one in the text, or it holds the
  planted "hunter2".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.realmem_personas import Persona, content_words
from memory.longterm.items import normalise
from memory.longterm.secrets import find_secret

GOLD_OVERLAP = 0.6
FILLER_WORDS = 4
NEAR_DUPLICATE = 0.8


@dataclass
class Row:
    """One extractor's figures, summed over personas."""

    extractor: str
    personas: int = 0
    items: int = 0
    gold: int = 0
    distractor: int = 0
    filler: int = 0
    duplicates: int = 0
    from_agent: int = 0
    secrets: int = 0
    proposed: int = 0
    calls: int = 0
    user_turns: int = 0
    per_persona: list[int] = field(default_factory=list)

    def add(self, counts: dict[str, int]) -> None:
        self.personas += 1
        self.per_persona.append(counts["items"])
        for name, value in counts.items():
            setattr(self, name, getattr(self, name) + value)


def count(persona: Persona, items: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The measures of the module docstring over a persona's current `items`."""
    gold = [content_words(p) for p in persona.points]
    distracting = {s.uuid for s in persona.sessions if s.distractor}
    user_text = [" " + normalise(t.user) + " " for s in persona.sessions for t in s.turns]
    replies = [" " + normalise(t.reply) + " " for s in persona.sessions for t in s.turns]
    counts = dict.fromkeys(("items", "gold", "distractor", "filler", "duplicates"), 0)
    counts |= {"from_agent": 0, "secrets": 0}
    seen: list[tuple[str, set[str]]] = []
    for item in items:
        text, words = item["text"], content_words(item["text"])
        key = normalise(text)
        counts["items"] += 1
        shared = (len(words & g) for g in gold)
        counts["gold"] += bool(words) and any(
            n >= 2 and n / len(words) >= GOLD_OVERLAP for n in shared
        )
        counts["distractor"] += item.get("conversationId") in distracting
        counts["filler"] += len(text.split()) < FILLER_WORDS or len(words) < 2
        counts["duplicates"] += any(
            key == k or (words | w and len(words & w) / len(words | w) >= NEAR_DUPLICATE)
            for k, w in seen
        )
        seen.append((key, words))
        needle = " " + key + " "
        counts["from_agent"] += any(needle in r for r in replies) and not any(
            needle in u for u in user_text
        )
        counts["secrets"] += find_secret(text) is not None or "hunter2" in text.casefold()
    return counts


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def table(rows: Sequence[Row], sessions: int | None) -> str:
    """The Markdown table of `rows`."""
    capped = f"the first {sessions} sessions of each" if sessions else "all sessions"
    lines = [
        f"RealMem dev write quality ({rows[0].personas if rows else 0} personas, {capped}; "
        f"gold: >= {GOLD_OVERLAP:.0%} of an item's content words in one gold User point; "
        f"filler: < {FILLER_WORDS} words or < 2 content words; duplicate: same normalised "
        f"text or word Jaccard >= {NEAR_DUPLICATE}; shares of current items)",
        "",
        "| extractor | proposed | items/persona | gold | distractor | filler | duplicates "
        "| agent's context | secrets | extraction calls/user turn |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        per = "/".join(str(n) for n in r.per_persona)
        proposed = r.proposed if r.proposed >= 0 else "-"
        lines.append(
            f"| {r.extractor} | {proposed} | {r.items / max(r.personas, 1):.1f} ({per}) "
            f"| {_share(r.gold, r.items)} | {_share(r.distractor, r.items)} "
            f"| {_share(r.filler, r.items)} | {_share(r.duplicates, r.items)} "
            f"| {_share(r.from_agent, r.items)} | {r.secrets} "
            f"| {r.calls / max(r.user_turns, 1):.3f} ({r.calls}/{r.user_turns}) |"
        )
    return "\n".join(lines) + "\n"
