"""The long-archive harness (evals/long_archive.py) on a tiny archive of two threads,
with systems whose figures can be worked out by hand; and the dev set follows its rules."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from evals.contract import Metric, Recalled
from evals.dialogue import Context, load_split
from evals.long_archive import (
    ReplayClock,
    ReplayModel,
    Run,
    evaluate,
    figures,
    play,
    table,
)
from evals.oracle import GateOutcome
from evals.recording import CallLog
from evals.systems import build
from evals.threads import (
    OPENERS,
    Thread,
    exchanges,
    history,
    load_history_files,
    load_probes,
    load_threads,
)
from evals.tokens import count_text


def session(sid: str, date: str, lines: list[str], user: str, assistant: str) -> dict[str, Any]:
    speakers = [user, assistant]
    messages = [
        {"id": f"{sid}-{n}", "speaker": speakers[(n - 1) % 2], "text": text}
        for n, text in enumerate(lines, start=1)
    ]
    return {"id": sid, "date": date, "messages": messages}


ALPHA: dict[str, Any] = {
    "name": "alpha",
    "title": "Bread",
    "language": "en",
    "kind": "casual",
    "speakers": ["Wen", "Assistant"],
    "sessions": [
        session(
            "s1",
            "2025-01-01",
            [
                "My sourdough starter Gloria lives on top of the fridge",
                "Feed Gloria equal weights of flour and water twice daily",
                "Thanks a lot",
                "You are welcome",
            ],
            "Wen",
            "Assistant",
        ),
        session(
            "s2",
            "2025-01-10",
            ["The loaf spread flat like a frisbee", "Lower the hydration", "Okay", "Good luck"],
            "Wen",
            "Assistant",
        ),
        session(
            "s3",
            "2025-01-28",
            [
                "Any tip for the crust",
                "Bake the boule inside a preheated cast iron pot with the lid on",
                "Great",
                "Enjoy",
            ],
            "Wen",
            "Assistant",
        ),
    ],
    "questions": [
        {
            "id": "q1",
            "type": "single",
            "question": "where do I keep my yeast culture?",
            "answer": "on top of the fridge",
            "evidence": ["s1-1"],
        },
        {
            "id": "q2",
            "type": "temporal",
            "question": "what did you say about baking the boule?",
            "answer": "a preheated cast iron pot",
            "evidence": ["s3-2"],
        },
    ],
}
BETA: dict[str, Any] = {
    "name": "beta",
    "title": "豆豆",
    "language": "zh",
    "kind": "casual",
    "speakers": ["Wen", "助手"],
    "sessions": [
        session(
            "s1",
            "2025-01-05",
            ["豆豆最近走路有点瘸", "柯基后腿瘸常见原因是髋关节发育不良", "好的", "不客气"],
            "Wen",
            "助手",
        ),
        session(
            "s2",
            "2025-01-15",
            ["谢谢你", "不用谢", "再见", "再见"],
            "Wen",
            "助手",
        ),
        session(
            "s3",
            "2025-01-25",
            ["王医生说理想体重是十一公斤", "每周减一百到两百克最安全", "明白", "加油"],
            "Wen",
            "助手",
        ),
    ],
    "questions": [
        {
            "id": "q1",
            "type": "multi_hop",
            "question": "那只狗后来怎么样？",
            "answer": "髋关节，目标十一公斤",
            "evidence": ["s1-2", "s3-1"],
        },
        {
            "id": "q2",
            "type": "single",
            "question": "减肥的速度多少合适？",
            "answer": "每周一百到两百克",
            "evidence": ["s3-2"],
        },
    ],
}
PROBES = [
    {"id": "o1", "language": "en", "kind": "coding", "text": "reverse a linked list in Python"},
    {"id": "o2", "language": "zh", "kind": "fact", "text": "澳大利亚的首都是哪里？"},
    {"id": "o3", "language": "en", "kind": "howto", "text": "how do dogs age?", "near": True},
]
REPLAYED = [m["text"] for f in (ALPHA, BETA) for s in f["sessions"] for m in s["messages"]]


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    archives, offtopic, dialogues = tmp_path / "a", tmp_path / "o", tmp_path / "d"
    (archives / "dev").mkdir(parents=True)
    offtopic.mkdir()
    dialogues.mkdir()
    for thread in (ALPHA, BETA):
        path = archives / "dev" / f"{thread['name']}.json"
        path.write_text(json.dumps(thread, ensure_ascii=False), encoding="utf-8")
    (offtopic / "dev.jsonl").write_text(
        "\n".join(json.dumps(p, ensure_ascii=False) for p in PROBES), encoding="utf-8"
    )
    return {"archives": archives, "offtopic": offtopic, "dialogues": dialogues}


class Scripted:
    """A system that remembers every line the model answered or was told: it shows
    either all of the session's other conversations (`everything`) or only its own
    conversation (`own`)."""

    by_construction: frozenset[Metric] = frozenset()

    def __init__(self, name: str, model: ReplayModel) -> None:
        self.name = name
        self.model = model
        self.log = CallLog()
        self.lines: list[tuple[str, str]] = []

    def recalling(self, session: str, conversation: str, text: str) -> Recalled:
        others = [line for where, line in self.lines if where != conversation]
        own = [line for where, line in self.lines if where == conversation]
        shown = others if self.name == "everything" else []
        context: list[BaseMessage] = [SystemMessage("\n".join(shown + own)), HumanMessage(text)]
        self.log.chats.append(context)
        answer = self.model.invoke(context).text
        self.lines += [(conversation, text), (conversation, answer)]
        return Recalled(len(shown), count_text("\n".join(shown)) if shown else 0)

    def turn(self, session: str, conversation: str, text: str) -> str:
        self.recalling(session, conversation, text)
        return self.lines[-1][1]

    def drop(self, session: str, conversation: str) -> None:
        self.lines = [(where, line) for where, line in self.lines if where != conversation]

    def forget(self, session: str, match: str) -> int:
        return 0

    def memories(self, session: str) -> list[str] | None:
        return None

    def gate(self, sessions: Iterable[str]) -> GateOutcome | None:
        return None

    def close(self) -> None:
        pass


def scripted_run(name: str, dirs: dict[str, Path]) -> Run:
    files = load_history_files("dev", dirs["archives"], dirs["dialogues"])
    model = ReplayModel()
    return play(
        Scripted(name, model), model, ReplayClock(), files, load_probes("dev", dirs["offtopic"])
    )


def test_the_history_interleaves_threads_by_date_and_keeps_both_sides(
    dirs: dict[str, Path],
) -> None:
    files = load_history_files("dev", dirs["archives"], dirs["dialogues"])
    played = history(files)
    order = list(dict.fromkeys(turn.conversation for turn in played))
    assert order == ["alpha-s1", "beta-s1", "alpha-s2", "beta-s2", "beta-s3", "alpha-s3"]
    said = [text for turn in played for text in (turn.user, turn.answer) if text is not None]
    assert sorted(said) == sorted(REPLAYED)


def test_a_dialogue_session_opened_by_the_other_speaker_answers_a_greeting() -> None:
    for dialogue in load_split("dev"):
        for part in dialogue.sessions:
            turns = exchanges(dialogue, part)
            said = [t for turn in turns for t in (turn.user, turn.answer) if t is not None]
            opened = part.messages[0].speaker != dialogue.speakers[0]
            greeting = [OPENERS[dialogue.language]] if opened else []
            assert said == greeting + [m.text for m in part.messages]


def test_a_system_that_recalls_everything_finds_all_evidence_and_every_probe_recalls(
    dirs: dict[str, Path],
) -> None:
    row = figures(scripted_run("everything", dirs))
    assert (row.lines, row.turns, row.questions, row.probes, row.near_probes) == (24, 12, 4, 3, 1)
    assert set(row.recall.values()) == {1.0}
    # every probe, in a new conversation once the question conversations are deleted,
    # sees the 24 replayed lines
    assert row.offtopic == {
        "share": 1.0,
        "lines": 24.0,
        "tokens": float(count_text("\n".join(REPLAYED))),
        "near_share": 1.0,
        "near_lines": 24.0,
        "near_tokens": float(count_text("\n".join(REPLAYED))),
    }


def test_a_system_that_sees_only_its_conversation_finds_the_last_sessions_evidence_there(
    dirs: dict[str, Path],
) -> None:
    row = figures(scripted_run("own", dirs))
    new = {k: v for k, v in row.recall.items() if k.startswith("new:")}
    assert set(new.values()) == {0.0}
    # the last conversation is alpha's third session (the latest date, though alpha's
    # file comes first): it holds alpha s3-2, said by the assistant, which answers q2
    assert row.recall["last:all"] == pytest.approx(1 / 4)
    assert row.recall["last:temporal"] == 1.0
    assert row.recall["last:single"] == row.recall["last:multi_hop"] == 0.0
    assert row.recall["last:user"] == 0.0
    assert row.recall["last:assistant"] == pytest.approx(1 / 3)
    assert row.offtopic["share"] == 0.0 and row.offtopic["lines"] is None
    assert row.recalled_tokens == {"new": 0.0, "last": 0.0}
    lines = table([row]).splitlines()
    assert lines[2].startswith("| dev | own | 24 | 4 | 0% · 0% | 0% · 0% | 0% · 100% | 0% · 25% |")


def test_ours_and_bm25_run_end_to_end_and_ours_archives_lines_on_their_dates(
    dirs: dict[str, Path], tmp_path: Path
) -> None:
    files = load_history_files("dev", dirs["archives"], dirs["dialogues"])
    probes = load_probes("dev", dirs["offtopic"])
    model, clock = ReplayModel(), ReplayClock()
    ours = build("ours", model, tmp_path, clock)
    try:
        run = play(ours, model, clock, files, probes)
        hits = ours.agent.search_conversations("hydrolysed frisbee", session_id="archive")  # type: ignore[attr-defined]
        assert [(h["text"], h["role"], h["createdAt"][:10]) for h in hits] == [
            ("The loaf spread flat like a frisbee", "user", "2025-01-10")
        ]
        answers = ours.agent.search_conversations("hydration", session_id="archive")  # type: ignore[attr-defined]
        assert [(h["role"], h["createdAt"][:10]) for h in answers] == [("assistant", "2025-01-10")]
    finally:
        ours.close()
    assert len(run.answered) == 8 and len(run.probed) == 3
    assert all(len(a.found) == len(a.sides) > 0 for a in run.answered)
    [bm25] = evaluate(
        "dev",
        ["bm25_history"],
        tmp_path,
        archives=dirs["archives"],
        dialogues=dirs["dialogues"],
        offtopic=dirs["offtopic"],
        say=lambda _: None,
    )
    asked = {(a.file, a.question, a.mode): a for a in bm25.answered}
    # the question repeats a rare word of its evidence ("boule"): BM25 ranks it
    assert asked[("alpha", "q2", "new")].found == (True,)
    # a probe sharing no word with the archive recalls nothing
    assert {p.id: p.recalled.lines for p in bm25.probed}["o1"] == 0


def test_a_split_without_threads_is_skipped_and_said(dirs: dict[str, Path], tmp_path: Path) -> None:
    said: list[str] = []
    runs = evaluate(
        "heldout", ["bm25_history"], tmp_path, archives=dirs["archives"], say=said.append
    )
    assert runs == []
    assert said and "skipped" in said[0]


def test_the_dev_threads_follow_the_format() -> None:
    threads = load_threads("dev")
    lines = [m for t in threads for s in t.sessions for m in s.messages]
    assert len(lines) >= 2_000
    chinese = sum(len(s.messages) for t in threads if t.language == "zh" for s in t.sessions)
    assert 0.25 <= chinese / len(lines) <= 0.4
    questions = [(t, q) for t in threads for q in t.questions]
    assert len(questions) >= 80
    assert sum(q.type == "temporal" for _, q in questions) >= 0.2 * len(questions)
    sides = [t.messages[e].speaker == t.speakers[1] for t, q in questions for e in q.evidence]
    assert 0.35 <= sum(sides) / len(sides) <= 0.6
    dates = sorted(s.date for t in threads for s in t.sessions)
    assert dates[0] >= "2025-01-01" and dates[-1] <= "2026-12-31"
    for thread, question in questions:
        asked = Context(question.question)
        for evidence in question.evidence:
            text = thread.messages[evidence].text
            assert Context(text).has(text) and not asked.has(text), (thread.name, question.id)


def test_the_dev_probes_are_general_and_mixed() -> None:
    probes = load_probes("dev")
    assert len(probes) >= 150 and len({p.id for p in probes}) == len(probes)
    assert 0.25 <= sum(p.language == "zh" for p in probes) / len(probes) <= 0.4
    assert 0.2 <= sum(p.near for p in probes) / len(probes) <= 0.4
    assert {p.kind for p in probes} == {
        "coding",
        "fact",
        "conversion",
        "howto",
        "chitchat",
        "writing",
    }


def test_a_thread_must_alternate_starting_with_the_user() -> None:
    broken = json.loads(json.dumps(ALPHA))
    broken["sessions"][0]["messages"][1]["speaker"] = "Wen"
    with pytest.raises(ValueError, match="alternate"):
        Thread.model_validate(broken)
