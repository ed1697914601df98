"""The application surface: `ChatAgent`, its results and typed errors.

`ChatAgent` and `TurnResult` are imported on first use: the HTTP app and the CLI import
modules of this package without the agent's model and storage stacks.
"""

from typing import TYPE_CHECKING

from agent.errors import ConversationBusy, ConversationNotFound, InvalidRequest, MemoryNotFound
from memory.lazy import lazy_exports

if TYPE_CHECKING:
    from agent.service import ChatAgent
    from agent.turn_result import TurnResult

__getattr__ = lazy_exports(
    __name__, {"agent.service": ("ChatAgent",), "agent.turn_result": ("TurnResult",)}
)

__all__ = [
    "ChatAgent",
    "ConversationBusy",
    "ConversationNotFound",
    "InvalidRequest",
    "MemoryNotFound",
    "TurnResult",
]
