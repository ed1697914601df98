"""Long-term memory: what a user said about themselves that holds across conversations.

Knows nothing of graphs or agents: the write gate, the explicit requests and the model
extractor, and recall within a budget, all pure; `memory.longterm.store.LongTermMemory` reads
and writes the items (imported from its module: the package loads no storage). The
extractors, built on LangChain, are imported on first use.
"""

from typing import TYPE_CHECKING

from memory.lazy import lazy_exports
from memory.longterm.gate import Refusal, WritePlan, plan_write
from memory.longterm.items import MEMORY_KINDS, MemoryItem, MemoryKind
from memory.longterm.operations import ExtractionOutput, Operation, OwedTurn
from memory.longterm.secrets import SecretKind, find_secret

if TYPE_CHECKING:
    from memory.longterm.extraction import (
        EXPLICIT_EXTRACTOR,
        Extractor,
        model_extractor,
        structured_extractor,
    )

__getattr__ = lazy_exports(
    __name__,
    {
        "memory.longterm.extraction": (
            "EXPLICIT_EXTRACTOR",
            "Extractor",
            "model_extractor",
            "structured_extractor",
        )
    },
)

__all__ = [
    "EXPLICIT_EXTRACTOR",
    "MEMORY_KINDS",
    "ExtractionOutput",
    "Extractor",
    "MemoryItem",
    "MemoryKind",
    "Operation",
    "OwedTurn",
    "Refusal",
    "SecretKind",
    "WritePlan",
    "find_secret",
    "model_extractor",
    "plan_write",
    "structured_extractor",
]
