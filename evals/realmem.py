"""Recall on RealMem's public dialogues: is the evidence a query needs in the context?

RealMem (arXiv 2601.06966, Apache-2.0) is not in this repository: its development half
lives outside it (`../shared/data/realmem-dev` beside the repository, or `REALMEM_DIR`),
and without it this harness says so and skips. Each persona is one user (one session of
`ours`); its sessions are played in file order, each one conversation: every user line
is a turn sent through `ChatAgent`, answered by a scripted model with the dataset's
assistant line (both sides archived, as a deployment's are), dated by the session's date.

At each query turn (`is_query`), the context the chat model is sent is recorded (the
system prompt and the turn's own message left out) when the query is asked
- `new`: in a new conversation (deleted after it);
- `current`: as a new turn of the current conversation (the session's own when the
  query is not its first line, else the previous session's; the first session's
  opening query has none): that turn is the replay's own, so the archive goes on.
Measured on each context (model-free):
- word evidence recall: a `memory_used` point (its `【topic】` label left out) is found
  when `POINT_SHARE` (`evals.realmem_probes`) of its content words are in the context;
- session recall: an evidence session is found when a sentence of one of its lines
  (`SENTENCE_WORDS` words or more) is in the context;
- the recalled block: how often it is non-empty, and its tokens.
Beside it, `bm25`: BM25 over every earlier line of both speakers (the current
conversation included) that the context does not already show, its best lines cut to
the recall budget (`DEFAULT_RECALL_TOKENS`, tokens by LangChain's
`count_tokens_approximately`); in `current` mode beside the conversation's last 8 lines.
Then the off-topic probes (`evals/offtopic/dev.jsonl`), each in a new conversation: a
probe recalls something when its context holds a recalled line or a long-term item.

Run: `python -m evals.realmem [--persona NAME …] [--limit N]`; results in
`bench/results/realmem.json`. These are dev figures (the data is tuned on). With
`AGENT_EMBEDDINGS_MODEL=local` in the environment, `ours` ranks with the local
embedding model (its settings read it), and each user line costs an embedding.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately

from evals.contract import System
from evals.long_archive import ACKNOWLEDGED, ReplayClock, ReplayModel
from evals.realmem_data import Persona, Query, load_persona, persona_files
from evals.realmem_probes import (
    Probe,
    Said,
    bm25_context,
    judge,
    memory_text,
    recalls_anything,
    said,
)
from evals.systems import build
from evals.threads import OffTopic, load_probes
from memory.context import RECALL_BLOCK_ID
from memory.limits import DEFAULT_RECALL_TOKENS

DATA_ENV = "REALMEM_DIR"
DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "realmem-dev"
RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"
MODES = ("new", "current")
SYSTEMS = ("ours", "bm25")


# -- the replay ----------------------------------------------------------------------------


@dataclass
class Run:
    persona: str
    turns: int = 0
    seconds: float = 0.0
    probes: list[Probe] = field(default_factory=list)
    errors: int = 0
    """Errors the agent logged (a failed recall answers without it: not a miss)."""
    offtopic: list[tuple[bool, bool]] = field(default_factory=list)
    """Per off-topic probe: whether it recalled lines, and items (`recalls_anything`)."""


class ErrorCount(logging.Handler):
    """Counts the error records logged while it is attached."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def _day(iso: str) -> datetime:
    return datetime.combine(date.fromisoformat(iso), datetime.min.time(), UTC)


