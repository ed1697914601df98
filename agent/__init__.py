"""The application surface: `ChatAgent`, its results and typed errors.

Each is imported on first use: the HTTP app and the CLI import `agent.*` modules without
loading the agent's model and storage stacks until they open one.
"""

from typing import TYPE_CHECKING

from memory.lazy import lazy_exports

if TYPE_CHECKING:
    from agent.errors import ConversationBusy, ConversationNotFound, InvalidRequest, MemoryNotFound
    from agent.service import ChatAgent
    from agent.turn_result import TurnResult

__getattr__ = lazy_exports(
    __name__,
    {
        "agent.errors": (
            "ConversationBusy",
            "ConversationNotFound",
            "InvalidRequest",
            "MemoryNotFound",
        ),
        "agent.service": ("ChatAgent",),
        "agent.turn_result": ("TurnResult",),
    },
)

__all__ = [
    "ChatAgent",
    "ConversationBusy",
    "ConversationNotFound",
    "InvalidRequest",
    "MemoryNotFound",
    "TurnResult",
]
