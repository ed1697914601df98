"""The memory evaluation measures what it says: properties that hold on a small offline
subset (no leakage, deletion at once), metrics that can fail (a deliberately broken
system scores worse), `n/a` where a system cannot fail by construction, and every model
call counted. No test pins a figure: figures go to `make eval`."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, get_buffer_string

from agent.offline import OfflineChatModel
from evals.dialogue import load_split
from evals.dialogue_run import play_dialogue
from evals.offline_summaries import SummarizingOfflineModel, summary_answer, summary_request
from evals.ours import Ours
from evals.report import dialogue_markdown, markdown, totals
from evals.scenario import Fact, Scenario, load_all
from evals.scenario_run import evaluate, play
from evals.systems import build
from evals.tokens import count_text

SUBSET = (
    "forget_steps",
    "preference_across_conversations",
    "secrets_stay_put",
    "two_users_similar",
)


@pytest.fixture(scope="module")
def scenarios() -> list[Scenario]:
    chosen = [s for s in load_all() if s.name in SUBSET]
    assert [s.name for s in chosen] == list(SUBSET)
    return chosen


def by_name(name: str) -> Scenario:
    return next(s for s in load_all() if s.name == name)


def test_this_agent_never_leaks_and_forgets_at_once(
    scenarios: list[Scenario], tmp_path: Path
) -> None:
    outcomes = evaluate(scenarios, ["ours", "summarization"], OfflineChatModel, tmp_path,
                        progress=False)  # fmt: skip
    ours, peer = totals(outcomes)
    assert ours.system == "ours" and ours.leaks == 0
    assert ours.deletions_never == 0 and ours.deletion_turns == 0
    assert ours.store_left == 0 and ours.store_checks > 0
    # A baseline with one thread per conversation cannot leak or delete: not measured.
    assert (peer.leaks, peer.deletions_never, peer.store_left) == (None, None, None)
    header, _rule, first, second = markdown(outcomes).splitlines()[2:6]
    assert header.startswith("| system | recall, same conv. | recall, cross conv. |")
    assert first.startswith("| ours |") and second.startswith("| summarization |")
    assert second.split("|")[6].strip() == "n/a · –"  # leakage; no held-out run here


def test_a_leaking_system_is_caught(tmp_path: Path) -> None:
    """One thread for every user and conversation: users see each other's facts."""
    scenario = by_name("two_users_similar")
    honest = build("full_history", OfflineChatModel(), tmp_path)
    leaky = build("full_history", OfflineChatModel(), tmp_path)
    turn = leaky.turn
    leaky.turn = lambda session, conversation, text: turn("all", "all", text)  # type: ignore[method-assign]
    leaky.by_construction = frozenset()
    fair, broken = play(scenario, honest), play(scenario, leaky)
    assert fair.wrong == 0 and broken.leaks > 0 and broken.wrong > fair.wrong


def test_a_system_that_does_not_forget_is_caught(tmp_path: Path) -> None:
    scenario = by_name("forget_steps")
    honest = build("ours", OfflineChatModel(), tmp_path)
    deaf = build("ours", OfflineChatModel(), tmp_path)
    assert isinstance(deaf, Ours)
    deaf.forget = lambda session, match: 0  # type: ignore[method-assign]
    try:
        fair, broken = play(scenario, honest), play(scenario, deaf)
    finally:
        honest.close()
        deaf.close()
    assert None not in fair.deletions and fair.store_left == 0
    assert None in broken.deletions and broken.store_left > 0


def test_only_a_system_that_searches_past_conversations_recalls_across_them(
    tmp_path: Path,
) -> None:
    scenario = by_name("relocation_supersession")
    bm25 = play(scenario, build("bm25_history", OfflineChatModel(), tmp_path))
    full = play(scenario, build("full_history", OfflineChatModel(), tmp_path))
    assert bm25.expected_cross == full.expected_cross > 0
    assert bm25.hits_cross > 0 and full.hits_cross == 0
    assert full.by_construction >= {"fidelity", "leakage"}
    assert totals([full])[0].fidelity is None  # keeps everything: cannot fail


