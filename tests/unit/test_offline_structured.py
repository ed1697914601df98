"""The offline model's structured output: its handlers by schema, include_raw."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, create_model

from agent.offline import DEFAULT_HANDLERS, OfflineChatModel
from memory.compaction import CompactionOutput, compaction_prompt, split_for_fold
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
