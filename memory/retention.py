"""Retention: conversations idle past the policy go, registry entry and threads together.

`AGENT_RETENTION_DAYS`. Each session's idle conversations go in one transaction under
the session's lock, found from the registry thread id (the sweep never needs a raw
session id); a session whose every conversation is idle goes whole. A conversation
with a running turn is active: the sweep holds its turn lock (never waiting for it)
while it deletes, so no turn starts in a conversation going away.
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memory.errors import LockTimeout
from memory.ids import REGISTRY_THREAD_PREFIX, session_threads, turn_lock_key
from memory.registry import RegistryState, expire
from memory.storage import ThreadStore

if TYPE_CHECKING:  # the services this sweeps; they never import this module
    from memory.conversations import ConversationMemory
    from memory.longterm.store import LongTermMemory

logger = logging.getLogger(__name__)

REGISTRY_PREFIX = f"{REGISTRY_THREAD_PREFIX}:"


def sweep_session(
    threads: ThreadStore, registry_thread: str, cutoff: datetime, *, dry_run: bool = False
) -> tuple[int, int, int]:
    """Remove one session's conversations idle since before `cutoff`; returns how many
    conversations, sessions (removed whole: every conversation idle) and threads (memory,
    run and registry) went (or, in a dry run, would go)."""
    session_key = registry_thread.removeprefix(REGISTRY_PREFIX)
    with threads.lock(registry_thread), ExitStack() as turns:
        registry = RegistryState.model_validate(threads.get(registry_thread) or {})
        idle, busy = [], set()
        for entry in registry.conversations:
            if entry.last_active_at >= cutoff:
                continue
            # a keyless entry predates thread keys: no turn is told apart, it goes with its session
            try:
                if entry.key:
                    memory_thread = session_threads(session_key, entry.key)[0]
                    turns.enter_context(threads.locks.hold(turn_lock_key(memory_thread), 0))
                idle.append(entry)
            except LockTimeout:
                busy.add(entry.id)
        if not idle:
            return 0, 0, 0
        if len(idle) == len(registry.conversations) and not registry.pending:
            # the whole session: every thread under its key, keyed entries or not
            doomed = [
                t for prefix in session_threads(session_key) for t in threads.list_threads(prefix)
            ]
            doomed.append(registry_thread)
            if not dry_run:
                threads.put_many({}, delete=doomed)
            return len(idle), 1, len(doomed)
        kept, expired = expire(registry, cutoff, busy=busy)
        if len(expired) < len(idle):
            logger.info(
                "retention: %d idle conversation(s) predate thread keys; they go with their "
                "session",
                len(idle) - len(expired),
            )
        doomed = [t for entry in expired for t in session_threads(session_key, entry.key)]
        if expired and not dry_run:
            stored = kept.model_copy(update={"version": registry.version + 1})
            threads.put_many({registry_thread: stored.model_dump(mode="json")}, delete=doomed)
        return len(expired), 0, len(doomed)


def sweep(
    memory: ConversationMemory,
    long_term: LongTermMemory,
    days: float,
    *,
    dry_run: bool,
    now: datetime,
) -> dict[str, object]:
    """Apply a retention of `days` (0: none) at `now`: conversations idle for longer
    (registry entry, memory and run threads), the archived lines of conversations idle
    that long (listed or pruned from the list), the long-term items of sessions that never
    chatted and added none for as long, and long-term items whose TTL ran out. Returns
    how many were (or, with `dry_run`, would be) removed; a dry run counts no archived
    lines."""
    threads = memory.threads
    swept, lines, unused = [0, 0, 0], 0, (0, 0)
    if days > 0:
        cutoff = now - timedelta(days=days)
        for registry_thread in threads.list_threads(REGISTRY_PREFIX):
            removed = sweep_session(threads, registry_thread, cutoff, dry_run=dry_run)
            swept = [total + count for total, count in zip(swept, removed, strict=True)]
        if swept[2] and not dry_run:
            threads.compact_storage()
        # the archive outlives the list (a pruned conversation stays recallable) until
        # its conversation has been idle this long
        lines = 0 if dry_run else memory.archive.sweep(cutoff)
        # every session that chatted has a conversation registry
        chatted = {t.removeprefix(REGISTRY_PREFIX) for t in threads.list_threads(REGISTRY_PREFIX)}
        unused = long_term.sweep_unused_sessions(cutoff, chatted=chatted, dry_run=dry_run)
    expired = 0 if dry_run else long_term.sweep_expired()
    return {
        "conversations": swept[0],
        "sessions": swept[1] + unused[0],
        "threads": swept[2],
        "memories": expired + unused[1],
        "archivedLines": lines,
        "retentionDays": days,
        "dryRun": dry_run,
    }