def test_revoked_key_facts_leave_the_fidelity_checks(tmp_path: Path) -> None:
    steps = [
        {"session": "a", "conversation": "c1", "say": "I like green tea.",
         "key_facts": ["like green tea"]},
        {"session": "a", "conversation": "c1", "filler": 6, "texts": ["Thanks."]},
        {"session": "a", "conversation": "c1", "say": "I switched to coffee.",
         "revokes": ["like green tea"]},
        {"session": "a", "conversation": "c1", "filler": 6, "texts": ["OK."]},
    ]  # fmt: skip
    scenario = Scenario.model_validate({"name": "t", "title": "t", "language": "en",
                                        "steps": steps})  # fmt: skip
    outcome = play(scenario, build("last_8", OfflineChatModel(), tmp_path))
    # Said at turn 1, checked once older than 4 turns: turns 6 and 7, then revoked.
    assert outcome.fidelity_checks == 2


def test_every_model_call_is_counted(tmp_path: Path) -> None:
    scenario = by_name("relocation_supersession")
    summary = play(scenario, build("summarization", OfflineChatModel(), tmp_path))
    plain = play(scenario, build("last_8", OfflineChatModel(), tmp_path))
    assert summary.tokens.memory > 0 and plain.tokens.memory == 0
    assert summary.tokens.calls > summary.turns == plain.tokens.calls
    assert summary.tokens.total > sum(summary.tokens.context) + summary.tokens.memory


def test_chinese_counts_about_one_token_a_character() -> None:
    assert count_text("你好，世界") == 5
    assert count_text("abcd" * 5) == 5
    assert count_text("我住在 Berlin") == 3 + 2


def test_dialogue_evidence_is_recalled_only_from_a_context_that_holds_it(
    tmp_path: Path,
) -> None:
    dialogue = load_split("dev")[0]
    searched = play_dialogue(dialogue, build("bm25_history", OfflineChatModel(), tmp_path))
    truncated = play_dialogue(dialogue, build("last_8", OfflineChatModel(), tmp_path))
    new = [a.recall for a in searched.asked if a.mode == "new"]
    assert len(new) == len(dialogue.questions) and max(new) > 0
    assert all(a.recall == 0 for a in truncated.asked if a.mode == "new")
    table = dialogue_markdown([searched, truncated]).splitlines()
    assert table[4].startswith("| bm25_history |") and table[5].startswith("| last_8 | 0% ·")


def test_facts_match_any_alternative_case_insensitively() -> None:
    fact = Fact.model_validate({"any": ["PostgreSQL 15", "pg15"], "why": "revoked"})
    assert fact.found_in("we run postgresql 15 here") and fact.found_in("PG15")
    assert not fact.found_in("PostgreSQL 16")
    assert Fact.model_validate("vegetarian").any == ["vegetarian"]


def test_the_offline_model_answers_summarization_requests_with_its_compactors_lines() -> None:
    history = [
        HumanMessage("Our database is PostgreSQL 15."),
        AIMessage("Noted."),
        HumanMessage("Thanks, that helps."),
    ]
    body = get_buffer_string(history, format="xml")
    prompt = f"Summarise.\n<messages>\nMessages to summarize:\n{body}\n</messages>"
    parsed = summary_request([HumanMessage(prompt)])
    assert parsed == [
        ("user", "Our database is PostgreSQL 15."),
        ("assistant", "Noted."),
        ("user", "Thanks, that helps."),
    ]
    answer = summary_answer(parsed)
    assert answer.endswith(
        '## SUMMARY\nUser: "Our database is PostgreSQL 15."\nAssistant: "Noted."\n'
        'User: "Thanks, that helps."'
    )
    assert SummarizingOfflineModel().invoke(prompt).text == answer
    assert summary_request([HumanMessage("hello")]) is None
