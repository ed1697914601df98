"""The long-term write gate's structural checks on the labelled profile corpora
(`evals/profile/`).

No code judges meaning any more, so what is scored is what code still decides: each
utterance is asked to be remembered explicitly ("Remember that …"), the explicit
extractor runs and the gate plans the write against an empty profile, exactly as a
turn would. Reported for the dev set and the held-out set: secret leaks (a
secret-bearing utterance from which anything would be stored), keep-labelled
utterances the gate refuses when asked (structure: pasted or quoted text), and the skip filter
(`memory.analysis`: which turns reach the extractor at all) judged by what it must never
skip: the share of keep- or revoke-labelled utterances it lets through (≥ 99.5%), and
the share of the rest it sends anyway (on the corpus, the benchmark's 200 turns, the
scenarios and the dialogues). `python -m evals.profile_gate [--failures]` prints it.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memory.analysis import read
from memory.longterm.extraction import EXPLICIT_EXTRACTOR
from memory.longterm.gate import plan_write
from memory.longterm.operations import OwedTurn

CORPORA = Path(__file__).resolve().parent / "profile"
CORPUS_NAMES = ("dev", "heldout")
BENCH_TURNS = 200


@dataclass
class ProfileScore:
    """The figures of one corpus, and the utterances it got wrong."""

    name: str
    total: int = 0
    true_pos: int = 0
    false_pos: int = 0
    false_neg: int = 0
    kind_agree: int = 0
    secrets: int = 0
    secret_leaks: int = 0
    cue_fired: int = 0
    wanted: int = 0
    wanted_reached: int = 0
    idle: int = 0
    idle_cue_fired: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        kept = self.true_pos + self.false_pos
        return self.true_pos / kept if kept else 1.0

    @property
    def recall(self) -> float:
        wanted = self.true_pos + self.false_neg
        return self.true_pos / wanted if wanted else 1.0

    @property
    def model_call_share(self) -> float:
        return self.cue_fired / self.total if self.total else 0.0

    @property
    def wanted_share(self) -> float:
        """Keep- or revoke-labelled utterances that reach the extractor."""
        return self.wanted_reached / self.wanted if self.wanted else 1.0

    @property
    def idle_call_share(self) -> float:
        """On the utterances with nothing to keep or revoke (most everyday turns)."""
        return self.idle_cue_fired / self.idle if self.idle else 0.0


def stored_from(text: str) -> list[tuple[str, str]]:
    """(kind, text) of what one turn's `text` would add to an empty profile."""
    now = datetime.now(UTC)
    turn = OwedTurn("m", "eval", f"Remember that {text}", "", now)
    plan = plan_write([], EXPLICIT_EXTRACTOR([turn], []), [turn], source="explicit")
    return [(item.kind, item.text) for item in plan.added]


def reaches(text: str) -> bool:
    """Whether a turn saying `text` is owed an extraction (the skip filter)."""
    return read(text).says_something


def load(name: str) -> list[dict[str, object]]:
    lines = (CORPORA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def score(name: str) -> ProfileScore:
    result = ProfileScore(name)
    for row in load(name):
        text = str(row["text"])
        stored = stored_from(text)
        result.total += 1
        cue = reaches(text)
        result.cue_fired += cue
        if row["keep"] or row["revoke"]:
            result.wanted += 1
            result.wanted_reached += cue
            if not cue:
                result.failures.append(f"skipped  {text!r}")
        else:
            result.idle += 1
            result.idle_cue_fired += cue
        if row["secret"]:
            result.secrets += 1
            result.secret_leaks += bool(stored)
        if row["keep"] and stored:
            result.true_pos += 1
            result.kind_agree += stored[0][0] == row["kind"]
        elif row["keep"]:
            result.false_neg += 1
            result.failures.append(f"missed   {text!r}")
        elif stored:
            result.false_pos += 1
            what = "LEAKED  " if row["secret"] else "stored  "
            result.failures.append(f"{what} {text!r} -> {stored}")
    return result


def bench_cue_share() -> float:
    """Share of the benchmark's user turns on which the extraction model would be called."""
    from bench.agent_bench import user_message

    return sum(reaches(user_message(turn)) for turn in range(1, BENCH_TURNS + 1)) / BENCH_TURNS


def scenario_cue_share() -> tuple[int, float] | None:
    """(user turns, share on which the extraction model would be called) over the
    evaluation scenarios: everyday conversation. None if the scenarios cannot be read."""
    try:
        from evals.scenario import Probe, Say, load_all
    except ImportError:
        return None
    texts = [
        step.say if isinstance(step, Say) else step.probe
        for scenario in load_all()
        for step in scenario.expanded()
        if isinstance(step, Say | Probe)
    ]
    return len(texts), sum(map(reaches, texts)) / len(texts) if texts else 0.0


def dialogue_cue_share() -> tuple[int, float] | None:
    """The same over the messages of the dev dialogues (two people chatting)."""
    try:
        from evals.dialogue import load_split
    except ImportError:
        return None
    texts = [m.text for d in load_split("dev") for session in d.sessions for m in session.messages]
    return len(texts), sum(map(reaches, texts)) / len(texts) if texts else 0.0


def section(*, failures: bool = False) -> str:
    """The markdown section `make eval` prints."""
    scores = [score(name) for name in CORPUS_NAMES]
    lines = [
        '## Profile write gate (labelled corpora, each said as "Remember that …")',
        "",
        "| corpus | utterances | keep-labelled kept | secret leaks | reach the extractor "
        "(keep or revoke / nothing to keep) |",
        "|---|---|---|---|---|",
    ]
    for s in scores:
        lines.append(
            f"| {s.name} | {s.total} | {s.recall:.1%} | {s.secret_leaks}/{s.secrets} | "
            f"{s.wanted_share:.1%} / {s.idle_call_share:.1%} |"
        )
    lines.append(
        f"\nExtraction owed on {bench_cue_share():.0%} of the {BENCH_TURNS} benchmark turns."
    )
    everyday = scenario_cue_share()
    if everyday is not None:
        lines.append(
            f"Extraction owed on {everyday[1]:.1%} of the evaluation scenarios' {everyday[0]} "
            "user turns."
        )
    chatty = dialogue_cue_share()
    if chatty is not None:
        lines.append(
            f"Extraction owed on {chatty[1]:.1%} of the {chatty[0]} dev dialogue messages."
        )
    if failures:
        for s in scores:
            lines.append(f"\n{s.name} failures ({len(s.failures)}):")
            lines.extend(f"- {line}" for line in s.failures)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m evals.profile_gate", description=__doc__)
    parser.add_argument("--failures", action="store_true", help="list what each corpus got wrong")
    print(section(failures=parser.parse_args().failures))


if __name__ == "__main__":
    main()