class Replay:
    """One persona played into one session of `ours`, measuring its queries."""

    def __init__(self, persona: Persona, system: System, model: ReplayModel, budget: int):
        self.persona = persona
        self.system = system
        self.model = model
        self.budget = budget
        self.sentences = persona.sentences()
        self.lines: list[Said] = []
        self.run = Run(persona.name)

    def send(self, conversation: str, text: str, answer: str | None) -> list[BaseMessage]:
        """One turn; the chat request's messages. It stays in the archive."""
        log = self.system.log
        log.chats.clear()  # (the log would keep every request of the replay)
        self.model.say(answer)
        self.system.recalling(PERSONA_SESSION, conversation, text)
        self.run.turns += 1
        self.lines += [said(conversation, "user", text)]
        self.lines += [said(conversation, "assistant", answer or ACKNOWLEDGED)]
        return log.chats[0] if log.chats else []

    def ask(self, query: Query, mode: str, context: Sequence[BaseMessage]) -> None:
        block = next((m.text for m in context if m.id == RECALL_BLOCK_ID), "")
        tokens = count_tokens_approximately([SystemMessage(content=block)]) if block else 0
        self.record(query, "ours", mode, memory_text(context), tokens)

    def baseline(self, query: Query, text: str, mode: str, conversation: str | None) -> None:
        shown, tokens = bm25_context(self.lines, text, conversation, self.budget)
        self.record(query, "bm25", mode, shown, tokens)

    def record(self, query: Query, system: str, mode: str, text: str, tokens: int) -> None:
        points, sessions = judge(text, query, self.sentences)
        name, category = self.persona.name, query.category
        probe = Probe(name, query.id, category, system, mode, points, sessions, tokens)
        self.run.probes.append(probe)

    def play(self, clock: ReplayClock, limit: int | None = None) -> None:
        """Every session in file order, up to the `limit`th query."""
        previous: str | None = None
        n = asked = 0
        for index, session in enumerate(self.persona.sessions):
            conversation = f"s{index:03d}"
            opened = False
            for i, line in enumerate(session.lines):
                if line.speaker != "User":
                    continue
                following = session.lines[i + 1] if i + 1 < len(session.lines) else None
                answer = following.text if following and following.speaker != "User" else None
                clock.now = _day(session.date) + timedelta(seconds=n)
                n += 1
                if line.query is None:
                    self.send(conversation, line.text, answer)
                elif opened:  # its own turn is its current-conversation probe
                    self.query(line.query, line.text, conversation, answer)
                else:
                    self.query(line.query, line.text, previous, None)
                    self.send(conversation, line.text, answer)
                opened = True
                asked += line.query is not None
                if limit is not None and asked >= limit:
                    return
            previous = conversation

    def query(self, query: Query, text: str, current: str | None, answer: str | None) -> None:
        """`query` asked in a new conversation, then in `current` (answered with `answer`)."""
        ask = f"ask-{query.id}"
        self.baseline(query, text, "new", None)
        self.ask(query, "new", self.send(ask, text, None))
        self.drop(ask)
        if current is not None:
            self.baseline(query, text, "current", current)
            self.ask(query, "current", self.send(current, text, answer))

    def drop(self, conversation: str) -> None:
        self.system.drop(PERSONA_SESSION, conversation)
        self.lines = [line for line in self.lines if line.conversation != conversation]

    def off_topic(self, probes: Iterable[OffTopic]) -> None:
        for probe in probes:
            conversation = f"offtopic-{probe.id}"
            context = self.send(conversation, probe.text, None)
            self.run.offtopic.append(recalls_anything(context))
            self.drop(conversation)


PERSONA_SESSION = "persona"


# -- figures -------------------------------------------------------------------------------


def _share(values: Iterable[bool]) -> float | None:
    kept = list(values)
    return sum(kept) / len(kept) if kept else None


@dataclass(frozen=True)
class Figures:
    """One persona's figures (or every persona's: `all`); None: nothing to measure."""

    persona: str
    queries: int
    word: dict[str, float | None]
    """By `<system>:<mode>`: the share of memory points found."""
    session: dict[str, float | None]
    """By `<system>:<mode>`: the share of evidence sessions found."""
    recalled: dict[str, float | None]
    """By `<system>:<mode>`: the share of probes whose recalled block is non-empty."""
    tokens: dict[str, float | None]
    """By `<system>:<mode>`: mean tokens of the recalled block."""
    offtopic: float | None
    """The share of off-topic probes that recalled anything (lines or items)."""
    offtopic_lines: float | None
    """The share of off-topic probes that recalled lines."""
    probes: int
    turns: int
    seconds: float
    errors: int


