"""Resume decisions, validated before a paused run continues: by the validator of the
payload's `"kind"` in the workflow's mapping (`graphs.tasklist.REVIEWS`), so that a bad
decision is a clear error, writes nothing and leaves the review resumable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from graphs.request import InvalidRequest

NOT_A_DECISION = "a decision must be an object such as {'action': 'approve'}"
UNKNOWN_REVIEW = "this review cannot be resumed here"

Validator = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
"""(interrupt payload, decision) → the normalised decision; raises `InvalidDecision`."""


class InvalidDecision(InvalidRequest):
    """A resume decision does not fit the pending review; nothing was resumed."""


def validate_decision(
    payload: object, decision: object, validators: Mapping[str, Validator]
) -> dict[str, Any]:
    """The normalised decision for the pending review `payload`, by the validator of its
    `"kind"`; `InvalidDecision` for a bad decision or a kind without one."""
    if not isinstance(decision, Mapping):
        raise InvalidDecision(NOT_A_DECISION)
    kind = payload.get("kind") if isinstance(payload, Mapping) else None
    validator = validators.get(kind) if isinstance(kind, str) else None
    if validator is None or not isinstance(payload, Mapping):
        raise InvalidDecision(UNKNOWN_REVIEW)
    return validator(payload, decision)
