"""The write-quality eval's counting, on a tiny synthetic persona (not RealMem)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from evals.realmem_measures import count
from evals.realmem_personas import load
from evals.realmem_writes import EXTRACTORS, ExtractionCalls, main, replay
from memory.prompts import EXTRACTION_SYSTEM

FACT = "I live in Lisbon and I work as a nurse on night shifts."
POINT = "I live in Lisbon and work as a nurse on night shifts"


def _persona(directory: Path) -> Path:
    def turns(*pairs: tuple[str, str]) -> list[dict[str, str]]:
        return [
            line
            for user, reply in pairs
            for line in (
                {"speaker": "User", "content": user},
                {"speaker": "Assistant", "content": reply},
            )
        ]

    document = {
        "_metadata": {"person_name": "Ana_Test", "total_sessions": 2, "total_tokens": 0},
        "dialogues": [
            {
                "session_identifier": "Life_1:S1_01",
                "session_uuid": "s1",
                "current_time": "2025-01-01 (Wednesday)",
                "dialogue_turns": turns(
                    (f"Hi! {FACT}", "Nice to meet you, Ana. Lisbon is a lovely city to live in."),
                    ("Thanks, that helps a lot today.", "You're welcome."),
                ),
                "extracted_memory": [
                    {
                        "content": f"【Profile】 {POINT}",
                        "source_turn": 1,
                        "source_content_snapshot": f"Hi! {FACT}",
                        "source_role_snapshot": "User",
                    },
                    {
                        "content": "The assistant welcomed Ana.",
                        "source_turn": 2,
                        "source_role_snapshot": "Assistant",
                    },
                ],
            },
            {
                "session_identifier": "Enhanced:S10001",
                "session_uuid": "s2",
                "current_time": "2025-01-02 (Thursday)",
                "dialogue_turns": turns(
                    ("Pretend you are a pirate captain sailing the seven seas.", "Arr, matey!"),
                ),
                "extracted_memory": [],
            },
        ],
    }
    path = directory / "Ana_Test_dialogues.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_loading_keeps_user_points_and_marks_distractors(tmp_path: Path) -> None:
    persona = load(_persona(tmp_path))
    assert persona.points == [POINT]
    assert [s.distractor for s in persona.sessions] == [False, True]
    assert persona.sessions[0].turns[0].reply.startswith("Nice to meet you")


def test_count_of_items(tmp_path: Path) -> None:
    persona = load(_persona(tmp_path))
    items = [
        {"text": POINT, "conversationId": "s1"},
        {"text": "We're good to go.", "conversationId": "s1"},
        {"text": "I live in Lisbon and work as a nurse on night shifts!", "conversationId": "s1"},
        {
            "text": "Pretend you are a pirate captain sailing the seven seas.",
            "conversationId": "s2",
        },
        {"text": "Lisbon is a lovely city to live in", "conversationId": "s1"},
        {"text": "My password is hunter2", "conversationId": "s1"},
    ]
    counts = count(persona, items)
    assert counts == {
        "items": 6,
        "gold": 2,
        "distractor": 1,
        "filler": 1,
        "duplicates": 1,
        "from_agent": 1,
        "secrets": 1,
    }


def test_replay_oracle_kept_hostile_filler_refused_or_counted(tmp_path: Path) -> None:
    persona = load(_persona(tmp_path))
    mode, make = EXTRACTORS["oracle"]
    assert make is not None
    oracle = replay(persona, mode, make(persona), tmp_path)
    assert oracle["items"] == 1 and oracle["gold"] == 1
    assert oracle["proposed"] == 1 and oracle["user_turns"] == 3
    assert 0 < oracle["calls"] <= oracle["user_turns"]

    mode, make = EXTRACTORS["hostile"]
    assert make is not None
    hostile = replay(persona, mode, make(persona), tmp_path)
    assert hostile["proposed"] > hostile["items"]  # the gate refused some
    assert hostile["secrets"] == 0  # "my password is hunter2" is refused by format
    assert hostile["from_agent"] == 0  # the assistant's line is not the user's quote
    assert hostile["gold"] == 0  # its own store: the oracle's item is not there
    assert hostile["filler"] >= 1  # fragments ("Hi! I live") pass the gate, and count

    mode, make = EXTRACTORS["explicit only (offline)"]
    offline = replay(persona, mode, None, tmp_path)
    assert offline["items"] == 0 and offline["calls"] == 0


def test_main_writes_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _persona(tmp_path)
    out = tmp_path / "table.md"
    monkeypatch.setenv("REALMEM_DIR", str(tmp_path))
    assert main(["--sessions", "0", "--out", str(out)]) == 0
    table = out.read_text(encoding="utf-8")
    assert "| oracle | 1 | 1.0 (1) | 100% |" in table


def test_extraction_calls_are_counted_by_their_prompt_whatever_the_method() -> None:
    # json_mode names no schema in the request: the prompt is what marks an extraction
    counter = ExtractionCalls()
    extraction = [SystemMessage(EXTRACTION_SYSTEM), HumanMessage('{"turns": []}')]
    counter.on_chat_model_start({}, [extraction], invocation_params={})
    counter.on_chat_model_start({}, [[SystemMessage("Compact this."), HumanMessage("x")]])
    assert counter.calls == 1
