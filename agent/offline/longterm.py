"""The offline model's long-term extraction: it proposes nothing.

The offline model judges no meaning: with it, long-term items come from the user's
explicit requests, which `memory.longterm.extraction` reads by code beside whatever a
model proposes. So `AGENT_LONG_TERM_MEMORY=model` works without a network too, and does
what `explicit` does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage

from memory.longterm import ExtractionOutput

NOT_AN_EXTRACTION_INPUT = (
    "the offline extraction handler needs the JSON document of "
    "memory.longterm.extraction.extraction_prompt as the last user message"
)


def extraction_output(messages: Sequence[BaseMessage]) -> ExtractionOutput:
    """Answer an extraction request: no operations.

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
