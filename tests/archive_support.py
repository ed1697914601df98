"""Writing and reading the archive in tests: a turn said, what a turn recalls, a
forgetting, and SQLite's rows (`test_archive.py`, `test_archive_index.py`)."""

from __future__ import annotations

import uuid
from typing import Any

from memory.conversations import ConversationMemory
from memory.turns import TurnStatus, chat_turn


def say(memory: ConversationMemory, session: str, conversation: str, user: str, answer: str) -> str:
    """Write one turn (accepting the conversation first); returns the turn's id."""
    if not memory.registry(session).owns(conversation):
        memory.accept_draft(session, conversation)
    turn = uuid.uuid4().hex
    ids = {"user_message_id": f"{turn}-u", "assistant_message_id": f"{turn}-a"}
    write = memory.write_turn(
        session, conversation, chat_turn(user, answer, TurnStatus.COMPLETED, **ids)
    )
    assert write.written
    return turn


def recalled_texts(
    memory: ConversationMemory, session: str, conversation: str, text: str
) -> list[str]:
    state = memory.read_memory(session, conversation)
    return [line.text for line in memory.recall(session, conversation, text, state).lines]


def forget_in_archive(memory: ConversationMemory, session: str, *texts: str) -> None:
    """Run the archive's forgetting of `texts` in a documents' transaction of its own."""
    memory.threads.put_many({}, also=memory.archive.forgetter(session, texts))


def sqlite_rows(store: Any, sql: str) -> list[Any]:
    documents: Any = store.documents  # the SQLite document store: its connection and lock
    with documents.lock:
        return sorted(documents.conn.execute(sql).fetchall())
