"""Recall in a session with a long archive, and what off-topic messages bring back.

One user's history of a split (`evals.threads`: its threads with an AI assistant and,
for dev, the two-person dialogues) is replayed in one session, in date order, each
session one conversation: the user's lines are user turns sent through the system's
public API, and a scripted chat model answers each with the assistant's next line, so
that the archive holds both sides as a real deployment's does. What `ours` stores is
dated by the session's date. Then:
- every question is asked in a new conversation (deleted after it), and later as a new
  turn of the last conversation; its evidence is looked for in what the model was sent
  with the strict rule of `evals.dialogue`, per question type and per side that said it
  (user or assistant);
- every off-topic probe is sent in a new conversation (deleted after it): a probe
  recalls when its context holds lines of other conversations (`ours`: a `memory`
  event of stage `recall`; `bm25_history`: the lines its search added);
- recalled tokens: the block of recalled lines the model was sent (a CJK character is
  about one token, `evals.tokens`).

Run: `python -m evals.long_archive [--split dev|heldout] [--system ours --system …]`;
results in `bench/results/long_archive.json`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from pydantic import Field

from agent.offline import OfflineChatModel
from agent.offline.local import ModelCall
from agent.offline.model import STRUCTURED_OUTPUT_KWARG
from evals.contract import Recalled, System
from evals.dialogue import DIALOGUE_DIR, Context, Dialogue, Question
from evals.report import QUESTION_TYPES, SPLITS
from evals.runner import Tokens, Turns
from evals.systems import build
from evals.threads import (
    ARCHIVE_DIR,
    OFFTOPIC_DIR,
    OffTopic,
    history,
    load_history_files,
    load_probes,
)

SESSION = "archive"
SYSTEMS = ("ours", "bm25_history")
ACKNOWLEDGED = "OK."
"""The answer to a turn the script has no line for (a question, a probe)."""
ASKED_AFTER = timedelta(days=7)
"""Questions and probes come this long after the last session."""
RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


class ReplayModel(OfflineChatModel):
    """The offline model (compaction, extraction), whose chat answers are
    scripted: the assistant's line set for the turn, else `ACKNOWLEDGED`."""

    script: deque[str] = Field(default_factory=deque, exclude=True, repr=False)
    """Shared with every copy of the model (a recorded copy answers from it too)."""

    def say(self, answer: str | None) -> None:
        """The next chat request is answered with `answer` (None: `ACKNOWLEDGED`)."""
        self.script.clear()
        if answer is not None:
            self.script.append(answer)

    def respond(self, call: ModelCall) -> AIMessage:
        if call.options.get(STRUCTURED_OUTPUT_KWARG):
            return super().respond(call)
        return AIMessage(content=self.script.popleft() if self.script else ACKNOWLEDGED)


@dataclass
class ReplayClock:
    """The time the replay is at (the date of the session being played)."""

    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class Answered:
    """One question, asked in a new conversation or as a turn of the last one."""

    file: str
    question: str
    type: str
    mode: str
    found: tuple[bool, ...]
    """Per evidence line: in what the model was sent, by the strict rule."""
    sides: tuple[str, ...]
    """Per evidence line: `user` or `assistant`, the side that said it."""
    recalled: Recalled

    @property
    def recall(self) -> float:
        return sum(self.found) / len(self.found)


@dataclass(frozen=True)
class Probed:
    """One off-topic probe and what its context recalled."""

    id: str
    language: str
    near: bool
    recalled: Recalled


@dataclass
class Run:
    """What one system did on one split's history."""

    split: str
    system: str
    lines: int
    turns: int
    replay_seconds: float = 0.0
    seconds: float = 0.0
    answered: list[Answered] = field(default_factory=list)
    probed: list[Probed] = field(default_factory=list)


def _day(iso: str) -> datetime:
    return datetime.combine(date.fromisoformat(iso), datetime.min.time(), UTC)


