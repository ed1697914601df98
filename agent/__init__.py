"""The application surface: `ChatAgent`, its results and typed errors."""

from agent.errors import ConversationBusy, ConversationNotFound, InvalidRequest, MemoryNotFound
from agent.service import ChatAgent
from agent.turn_result import TurnResult

__all__ = [
    "ChatAgent",
    "ConversationBusy",
    "ConversationNotFound",
    "InvalidRequest",
    "MemoryNotFound",
    "TurnResult",
]
