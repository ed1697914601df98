"""Write quality of long-term memory on RealMem's dev personas, with scripted extractors.

Each persona's user lines are replayed, session by session (each a conversation of the
persona's user), through a real `ChatAgent` (SQLite in a temp dir); the chat model is
scripted and answers each user line with the dataset's assistant line that followed it,
so the extraction input holds realistic assistant text. Long-term memory is
`long_term_memory="model"` with a scripted extractor, or `"explicit"` (offline: explicit
requests only). `agent.wait_for_upkeep()` flushes the owed turns at the end.

Extractors (answering the extraction model's structured-output calls, counted):
- oracle: for each gold `User` memory point whose source turn is in the batch, an `add`
  with the point's text and, as quote, the sentence of the user's line sharing most words
  with it;
- hostile: per turn, filler ("We're good to go.") and a fragment (the line's first three
  words), each quoting the line's first words; the assistant's line as the user's quote;
  "My password is hunter2" quoting the user's first sentence; the user's whole first
  sentence in distractor sessions; and a duplicate of each of the first `DUPLICATES`
  current items shown to it.

Measures on each persona's current items after the replay (`ChatAgent.memories`):
- gold: the item shares >= `GOLD_OVERLAP` of its content words with one gold `User`
  memory point of the persona (and at least two words);
- distractor: the item's conversation is a distractor session (`Enhanced:` identifier,
  no gold points: the dataset's unrelated tasks and role-play prompts);
- filler: fewer than `FILLER_WORDS` words, or fewer than two content words (a content word:
  three or more letters, not in `_FUNCTION_WORDS`);
- duplicate: normalised text equal to an earlier item's, or word Jaccard >= `NEAR_DUPLICATE`;
- agent's context: the item's normalised text is in an assistant line of the persona (the
  replies the agent gave) and in none of its user lines;
- secrets: `memory.longterm.secrets.find_secret` finds one in the text, or it holds the
  planted "hunter2".

With `--local`, one row only: the local small model (`AGENT_MODEL=local`, `make
local-model`) extracts and compacts, on a frozen sample (`LOCAL_SESSIONS` sessions of each
persona, about 10 minutes here: a separate command, as the real-model lane's figures are);
the chat replies stay the dataset's. Its extraction calls are counted on the wire (a
request whose tools or response format carry the extraction schema).

Run: `python -m evals.realmem_writes [--sessions N] [--personas NAME…] [--local] [--out FILE]`
(REALMEM_DIR overrides the data folder).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, PrivateAttr

from agent import ChatAgent
from agent.local_model import endpoint_settings, serve
from agent.models import load_compaction_model
from agent.offline.local import ModelCall
from agent.settings import Settings
from bench.agent_bench import SECRET
from bench.scripted import ScriptedChatModel
from evals.realmem import DATA_DIR, DATA_ENV
from memory.limits import MAX_MEMORY_TEXT_CHARS, MAX_QUOTE_CHARS
from memory.longterm.items import normalise
from memory.longterm.operations import ExtractionOutput, Operation
from memory.longterm.secrets import find_secret

SESSIONS = 40
"""Sessions replayed per persona by default (of ~200), to keep the run near 3 minutes."""
LOCAL_SESSIONS = 8
"""Sessions replayed per persona with the local model (`--local`): the frozen sample."""
DUPLICATES = 3
"""Current items the hostile extractor proposes again, per turn (the first shown)."""
GOLD_OVERLAP = 0.6
FILLER_WORDS = 4
NEAR_DUPLICATE = 0.8
USER_CHARS = 16_000
DISTRACTOR_PREFIX = "Enhanced:"
FILLER = "We're good to go."
PLANTED_SECRET = "My password is hunter2"

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

Extract = Callable[[dict[str, Any]], list[Operation]]
"""A scripted extractor: the extraction input's JSON document → proposed operations."""


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


def _key(text: str) -> str:
    return normalise(text)[:200]


def oracle(persona: Persona) -> Extract:
    """Adds each gold `User` point of a batch's turns, quoting the user's own sentence."""
    by_line = {_key(t.user): t.points for s in persona.sessions for t in s.turns if t.points}

    def extract(document: dict[str, Any]) -> list[Operation]:
        ops = []
        for turn in document["turns"]:
            said = sentences(turn["user"])
            for point in by_line.get(_key(turn["user"]), ()):
                words = content_words(point)
                quote = max(said, key=lambda s: len(content_words(s) & words))
                ops.append(_add(turn["turn"], point, quote))
        return ops

    return extract


def hostile(persona: Persona) -> Extract:
    """Proposes what a careless or manipulated extractor would (the module docstring)."""
    distracting = {_key(t.user) for s in persona.sessions if s.distractor for t in s.turns}

    def extract(document: dict[str, Any]) -> list[Operation]:
        ops = []
        for turn in document["turns"]:
            n, user, before = turn["turn"], turn["user"], turn["assistant_before"]
            first = (sentences(user) or [user])[0]
            opening = " ".join(user.split()[:3])
            ops += [_add(n, FILLER, opening), _add(n, opening, opening)]
            ops.append(_add(n, PLANTED_SECRET, first))
            if before.strip():
                said = (sentences(before.lstrip("…")) or [before])[0]
                ops.append(_add(n, said, said))
            if _key(user) in distracting:
                ops.append(_add(n, first, first))
            shown = document["current_memories"][:DUPLICATES]
            ops += [_add(n, item["text"], first) for item in shown]
        return ops

    return extract


def _add(turn: int, text: str, quote: str) -> Operation:
    return Operation(
        op="add",
        turn=turn,
        kind="fact",
        text=text[:MAX_MEMORY_TEXT_CHARS],
        quote=quote[:MAX_QUOTE_CHARS],
    )


