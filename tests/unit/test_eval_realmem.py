"""The RealMem harness (evals/realmem.py) on a tiny persona file in the dataset's shape:
its rules of evidence, its BM25 baseline, and a whole replay through the agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from evals.realmem import evaluate, figures, table
from evals.realmem_data import Query, load_persona
from evals.realmem_probes import (
    Said,
    bm25_context,
    judge,
    recalls_anything,
    said,
)
from evals.threads import OffTopic
from memory.context import LONG_TERM_BLOCK_ID, RECALL_BLOCK_ID


def turn(speaker: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "content": content, "is_query": False, **extra}


PICKLE = "My rescue greyhound Pickle eats poached salmon every Tuesday evening."
POINT = "【Pets】 User's greyhound Pickle eats poached salmon every Tuesday evening."
PERSONA: dict[str, Any] = {
    "_metadata": {"person_name": "Tess_Test", "total_sessions": 3, "total_tokens": 0},
    "dialogues": [
        {
            "session_identifier": "Pets:S1",
            "session_uuid": "aaaa0001",
            "current_time": "2025-01-02 (Thursday)",
            "dialogue_turns": [
                turn("User", PICKLE),
                turn(
                    "Assistant", "Salmon once a week is a fine treat for a greyhound like Pickle."
                ),
            ],
        },
        {
            "session_identifier": "Tax:S1",
            "session_uuid": "bbbb0002",
            "current_time": "2025-01-03 (Friday)",
            "dialogue_turns": [
                turn("User", "Which receipts should I keep for my quarterly tax filing?"),
                turn("Assistant", "Keep invoices, bank statements and mileage logs for a year."),
                turn(
                    "User",
                    "What should my greyhound eat on Tuesday?",
                    is_query=True,
                    query_id="q2",
                    category_name="single",
                ),
                turn(
                    "Assistant",
                    "Poached salmon, as usual.",
                    memory_used=[{"session_uuid": "aaaa0001", "content": POINT}],
                    memory_session_uuids=["aaaa0001"],
                ),
            ],
        },
        {
            "session_identifier": "Pets:S2",
            "session_uuid": "cccc0003",
            "current_time": "2025-01-05 (Sunday)",
            "dialogue_turns": [
                turn(
                    "User",
                    "Remind me what Pickle the greyhound eats every Tuesday evening?",
                    is_query=True,
                    query_id="q1",
                    category_name="single",
                ),
                turn(
                    "Assistant",
                    "Poached salmon.",
                    memory_used=[{"session_uuid": "aaaa0001", "content": POINT}],
                    memory_session_uuids=["aaaa0001"],
                ),
            ],
        },
    ],
}


def write(tmp_path: Path) -> Path:
    folder = tmp_path / "realmem"
    folder.mkdir()
    (folder / "Tess_Test_dialogues_256k.json").write_text(json.dumps(PERSONA))
    return folder


def test_a_persona_reads_with_its_queries_evidence_and_labels_left_out(tmp_path: Path) -> None:
    persona = load_persona(write(tmp_path) / "Tess_Test_dialogues_256k.json")
    assert [s.uuid for s in persona.sessions] == ["aaaa0001", "bbbb0002", "cccc0003"]
    query = persona.sessions[2].lines[0].query
    assert query is not None and query.id == "q1" and query.sessions == ("aaaa0001",)
    assert query.points == ("User's greyhound Pickle eats poached salmon every Tuesday evening.",)
    assert persona.sessions[0].lines[0].query is None


def test_a_point_needs_most_of_its_content_words_and_a_session_one_of_its_sentences() -> None:
    query = Query("q", "single", ("greyhound Pickle eats poached salmon Tuesday",), ("s1",))
    sentence = " my rescue greyhound pickle eats poached salmon every tuesday evening "
    sentences: dict[str, tuple[str, ...]] = {"s1": (sentence,)}
    assert judge(
        'user: "My rescue greyhound Pickle eats poached salmon every Tuesday evening."',
        query,
        sentences,
    ) == ((True,), (True,))
    # four of six content words: 67%, found; the session's sentence is not there
    assert judge("Pickle the greyhound eats salmon", query, sentences) == ((True,), (False,))
    # three of six: 50%, not found
    assert judge("a greyhound eats salmon", query, sentences) == ((False,), (False,))


def test_bm25_shows_the_best_earlier_lines_within_the_budget_and_the_conversation_tail() -> None:
    lines = [said("c1", "user", PICKLE), said("c1", "assistant", "Fine.")]
    lines += [said("c2", "user", f"Tax receipts, question {n}.") for n in range(12)]
    text, tokens = bm25_context(lines, "what does Pickle eat", None, 2_000)
    assert text == f"user: {PICKLE}" and tokens == lines[0].tokens
    assert bm25_context(lines, "what does Pickle eat", None, lines[0].tokens - 1) == ("", 0)
    # in the current conversation its last 8 lines are shown, and not counted as recalled
    text, tokens = bm25_context(lines, "what does Pickle eat", "c2", 2_000)
    assert text.splitlines() == [f"user: {PICKLE}"] + [
        f"user: Tax receipts, question {n}." for n in range(4, 12)
    ]
    assert tokens == lines[0].tokens
    assert isinstance(lines[0], Said)


def test_off_topic_counts_recalled_lines_and_items_but_not_always_on_ones() -> None:
    always = SystemMessage(
        content="Items:\n- [boundary] no calls\n- [style] short", id=LONG_TERM_BLOCK_ID
    )
    fact = SystemMessage(content="Items:\n- [preference] likes tea", id=LONG_TERM_BLOCK_ID)
    lines = SystemMessage(content="Earlier:\n…", id=RECALL_BLOCK_ID)
    asked = HumanMessage(content="reverse a list")
    assert recalls_anything([always, asked]) == (False, False)
    assert recalls_anything([fact, asked]) == (False, True)
    assert recalls_anything([always, lines, asked]) == (True, False)


def test_a_replay_probes_each_query_two_ways_beside_bm25(tmp_path: Path) -> None:
    probes = [OffTopic(id="o1", language="en", kind="coding", text="reverse a linked list")]
    runs = evaluate(write(tmp_path), tmp_path, probes=probes, say=lambda _: None)
    [run] = runs
    # every user line played once; each query once more in a new conversation, and the
    # session-opening one (q1) once more as a turn of the previous conversation
    assert run.turns == 4 + 2 + 1 + 1
    keys = sorted((p.query, p.system, p.mode) for p in run.probes)
    assert keys == sorted(
        (q, s, m) for q in ("q1", "q2") for s in ("ours", "bm25") for m in ("new", "current")
    )
    bm25 = [p for p in run.probes if p.system == "bm25"]
    assert all(p.points == (True,) and p.sessions == (True,) for p in bm25)
    row = figures(runs)
    assert row.queries == 2 and row.word["bm25:new"] == 1.0 and row.probes == 1
    assert row.offtopic is not None and "Tess_Test" in table([row])
    assert run.errors == 0  # a recall that failed would be logged, and counted


def test_without_the_data_the_harness_says_so_and_skips(tmp_path: Path) -> None:
    said_: list[str] = []
    assert evaluate(tmp_path / "absent", tmp_path, say=said_.append) == []
    assert "skipped" in said_[0]
