"""The offline model: `OfflineChatModel` and `DEFAULT_HANDLERS`, its structured outputs
(nothing is registered at import: a model answers from the table it was built with)."""

from agent.offline.handlers import DEFAULT_HANDLERS, StructuredHandler
from agent.offline.model import OfflineChatModel

__all__ = ["DEFAULT_HANDLERS", "OfflineChatModel", "StructuredHandler"]
