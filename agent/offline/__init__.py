"""The offline model: `OfflineChatModel` and `DEFAULT_HANDLERS`, its structured outputs
(nothing is registered at import: a model answers from the table it was built with)."""

from agent.offline.model import DEFAULT_HANDLERS, OfflineChatModel, StructuredHandler

__all__ = ["DEFAULT_HANDLERS", "OfflineChatModel", "StructuredHandler"]
