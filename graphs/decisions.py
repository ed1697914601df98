"""Resume decisions: validation of a human review's decision before a paused run continues.

A workflow that pauses with `interrupt(payload)` puts `"kind"` in its payload and
exports a mapping from each kind to its validator (`graphs.tasklist.REVIEWS`).
`ChatAgent.resume` checks a decision with that mapping before resuming, so a bad
decision is a clear error, writes nothing, and leaves the pending review resumable.
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
    """The normalised decision for the pending review `payload`.

    Args:
        payload: the interrupt payload of the pending review; its `"kind"` picks the
            validator.
        decision: the reviewer's decision, as received.
        validators: the validator of each review kind that may be resumed here.

    Raises:
        InvalidDecision: the decision is malformed, not allowed for this review, or the
            review's kind has no validator in `validators`.
    """
    if not isinstance(decision, Mapping):
        raise InvalidDecision(NOT_A_DECISION)
    kind = payload.get("kind") if isinstance(payload, Mapping) else None
    validator = validators.get(kind) if isinstance(kind, str) else None
    if validator is None or not isinstance(payload, Mapping):
        raise InvalidDecision(UNKNOWN_REVIEW)
    return validator(payload, decision)
