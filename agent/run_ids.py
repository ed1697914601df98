"""The start-up scrub, once per database, of the raw session and conversation ids an
earlier release left in run checkpoints (now they reach the graph through its context),
so that the database never links a run thread, an HMAC, back to its session. The
channels it empties are ones the graph no longer has: a pending review still resumes.
"""

from __future__ import annotations

import logging
from typing import Any

from memory.conversations import ConversationMemory
from memory.ids import RUN_THREAD_PREFIX
from memory.redaction import redact_value

logger = logging.getLogger(__name__)

SCRUBBED = "maintenance:run-ids-scrubbed"
"""The document that says this database's run threads were scrubbed."""
ID_CHANNELS = ("session_id", "conversation_id")
"""The channels in which an earlier release kept the ids."""


def scrub_run_ids(memory: ConversationMemory) -> int:
    """Scrub the raw ids from every run thread's checkpoints, blobs and writes, in one
    transaction, unless the database says it was done; returns how many threads held
    them. A failure is logged and retried at the next start."""
    threads = memory.threads
    try:
        with threads.lock(SCRUBBED):
            if threads.get(SCRUBBED) is not None:
                return 0
            runs = threads.list_threads(f"{RUN_THREAD_PREFIX}:")
            if not runs:  # a new database: nothing to scrub, and no marker among its threads
                return 0
            held: dict[str, set[str]] = {}
            for channel in ID_CHANNELS:
                for thread, value in threads.run_channel_values(runs, channel).items():
                    if isinstance(value, str) and value:
                        held.setdefault(thread, set()).add(value)

            def scrub(cursor: Any) -> None:
                threads.documents.redact_runs(
                    cursor,
                    list(held),
                    lambda thread, value: redact_value(
                        value, lambda text: "" if text in held[thread] else text
                    ),
                    threads.checkpointer.serde,
                )

            threads.put_many({SCRUBBED: {"threads": len(held)}}, also=scrub if held else None)
    except Exception:
        logger.exception("scrubbing the run threads of raw ids failed; retried at next start")
        return 0
    if held:
        logger.info("scrubbed the raw ids from %d run thread(s)", len(held))
    return len(held)
