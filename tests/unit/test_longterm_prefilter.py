"""The secret detector's gates: a gate never turns away a text its pattern matches, so
every check, and `find_secret`, answers what the plain loop over the patterns answers."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.longterm import SecretKind, secrets
from memory.longterm.prefilter import Prefiltered, folded, literal_needs
from tests.unit.test_longterm_secrets import (
    FOUND_BY_KIND,
    ORDINARY,
    PASSWORDS_BESIDE_CHINESE_OR_A_USER_NAME,
    PHRASINGS,
    PROFILE_STATEMENTS,
)

EVALS = Path(__file__).resolve().parents[2] / "evals"
GATED = [value for value in vars(secrets).values() if isinstance(value, Prefiltered)]
MAINTAINED = list(secrets._maintained_patterns())
TEMPLATES = [
    "{}",
    "my key is {} thanks",
    "Here is the config:\nexport TOKEN={}\nrun it",
    "我的密钥是{}。",
    'password = "{}"',
]


@contextmanager
def gates_open() -> Iterator[None]:
    """The detector as it was before the gates: every pattern searched in every text."""
    with mock.patch.object(Prefiltered, "admits", return_value=True):
        yield


def verdicts(text: str) -> list[bool]:
    """Each check's answer on `text` (as `find_secret` sees it), not only the first."""
    normal = unicodedata.normalize("NFKC", text)
    return [bool(check(normal)) for _, checks in secrets._CHECKS for check in checks]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def evals_corpus() -> list[str]:
    """Every text under evals/, dev and held-out alike (read to compare answers only),
    each file's texts also joined into one long text."""
    texts: list[str] = []
    for path in sorted(EVALS.rglob("*")):
        if path.suffix == ".json":
            found = list(_strings(json.loads(path.read_text(encoding="utf-8"))))
        elif path.suffix == ".jsonl":
            lines = path.read_text(encoding="utf-8").splitlines()
            found = [text for line in lines if line for text in _strings(json.loads(line))]
        elif path.suffix == ".md":
            found = path.read_text(encoding="utf-8").splitlines()
        else:
            continue
        texts.extend(found)
        texts.append("\n".join(found))
    return texts


def corpus() -> list[str]:
    own = [text for text, _ in FOUND_BY_KIND] + ORDINARY + PHRASINGS + PROFILE_STATEMENTS
    own += PASSWORDS_BESIDE_CHINESE_OR_A_USER_NAME
    return evals_corpus() + own


def answers(text: str) -> tuple[list[bool], SecretKind | None]:
    """Each check's verdict and `find_secret`'s answer (uncached)."""
    return verdicts(text), secrets.find_secret.__wrapped__(text)


def test_gates_change_no_answer_on_the_corpus() -> None:
    texts = corpus()
    gated = [answers(text) for text in texts]
    with gates_open():
        plain = [answers(text) for text in texts]
    assert gated == plain
    # the comparison means something: secrets of every kind are in it, and the gates
    # turn most texts away from some pattern
    assert set(SecretKind) <= {kind for _, kind in plain}
    turned_away = sum(not all(g.admits(text) for g in GATED) for text in texts)
    assert turned_away > len(texts) / 2


@pytest.mark.parametrize("gate", GATED + MAINTAINED, ids=lambda g: g.pattern.pattern[:40])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_gate_admits_every_text_its_pattern_matches(gate: Prefiltered, data: Any) -> None:
    text = data.draw(st.from_regex(gate.pattern))
    assert gate.pattern.search(text)
    assert gate.admits(text)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_key_formats_in_prose_get_the_same_answers(data: Any) -> None:
    gate = data.draw(st.sampled_from(MAINTAINED + GATED))
    text = data.draw(st.sampled_from(TEMPLATES)).format(data.draw(st.from_regex(gate.pattern)))
    gated = answers(text)
    with gates_open():
        plain = answers(text)
    assert gated == plain


def test_folding_maps_every_case_variant_of_a_gate_character() -> None:
    chars = {c for g in GATED + MAINTAINED if g.fold for need in g.needs for s in need for c in s}
    everything = "".join(chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000)
    group = "[" + "".join(map(re.escape, sorted(chars))) + "]"
    variants = set(re.findall(group, everything, re.IGNORECASE))
    assert "ſ" in variants and "K" in variants  # the non-ASCII variants are looked at
    for variant in variants:
        for char in chars:
            if re.fullmatch(re.escape(char), variant, re.IGNORECASE):
                assert folded(variant) == char, (variant, char)


@pytest.mark.parametrize(
    ("pattern", "needs"),
    [
        (re.compile(r"(?:ghp|gho)_[A-Za-z]{4}"), [{"ghp_", "gho_"}]),
        (re.compile(r"\bPass(?:word)?s?\b", re.I), [{"pass"}]),
        (re.compile(r"(?:x|)abc\d+def"), [{"abc"}, {"def"}]),
        (re.compile(r"ab(?i:cd)ef"), [{"ab"}, {"ef"}]),
        (re.compile(r"(?:key|token)=\w+|secret"), [{"key=", "token=", "secret"}]),
        (re.compile(r"foo|\d+"), []),
        (re.compile(r"(?:abc)*de"), [{"de"}]),
        (re.compile(r"(?<=ab)cd(?!ef)"), [{"cd"}]),
        (re.compile(r"(a)bc\1"), [{"abc"}]),
    ],
)
def test_needs_are_read_off_the_pattern(pattern: re.Pattern[str], needs: list[set[str]]) -> None:
    assert [set(need) for need in literal_needs(pattern)] == needs
