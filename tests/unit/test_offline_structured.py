"""The offline model's structured output: handlers, include_raw, compaction rules end to end."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, create_model

from agent.offline import DEFAULT_HANDLERS, OfflineChatModel
from agent.offline.compaction import compaction_output, is_decision, is_retirement
from agent.offline.digest import EMPTY_SUMMARY, QUIET_LINE, Digest
from memory.compaction import CompactionOutput, CompactionStatus, compact, split_for_fold
from memory.compaction_input import CompactionInput, FoldedMessage, NumberedItem, compaction_prompt
from memory.limits import MAX_PINNED_DECISION_CHARS, MAX_SUMMARY_CHARS
from memory.schema import ThreadState
from tests.unit.offline_support import thread_state


@pytest.fixture
def model() -> OfflineChatModel:
    return OfflineChatModel()


def _compaction_input(state: ThreadState) -> list[BaseMessage]:
    fold, kept = split_for_fold(state.messages)
    return compaction_prompt(state, fold, kept)


# --- structured output ---------------------------------------------------------------


class _Unregistered(BaseModel):
    value: int


def test_unknown_schema_raises_not_implemented(model: OfflineChatModel) -> None:
    with pytest.raises(NotImplementedError, match="_Unregistered"):
        model.with_structured_output(_Unregistered)
    with pytest.raises(NotImplementedError, match="no structured-output handler"):
        model.with_structured_output({"title": "Anything", "type": "object"})


def test_unknown_method_is_rejected(model: OfflineChatModel) -> None:
    with pytest.raises(ValueError, match="structured-output method"):
        model.with_structured_output(CompactionOutput, method="telepathy")


def test_a_handler_given_to_one_model_answers_its_schema(model: OfflineChatModel) -> None:
    extended = OfflineChatModel(
        structured_handlers={
            **DEFAULT_HANDLERS,
            _Unregistered: lambda messages: _Unregistered(value=len(messages)),
        }
    )
    runnable = extended.with_structured_output(_Unregistered)
    assert runnable.invoke([HumanMessage("a"), AIMessage("b")]) == _Unregistered(value=2)
    # the table belongs to that model: the defaults and other models are unchanged
    assert _Unregistered not in DEFAULT_HANDLERS
    with pytest.raises(NotImplementedError, match="_Unregistered"):
        model.with_structured_output(_Unregistered)


def test_default_handlers_answer_every_workflow_schema(model: OfflineChatModel) -> None:
    assert {schema.__name__ for schema in model.structured_handlers} == {
        "CompactionOutput",
        "ExtractionOutput",
        "TaskPlan",
        "TasklistTaskResult",
        "SelfCheck",
        "TasklistSummary",
        "DeliveryPlan",
        "DeliveryTaskResult",
        "ReviewVerdict",
        "DeliveryReport",
    }


def test_schemas_of_one_model_need_distinct_names() -> None:
    twin = create_model("CompactionOutput", value=(int, ...))  # not memory's CompactionOutput
    with pytest.raises(ValueError, match="several schemas named CompactionOutput"):
        OfflineChatModel(structured_handlers={**DEFAULT_HANDLERS, twin: lambda _: twin(value=1)})


def test_include_raw_returns_raw_parsed_and_no_error(model: OfflineChatModel) -> None:
    prompt = _compaction_input(thread_state([(f"q{i}", f"a{i}") for i in range(5)]))
    result = model.with_structured_output(CompactionOutput, include_raw=True).invoke(prompt)
    assert isinstance(result, dict)
    assert set(result) == {"raw", "parsed", "parsing_error"}
    assert result["parsing_error"] is None
    assert isinstance(result["parsed"], CompactionOutput)
    assert result["raw"].tool_calls[0]["name"] == "CompactionOutput"
    assert result["raw"].tool_calls[0]["args"] == result["parsed"].model_dump()


# --- compaction ----------------------------------------------------------------------


def test_decisions_become_pins_and_revocations_retire_old_ones() -> None:
    state = thread_state(
        [
            ("We decided to use Postgres for storage. Let's start.", "Sure."),
            ("我们必须使用红色主题。", "好的。"),
            ("We no longer answer in English. Must we test?", "OK."),
            ("Don't forget: we must deploy on Fridays.", "Noted."),
            ("不再用黑色字体。", "好。"),
            ("tell me a joke", "Why..."),
            ("more", "another"),
        ],
        pins=["Always answer in English.", "Use tabs.", "必须用黑色字体"],
    )
    output = compaction_output(_compaction_input(state))
    assert [pin.text for pin in output.pinned_decisions] == [
        "We decided to use Postgres for storage.",
        "我们必须使用红色主题。",
        "Don't forget: we must deploy on Fridays.",
    ]
    assert [pin.number for pin in output.retired_pins] == [1, 3]


def test_assistant_decisions_and_questions_are_not_pinned() -> None:
    state = thread_state(
        [("Should we always use tabs?", "We must always use tabs.")] * 3 + [("x", "y")] * 2
    )
    assert compaction_output(_compaction_input(state)).pinned_decisions == []


def test_a_revocation_is_never_pinned_and_cancels_a_pin_from_the_same_fold() -> None:
    state = thread_state(
        [
            ("We decided to use MySQL.", "OK."),
            ("Forget MySQL, we never decided that for real.", "OK."),
            ("We no longer must use tabs.", "OK."),
            ("a", "b"),
            ("c", "d"),
        ],
        pins=["Always indent with tabs."],
    )
    output = compaction_output(_compaction_input(state))
    assert output.pinned_decisions == []
    assert [pin.number for pin in output.retired_pins] == [1]


def test_rules_read_sentences_not_whole_messages() -> None:
    assert is_decision("We must use UTC.")
    assert not is_decision("We no longer must use tabs.")
    assert not is_decision("Must we use UTC?")
    assert not is_decision("Never mind.")
    assert is_retirement("Forget the tabs rule.")
    assert not is_retirement("Don't forget the tabs rule.")


def test_transcript_with_a_leading_reply_and_multi_line_messages() -> None:
    document = CompactionInput(
        old_summary="",
        old_pinned_decisions=[NumberedItem(number=1, text="Always use tabs.")],
        messages_to_fold=[
            FoldedMessage(role="assistant", text="Welcome!"),
            FoldedMessage(role="user", text="Hi.\nWe must use UTC."),
            FoldedMessage(role="assistant", text="Sure."),
        ],
        kept_messages=[
            FoldedMessage(role="user", text="next"),
            FoldedMessage(role="assistant", text="ok"),
        ],
    )
    text = document.model_dump_json()
    output = compaction_output([SystemMessage("compact"), HumanMessage(text)])
    # the greeting turns carry nothing: only counted; the decision is kept, quoted
    assert output.summary.splitlines() == ['User: "We must use UTC."', QUIET_LINE]
    assert [pin.text for pin in output.pinned_decisions] == ["We must use UTC."]
    assert output.retired_pins == []


def test_pins_are_clipped() -> None:
    state = thread_state([("We decided " + "very " * 100 + "much.", "OK.")] * 3 + [("a", "b")] * 2)
    pins = compaction_output(_compaction_input(state)).pinned_decisions
    assert len(pins) == 1
    assert len(pins[0].text) <= MAX_PINNED_DECISION_CHARS


def test_summary_is_bounded_and_merges_the_old_one_instead_of_appending() -> None:
    padding = ", and more" * 25
    turns = [
        (f"Server node-{i} runs {i + 8} jobs{padding}.", f"Node-{i} has {i} GB{padding}.")
        for i in range(7)
    ]
    state = thread_state(turns, summary="The user runs a build farm.\n" * 80)
    summary = compaction_output(_compaction_input(state)).summary
    assert 0 < len(summary) <= MAX_SUMMARY_CHARS
    assert summary.count("The user runs a build farm.") <= 1
    digest = Digest()
    digest.read(summary)
    assert digest.dropped >= 1  # the summary says that it lost something
    assert f"Server node-4 runs 12 jobs{padding}." in {fact.text for fact in digest.facts}


def test_summary_is_never_empty() -> None:
    prompt = [HumanMessage(compaction_prompt(ThreadState(), [], [])[1].text)]
    assert compaction_output(prompt).summary == EMPTY_SUMMARY


def test_compaction_handler_refuses_other_input(model: OfflineChatModel) -> None:
    with pytest.raises(ValueError, match="CompactionInput"):
        compaction_output([HumanMessage("hello")])
    with pytest.raises(ValueError, match="CompactionInput"):
        model.with_structured_output(CompactionOutput).invoke("hello")


def _ten_message_state() -> ThreadState:
    return thread_state(
        [
            ("We decided to ship on Mondays.", "Understood."),
            ("我们必须用中文写文档。", "好的。"),
            ("We no longer use Python 2 anywhere.", "Good."),
            ("What is the capital of Peru?", "Lima."),
            ("And of Chile?", "Santiago."),
        ],
        summary="The user builds a release tool.",
        pins=["Always support Python 2.", "Keep answers short."],
    )


def _check_compacted(state: ThreadState, result: Any) -> None:
    assert result.status is CompactionStatus.SUCCEEDED
    assert result.refused == {}  # every pin, retirement and question quotes its message
    assert result.state.messages == state.messages[-4:]
    assert result.state.pinned_decisions == [
        "Keep answers short.",
        "We decided to ship on Mondays.",
        "我们必须用中文写文档。",
    ]
    summary = result.state.summary
    assert summary.startswith("The user builds a release tool.")
    assert "We no longer use Python 2 anywhere." in summary
    assert "capital of Peru" not in summary  # kept verbatim, not folded
    assert len(summary) <= MAX_SUMMARY_CHARS


@pytest.mark.parametrize("method", [None, "json_schema", "function_calling"])
def test_compact_end_to_end_with_the_offline_model(
    model: OfflineChatModel, method: str | None
) -> None:
    state = _ten_message_state()
    assert len(state.messages) == 10
    _check_compacted(state, compact(state, model, method=method))