def play(
    system: System,
    model: ReplayModel,
    clock: ReplayClock,
    files: Sequence[Dialogue],
    probes: Sequence[OffTopic],
    split: str = "dev",
) -> Run:
    """Replay `files` into one session of `system`, then ask every question (new
    conversation, then off-topic probes, then the last conversation)."""
    played = history(files)
    lines = sum(len(s.messages) for f in files for s in f.sessions)
    run = Run(split, system.name, lines, len(played))
    player = Turns(system, Tokens())
    started = time.perf_counter()
    for n, exchange in enumerate(played):
        # seconds apart within a day, in the order played: lines keep their order
        clock.now = _day(exchange.date) + timedelta(seconds=n)
        model.say(exchange.answer)
        player.play(SESSION, exchange.conversation, exchange.user)
    run.replay_seconds = time.perf_counter() - started
    clock.now = max(_day(e.date) for e in played) + ASKED_AFTER
    model.say(None)
    for file in files:
        for question in file.questions:
            conversation = f"ask-{file.name}-{question.id}"
            run.answered.append(_ask(player, file, question, conversation, "new"))
            system.drop(SESSION, conversation)
    for probe in probes:
        _, recalled = player.recalling(SESSION, f"offtopic-{probe.id}", probe.text)
        run.probed.append(Probed(probe.id, probe.language, probe.near, recalled))
        system.drop(SESSION, f"offtopic-{probe.id}")
    for file in files:
        for question in file.questions:
            run.answered.append(_ask(player, file, question, played[-1].conversation, "last"))
    run.seconds = time.perf_counter() - started
    return run


def _ask(
    player: Turns, file: Dialogue, question: Question, conversation: str, mode: str
) -> Answered:
    seen, recalled = player.recalling(SESSION, conversation, question.question)
    context = Context(seen)
    messages = file.messages
    return Answered(
        file.name,
        question.id,
        question.type,
        mode,
        tuple(context.has(messages[e].text) for e in question.evidence),
        tuple(
            "user" if messages[e].speaker == file.speakers[0] else "assistant"
            for e in question.evidence
        ),
        recalled,
    )


# -- figures -------------------------------------------------------------------------------


def _mean(values: Iterable[float]) -> float | None:
    kept = list(values)
    return statistics.fmean(kept) if kept else None


@dataclass(frozen=True)
class Figures:
    """One system's figures on one split; None: nothing to measure."""

    split: str
    system: str
    lines: int
    turns: int
    questions: int
    recall: dict[str, float | None]
    """By `<mode>:<kind>`: mode `new` | `last`; kind a question type, `all`, or the
    side that said the evidence (`user`, `assistant`: the share of those lines found)."""
    recalled_tokens: dict[str, float | None]
    """By mode: mean tokens of the recalled block per question."""
    probes: int
    near_probes: int
    offtopic: dict[str, float | None]
    """`share`, `lines`, `tokens` (means over probes that recalled anything), and the
    same for near probes (`near_share`, `near_lines`, `near_tokens`)."""
    replay_seconds: float
    seconds: float


