"""Episodic memory: an archive of every past turn of a session, searched and recalled.

`Archive` (`memory.archive.archive`, imported from its module: the package loads no
storage) writes through the documents' transaction, recalls earlier lines into a
turn's context (`memory.archive.recall`) and answers deliberate searches; one
backend per database (`memory.archive.sqlite`, `memory.archive.postgres`), each with
the user's lines' vectors when embeddings are set (`sqlite_vectors`, `postgres_vectors`).
"""

from memory.archive.lines import ArchivedLine, ArchiveRow, ArchiveWrite
from memory.archive.recall import Recall

__all__ = ["ArchiveRow", "ArchiveWrite", "ArchivedLine", "Recall"]
