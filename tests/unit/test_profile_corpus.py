"""The profile corpora: well-formed, large enough, and the held-out set unchanged."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

CORPORA = Path(__file__).resolve().parents[2] / "evals" / "profile"
HELDOUT_SHA256 = "63eba510053e8c51556dc4c7937c73b1a6e1ed4539012f966a1e9b2d8e287500"
"""The held-out corpus as written before the gate's rules were changed: a rule is never
tuned on it, so the file never changes either."""
KINDS = {"boundary", "preference", "goal", "style", "fact"}


def _rows(name: str) -> list[dict[str, object]]:
    lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_heldout_corpus_is_frozen() -> None:
    digest = hashlib.sha256((CORPORA / "heldout.jsonl").read_bytes()).hexdigest()
    assert digest == HELDOUT_SHA256


@pytest.mark.parametrize(("name", "minimum"), [("dev.jsonl", 300), ("heldout.jsonl", 150)])
def test_corpus_is_labelled(name: str, minimum: int) -> None:
    rows = _rows(name)
    assert len(rows) >= minimum
    for row in rows:
        assert set(row) == {"text", "keep", "kind", "secret", "revoke", "lang", "note"}
        assert isinstance(row["text"], str) and row["text"].strip()
        assert row["keep"] == (row["kind"] in KINDS)
        assert not (row["keep"] and row["secret"])
        assert row["lang"] in {"en", "zh", "mixed"}
    assert {row["lang"] for row in rows} == {"en", "zh", "mixed"}
    assert any(row["secret"] for row in rows) and any(row["keep"] for row in rows)


def test_heldout_shares_no_utterance_with_dev() -> None:
    dev = {row["text"] for row in _rows("dev.jsonl")}
    assert not dev & {row["text"] for row in _rows("heldout.jsonl")}


def test_the_profile_section_scores_both_corpora() -> None:
    from evals.profile_gate import score, section

    text = section()
    assert "| dev |" in text and "| heldout |" in text
    heldout = score("heldout")
    assert heldout.total == len(_rows("heldout.jsonl"))
    assert heldout.true_pos + heldout.false_neg == sum(
        bool(r["keep"]) for r in _rows("heldout.jsonl")
    )
