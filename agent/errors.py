"""Typed errors of the agent's public surface (Python, HTTP, CLI)."""

from __future__ import annotations

from graphs.request import InvalidRequest, MessageTooLong
from memory.errors import ChatMemoryError, ConversationNotFound, MemoryNotFound

CONVERSATION_BUSY = "a turn is already running in this conversation; wait for it to finish"
NOTHING_TO_RESUME = "this conversation has no pending review to resume"
NOTHING_TO_RECOVER = "this conversation has no unfinished run to recover"
WAITING_FOR_REVIEW = "this conversation's run waits for a review: resume it with a decision"
TURN_FAILED = "The assistant could not complete this turn. Please try again."


class ConversationBusy(ChatMemoryError):
    """A turn is already running in that conversation."""

    def __init__(self, message: str = CONVERSATION_BUSY) -> None:
        super().__init__(message)


__all__ = [
    "ConversationBusy",
    "ConversationNotFound",
    "InvalidRequest",
    "MemoryNotFound",
    "MessageTooLong",
]
