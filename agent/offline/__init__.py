"""The offline model: `OfflineChatModel` and `DEFAULT_HANDLERS`, its structured outputs.

`model` is the chat model, `local` the base it shares with the scripted models of the
tests and benchmarks (one way to serve, stream, pace and record an in-process answer),
`chat` its tool planning and plain answers, `handlers` the table of structured outputs
it answers by default, built from `compaction`, `tasklist` and `delivery`. Nothing is
registered at import: a model answers from the table it was built with
(`OfflineChatModel(structured_handlers=...)`).
"""

from agent.offline.handlers import DEFAULT_HANDLERS, StructuredHandler
from agent.offline.model import OfflineChatModel

__all__ = ["DEFAULT_HANDLERS", "OfflineChatModel", "StructuredHandler"]
