"""Episodic memory: an archive of every past turn of a session, searched and recalled
(`memory.archive.archive.Archive`, imported from its module: the package loads no storage)."""

from memory.archive.lines import ArchivedLine, ArchiveRow, ArchiveWrite
from memory.archive.recall import Recall

__all__ = ["ArchiveRow", "ArchiveWrite", "ArchivedLine", "Recall"]
