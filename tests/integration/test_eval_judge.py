"""The evaluation's answer judge through `ChatOpenAI` against the local endpoint: what it
sends, and the table it makes of the verdicts."""

from __future__ import annotations

import json

import pytest
from langchain_openai import ChatOpenAI

from evals.dialogue_run import Asked, DialogueOutcome
from evals.judge import JUDGE_PROMPT, dialogue_answers, judge_outcomes
from evals.scenario import Fact
from evals.scenario_run import Answer, Outcome
from tests.openai_stub import OpenAIStub

pytestmark = pytest.mark.integration


def test_the_judge_reads_each_probe_answer(stub: OpenAIStub) -> None:
    answer = Answer(
        probe="What should I cook tonight?",
        answer="A mushroom risotto, since you are vegetarian.",
        expect=(Fact.model_validate("vegetarian"),),
        forbid=(Fact.model_validate({"any": ["hunter2"], "why": "secret"}),),
    )
    outcomes = [Outcome("ours", "s", answers=[answer]), Outcome("last_8", "s", answers=[answer])]
    stub.reply_json({"uses_needed": True, "uses_forbidden": False, "reason": "uses the diet"})
    stub.reply_json({"uses_needed": False, "uses_forbidden": True, "reason": "leaks"})
    model = ChatOpenAI(model="stub-judge", api_key="test", base_url=stub.base_url, max_retries=0)
    table = judge_outcomes(outcomes, model).splitlines()
    assert table[2:] == ["| ours | 100% | 0% |", "| last_8 | 0% | 100% |"]
    first = stub.requests[0]
    assert first["messages"][0]["content"] == JUDGE_PROMPT
    assert json.loads(first["messages"][1]["content"]) == {
        "question": "What should I cook tonight?",
        "answer": "A mushroom risotto, since you are vegetarian.",
        "needed": ["vegetarian"],
        "forbidden": ["hunter2"],
    }


def test_the_judge_reads_dialogue_answers_against_their_reference(stub: OpenAIStub) -> None:
    asked = Asked("When did Priya go to Porto?", "temporal", "new", 1.0,
                  "At the end of April.", "A long weekend at the end of April 2024.")  # fmt: skip
    dialogue = DialogueOutcome("bm25_history", "friends", "heldout", asked=[asked])
    stub.reply_json({"uses_needed": True, "uses_forbidden": False, "reason": "right month"})
    model = ChatOpenAI(model="stub-judge", api_key="test", base_url=stub.base_url, max_retries=0)
    table = judge_outcomes(dialogue_answers([dialogue]), model).splitlines()
    assert table[2:] == ["| bm25_history | 100% | 0% |"]
    assert json.loads(stub.requests[0]["messages"][1]["content"]) == {
        "question": "When did Priya go to Porto?",
        "answer": "At the end of April.",
        "needed": ["A long weekend at the end of April 2024."],
        "forbidden": [],
    }