def figures(run: Run) -> Figures:
    """The run's figures."""
    recall: dict[str, float | None] = {}
    tokens: dict[str, float | None] = {}
    for mode in ("new", "last"):
        asked = [a for a in run.answered if a.mode == mode]
        for kind in (*QUESTION_TYPES, "all"):
            recall[f"{mode}:{kind}"] = _mean(a.recall for a in asked if kind in (a.type, "all"))
        for side in ("user", "assistant"):
            found = [f for a in asked for f, s in zip(a.found, a.sides, strict=True) if s == side]
            recall[f"{mode}:{side}"] = _mean(found)
        tokens[mode] = _mean(a.recalled.tokens for a in asked)
    offtopic: dict[str, float | None] = {}
    for prefix, probes in (("", run.probed), ("near_", [p for p in run.probed if p.near])):
        hits = [p.recalled for p in probes if p.recalled.lines]
        offtopic[f"{prefix}share"] = _mean(bool(p.recalled.lines) for p in probes)
        offtopic[f"{prefix}lines"] = _mean(r.lines for r in hits)
        offtopic[f"{prefix}tokens"] = _mean(r.tokens for r in hits)
    return Figures(
        split=run.split,
        system=run.system,
        lines=run.lines,
        turns=run.turns,
        questions=sum(a.mode == "new" for a in run.answered),
        recall=recall,
        recalled_tokens=tokens,
        probes=len(run.probed),
        near_probes=sum(p.near for p in run.probed),
        offtopic=offtopic,
        replay_seconds=round(run.replay_seconds, 1),
        seconds=round(run.seconds, 1),
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def table(rows: Sequence[Figures]) -> str:
    """Evidence recall (each cell: new conversation · last conversation), then
    off-topic probes."""
    kinds = (*QUESTION_TYPES, "all", "user", "assistant")
    titles = [k.replace("_", "-") for k in kinds[:4]] + ["user-side", "assistant-side"]
    lines = [
        "| split | system | archive lines | questions | "
        + " | ".join(titles)
        + " | recalled tok/question |",
        "|---|---|---|---|" + "---|" * (len(kinds) + 1),
    ]
    for row in rows:
        cells = [
            f"{_pct(row.recall[f'new:{kind}'])} · {_pct(row.recall[f'last:{kind}'])}"
            for kind in kinds
        ]
        spent = f"{_num(row.recalled_tokens['new'])} · {_num(row.recalled_tokens['last'])}"
        lines.append(
            f"| {row.split} | {row.system} | {row.lines:,} | {row.questions} | "
            + " | ".join(cells)
            + f" | {spent} |"
        )
    lines += [
        "",
        "| split | system | probes | recalled anything | lines · tok when it did "
        "| near probes | near: recalled | near: lines · tok | replay (turns, s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        o = row.offtopic
        lines.append(
            f"| {row.split} | {row.system} | {row.probes} | {_pct(o['share'])} | "
            f"{_num(o['lines'])} · {_num(o['tokens'])} | {row.near_probes} | "
            f"{_pct(o['near_share'])} | {_num(o['near_lines'])} · {_num(o['near_tokens'])} | "
            f"{row.turns:,} in {row.replay_seconds:.0f} s |"
        )
    return "\n".join(lines)


def as_json(runs: Sequence[Run]) -> dict[str, Any]:
    """Every run's figures, questions and probes."""
    return {
        "figures": [asdict(figures(run)) for run in runs],
        "runs": [
            {
                "split": run.split,
                "system": run.system,
                "answered": [{**asdict(a), "recall": a.recall} for a in run.answered],
                "probed": [asdict(p) for p in run.probed],
            }
            for run in runs
        ],
    }


# -- command line ---------------------------------------------------------------------------


def evaluate(
    split: str,
    systems: Sequence[str],
    workdir: Path,
    *,
    archives: Path = ARCHIVE_DIR,
    dialogues: Path = DIALOGUE_DIR,
    offtopic: Path = OFFTOPIC_DIR,
    say: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True),
) -> list[Run]:
    """Every system on the split's history, each on fresh storage (none when the split
    has no threads: it is skipped, and `say` says so)."""
    files = load_history_files(split, archives, dialogues)
    if not files:
        say(f"{split}: no threads in {archives / split}: skipped")
        return []
    probes = load_probes(split, offtopic)
    if not probes:
        say(f"{split}: no off-topic probes in {offtopic / f'{split}.jsonl'}: not measured")
    runs = []
    for name in systems:
        model, clock = ReplayModel(), ReplayClock()
        system = build(name, model, workdir, clock)
        questions = sum(len(f.questions) for f in files)
        say(f"{split}/{name}: {len(files)} files, {questions} questions, {len(probes)} probes")
        try:
            runs.append(play(system, model, clock, files, probes, split))
        finally:
            system.close()
        say(f"{split}/{name}: replayed in {runs[-1].replay_seconds:.0f} s")
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m evals.long_archive", description=__doc__)
    parser.add_argument("--split", action="append", choices=SPLITS, help="(repeatable)")
    parser.add_argument("--system", action="append", choices=SYSTEMS, help="(repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where long_archive.json goes")
    args = parser.parse_args()
    started = time.perf_counter()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as workdir:
        for split in args.split or list(SPLITS):
            runs += evaluate(split, args.system or list(SYSTEMS), Path(workdir))
    print("Long archive: one user's history replayed in one session (both sides archived);")
    print("evidence recall by the strict rule, each cell new conversation · last conversation;")
    print("off-topic probes in a new conversation:\n")
    print(table([figures(run) for run in runs]))
    document = as_json(runs) | {"seconds": round(time.perf_counter() - started, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "long_archive.json"
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"\n{document['seconds']:.0f} s; results in {path}")


if __name__ == "__main__":
    main()