def figures(runs: Sequence[Run], name: str | None = None) -> Figures:
    """The runs' figures, pooled (every point and session counts once)."""
    probes = [p for run in runs for p in run.probes]
    keyed: dict[str, list[Probe]] = {}
    for probe in probes:
        keyed.setdefault(f"{probe.system}:{probe.mode}", []).append(probe)
    keys = [f"{s}:{m}" for s in SYSTEMS for m in MODES]

    def each(measure: Callable[[list[Probe]], float | None]) -> dict[str, float | None]:
        return {key: measure(keyed.get(key, [])) for key in keys}

    return Figures(
        persona=name or runs[0].persona,
        queries=len(keyed.get("ours:new", [])),
        word=each(lambda ps: _share(f for p in ps for f in p.points)),
        session=each(lambda ps: _share(f for p in ps for f in p.sessions)),
        recalled=each(lambda ps: _share(p.recalled_tokens > 0 for p in ps)),
        tokens=each(lambda ps: statistics.fmean(p.recalled_tokens for p in ps) if ps else None),
        offtopic=_share(any(o) for run in runs for o in run.offtopic),
        offtopic_lines=_share(o[0] for run in runs for o in run.offtopic),
        probes=sum(len(run.offtopic) for run in runs),
        turns=sum(run.turns for run in runs),
        seconds=round(sum(run.seconds for run in runs), 1),
        errors=sum(run.errors for run in runs),
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def table(rows: Sequence[Figures]) -> str:
    """Each cell: new conversation · current conversation."""

    def cells(values: dict[str, float | None], system: str, form: Callable[..., str]) -> str:
        return " · ".join(form(values[f"{system}:{mode}"]) for mode in MODES)

    def tok(value: float | None) -> str:
        return "n/a" if value is None else f"{value:,.0f}"

    out = [
        "| persona | queries | word: ours | word: bm25 | session: ours | session: bm25 "
        "| block non-empty | recalled tok: ours | bm25 | off-topic: anything · lines "
        "| turns, s, errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        out.append(
            f"| {row.persona} | {row.queries} | {cells(row.word, 'ours', _pct)} | "
            f"{cells(row.word, 'bm25', _pct)} | {cells(row.session, 'ours', _pct)} | "
            f"{cells(row.session, 'bm25', _pct)} | {cells(row.recalled, 'ours', _pct)} | "
            f"{cells(row.tokens, 'ours', tok)} | {cells(row.tokens, 'bm25', tok)} | "
            f"{_pct(row.offtopic)} · {_pct(row.offtopic_lines)} of {row.probes} | "
            f"{row.turns:,}, {row.seconds:.0f}, {row.errors} |"
        )
    return "\n".join(out)


# -- command line ---------------------------------------------------------------------------


def evaluate(
    directory: Path,
    workdir: Path,
    *,
    personas: Sequence[str] = (),
    limit: int | None = None,
    probes: Sequence[OffTopic] | None = None,
    budget: int = DEFAULT_RECALL_TOKENS,
    say: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True),
) -> list[Run]:
    """Every persona in `directory` (only `personas` when given), each on fresh storage
    (none when the folder is absent: skipped, and `say` says so)."""
    files = persona_files(directory, personas) if directory.is_dir() else []
    if not files:
        say(f"realmem: no persona files in {directory} (set {DATA_ENV}): skipped")
        return []
    offtopic = load_probes("dev") if probes is None else probes
    runs = []
    for path in files:
        persona = load_persona(path)
        model, clock = ReplayModel(), ReplayClock()
        system = build("ours", model, workdir, clock)
        replay = Replay(persona, system, model, budget)
        started, errors = time.perf_counter(), ErrorCount()
        logging.getLogger().addHandler(errors)
        try:
            replay.play(clock, limit)
            clock.now += timedelta(days=7)
            replay.off_topic(offtopic)
        finally:
            system.close()
            logging.getLogger().removeHandler(errors)
        replay.run.seconds = time.perf_counter() - started
        replay.run.errors = errors.count
        run = replay.run
        runs.append(run)
        say(f"realmem/{run.persona}: {run.turns} turns in {run.seconds:.0f} s, {run.errors} errors")
    return runs


def as_json(runs: Sequence[Run]) -> dict[str, Any]:
    rows = [figures([run]) for run in runs] + ([figures(runs, "all")] if runs else [])
    return {
        "figures": [asdict(row) for row in rows],
        "probes": [asdict(p) for run in runs for p in run.probes],
        "offtopic": {run.persona: run.offtopic for run in runs},
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m evals.realmem", description=__doc__)
    parser.add_argument("--persona", action="append", default=[], help="(repeatable)")
    parser.add_argument("--limit", type=int, help="queries per persona (a quick run)")
    parser.add_argument("--data", type=Path, help=f"the persona files (default: ${DATA_ENV})")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where realmem.json goes")
    args = parser.parse_args()
    directory = args.data or Path(os.environ.get(DATA_ENV) or DATA_DIR)
    with tempfile.TemporaryDirectory() as workdir:
        runs = evaluate(directory, Path(workdir), personas=args.persona, limit=args.limit)
    if not runs:
        return
    print("RealMem (dev half): evidence recall at each query, model-free; each cell")
    print("new conversation · current conversation:\n")
    rows = [figures([run]) for run in runs] + [figures(runs, "all")]
    print(table(rows))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "realmem.json"
    path.write_text(json.dumps(as_json(runs), indent=1, ensure_ascii=False) + "\n")
    print(f"\nresults in {path}")


if __name__ == "__main__":
    main()