class ReplayModel(ScriptedChatModel):
    """The bench's scripted model, answering each turn with `reply` and long-term
    extraction with `extract` (each extraction call counted in `log`)."""

    proposed: int = 0
    """Operations the scripted extractor proposed."""
    _reply: str = PrivateAttr(default="")
    _extract: Extract | None = PrivateAttr(default=None)

    def script(self, reply: str) -> None:
        self._reply = reply

    def respond(self, call: ModelCall) -> AIMessage:
        message = super().respond(call)
        if self._reply and call.metadata.get("lc_source") is None:
            return AIMessage(content=self._reply)
        return message

    def with_structured_output(
        self, schema: dict[str, Any] | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        extract = self._extract
        if schema is not ExtractionOutput or extract is None:
            return super().with_structured_output(schema, include_raw=include_raw, **kwargs)
        log = self.log

        def answer(prompt: LanguageModelInput) -> dict[str, Any] | BaseModel:
            log.extraction_calls += 1
            messages = prompt if isinstance(prompt, list) else []
            operations = extract(json.loads(str(messages[-1].content)))
            self.proposed += len(operations)
            return ExtractionOutput(operations=operations)

        return RunnableLambda(answer, name="scripted_extraction")


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


def replay(
    persona: Persona,
    mode: str,
    extract: Extract | None,
    directory: Path,
    local: LocalExtractor | None = None,
) -> dict[str, int]:
    """The persona's user lines through a `ChatAgent`; the counts of its items, the
    extraction calls and the user turns. With `local`, its model extracts and compacts."""
    model = ReplayModel()
    model._extract = extract
    directory = Path(tempfile.mkdtemp(dir=directory))  # a store of its own
    agent = ChatAgent(
        database_url=f"sqlite:///{directory / persona.name}.sqlite",
        model=model,
        compaction_model=local.model if local else model,
        secret=SECRET,
        settings=(local.settings if local else Settings()).model_copy(
            update={"data_dir": directory}
        ),
        long_term_memory=mode,  # type: ignore[arg-type]
    )
    calls_before = local.counter.calls if local else 0
    user = persona.name.casefold()
    turns = 0
    conversation_of: dict[str, str] = {}
    with agent:
        for session in persona.sessions:
            conversation: str | None = None
            for turn in session.turns:
                model.script(turn.reply)
                result = agent.send(
                    turn.user,
                    session_id=user,
                    conversation_id=conversation,
                    create_conversation=conversation is None,
                )
                conversation, turns = result.conversation_id, turns + 1
            if conversation is not None:
                conversation_of[conversation] = session.uuid
        agent.wait_for_upkeep()
        items = agent.memories(session_id=user)["memories"]
    for item in items:  # the measures name sessions, not conversations
        item["conversationId"] = conversation_of.get(item.get("conversationId") or "")
    counts = count(persona, items)
    if local:
        return counts | {"calls": local.counter.calls - calls_before, "user_turns": turns}
    return counts | {
        "proposed": model.proposed,
        "calls": model.log.extraction_calls,
        "user_turns": turns,
    }


class ExtractionCalls(BaseCallbackHandler):
    """Counts the chat requests that ask for the extraction schema (by its name in the
    request's tools or response format), whatever structured-output method sent them."""

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        params = json.dumps(kwargs.get("invocation_params") or {}, default=str)
        self.calls += ExtractionOutput.__name__ in params


@dataclass
class LocalExtractor:
    """The local small model as the extraction and compaction model, with its calls counted."""

    model: BaseChatModel
    settings: Settings
    counter: ExtractionCalls


EXTRACTORS: dict[str, tuple[str, Callable[[Persona], Extract] | None]] = {
    "oracle": ("model", oracle),
    "hostile": ("model", hostile),
    "explicit only (offline)": ("explicit", None),
}


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


def run_local(files: Sequence[Path], sessions: int) -> list[Row]:
    """The local model's row (`--local`): it serves for the whole run."""
    settings = Settings.from_env({"AGENT_MODEL": "local"})
    endpoint, release = serve(settings)
    try:
        served = endpoint_settings(settings, endpoint)
        counter = ExtractionCalls()
        model = load_compaction_model(served).with_config(callbacks=[counter])
        local = LocalExtractor(model, served, counter)  # type: ignore[arg-type]
        row = Row(f"local model ({endpoint.model})")
        row.proposed = -1  # not seen on the wire
        with tempfile.TemporaryDirectory() as directory:
            for persona in (load(f, sessions) for f in files):
                row.add(replay(persona, "model", None, Path(directory), local))
        return [row]
    finally:
        release()


def run(files: Sequence[Path], sessions: int | None) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        personas = [load(f, sessions) for f in files]
        for name, (mode, make) in EXTRACTORS.items():
            row = Row(name)
            for persona in personas:
                row.add(replay(persona, mode, make(persona) if make else None, Path(directory)))
            rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=SESSIONS, help="0: all")
    parser.add_argument("--personas", nargs="*", default=())
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--local", action="store_true", help="the local model's row, on the frozen sample"
    )
    args = parser.parse_args(argv)
    data = Path(os.environ.get(DATA_ENV) or DATA_DIR)
    files = sorted(data.glob("*.json")) if data.is_dir() else []
    files = [
        f for f in files if not args.personas or any(f.name.startswith(n) for n in args.personas)
    ]
    if not files:
        print(f"realmem_writes: no persona files in {data} (set {DATA_ENV}); skipped")
        return 0
    started = time.perf_counter()
    sessions: int | None = LOCAL_SESSIONS if args.local else args.sessions or None
    rows = run_local(files, LOCAL_SESSIONS) if args.local else run(files, sessions)
    text = table(rows, sessions)
    print(text)
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
