"""`DEFAULT_HANDLERS`: every structured output the offline model produces, by schema
(compaction, extraction, the task list's four stages and the delivery's four); a model
built with `structured_handlers={**DEFAULT_HANDLERS, ...}` answers from its own table."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import BaseModel

from agent.offline import delivery, tasklist
from agent.offline.compaction import compaction_output
from graphs.delivery import DeliveryPlan, DeliveryReport, DeliveryTaskResult, ReviewVerdict
from graphs.tasklist import SelfCheck, TasklistSummary, TasklistTaskResult, TaskPlan
from memory.compaction import CompactionOutput
from memory.longterm import ExtractionOutput

NOT_AN_EXTRACTION_INPUT = (
    "the offline extraction handler needs the JSON document of "
    "memory.longterm.extraction.extraction_prompt as the last user message"
)


def extraction_output(messages: Sequence[BaseMessage]) -> ExtractionOutput:
    """No operations: the offline model judges no meaning, so with it long-term items come
    from the explicit requests `memory.longterm.extraction` reads by code beside any model's
    (`AGENT_LONG_TERM_MEMORY=model` offline does what `explicit` does).

    Raises:
        ValueError: the input is not an extraction document.
    """
    human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    try:
        document = json.loads(str(human.content)) if human is not None else {}
        if not isinstance(document["turns"], list):
            raise TypeError("turns")
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(NOT_AN_EXTRACTION_INPUT) from exc
    return ExtractionOutput(operations=[])


StructuredHandler = Callable[[Sequence[BaseMessage]], BaseModel]
"""Builds an instance of its schema from the input messages, deterministically."""

DEFAULT_HANDLERS: Mapping[type[BaseModel], StructuredHandler] = MappingProxyType(
    {
        CompactionOutput: compaction_output,
        ExtractionOutput: extraction_output,
        TaskPlan: tasklist.offline_plan,
        TasklistTaskResult: tasklist.offline_result,
        SelfCheck: tasklist.offline_check,
        TasklistSummary: tasklist.offline_summary,
        DeliveryPlan: delivery.offline_plan,
        DeliveryTaskResult: delivery.offline_task_result,
        ReviewVerdict: delivery.offline_verdict,
        DeliveryReport: delivery.offline_report,
    }
)
"""Schema class → handler; read-only, so no code can add to it behind a caller's back."""
