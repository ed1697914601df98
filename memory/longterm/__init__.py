"""Long-term memory: what a user said about themselves that holds across conversations.

Knows nothing of graphs or agents: the write gate, the explicit requests, and recall
within a budget, all pure. The extractors (`memory.longterm.extraction`, built on
LangChain) and `memory.longterm.store.LongTermMemory` (storage) are imported from their
modules: importing the package loads neither.
"""

from memory.longterm.gate import WritePlan, plan_write
from memory.longterm.items import MemoryItem, MemoryKind
from memory.longterm.operations import ExtractionOutput, Operation, OwedTurn
from memory.longterm.secrets import SecretKind, find_secret

__all__ = [
    "ExtractionOutput",
    "MemoryItem",
    "MemoryKind",
    "Operation",
    "OwedTurn",
    "SecretKind",
    "WritePlan",
    "find_secret",
    "plan_write",
]
