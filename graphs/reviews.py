"""Human reviews: validation of resume decisions before a paused run continues.

A workflow that pauses with `interrupt(payload)` puts `"kind"` in its payload and
registers a validator for that kind. `ChatAgent.resume` checks a decision with it
before resuming, so a bad decision is a clear error, writes nothing, and leaves the
pending review resumable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from graphs.request import InvalidRequest

NOT_A_DECISION = "a decision must be an object such as {'action': 'approve'}"
UNKNOWN_REVIEW = "this review cannot be resumed here"

Validator = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
"""(interrupt payload, decision) → the normalised decision; raises `InvalidDecision`."""

_VALIDATORS: dict[str, Validator] = {}


class InvalidDecision(InvalidRequest):
    """A resume decision does not fit the pending review; nothing was resumed."""


def register_review(kind: str, validator: Validator) -> None:
    """Register the decision validator of an interrupt payload `kind`."""
    _VALIDATORS[kind] = validator


def validate_decision(payload: object, decision: object) -> dict[str, Any]:
    """The normalised decision for the pending review `payload`.

    Raises:
        InvalidDecision: the decision is malformed or not allowed for this review.
    """
    if not isinstance(decision, Mapping):
        raise InvalidDecision(NOT_A_DECISION)
    kind = payload.get("kind") if isinstance(payload, Mapping) else None
    validator = _VALIDATORS.get(kind) if isinstance(kind, str) else None
    if validator is None or not isinstance(payload, Mapping):
        raise InvalidDecision(UNKNOWN_REVIEW)
    return validator(payload, decision)
