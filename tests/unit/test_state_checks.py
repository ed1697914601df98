"""Checks of short-term state that need no second process: compaction during a pending review never
re-runs a finished task, and a revoked preference leaves no trace in the next context.
(The crash checks are in tests/integration/test_recovery.py, retention in
tests/unit/test_retention.py.)"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.messages import SystemMessage

from agent import ChatAgent
from agent.offline import OfflineChatModel
from graphs.prompts import AGENT_SYSTEM_PROMPT
from graphs.tasklist import CheckIssue, SelfCheck, TasklistTaskResult
from graphs.upkeep import structured_compactor
from memory import ThreadState
from memory.context import LONG_TERM_BLOCK_ID, PINNED_BLOCK_ID, SUMMARY_BLOCK_ID
from memory.schema import ChatThreadMessage
from tests.context_support import overwrite_memory
from tests.unit.tasklist_support import done, plan, requests, scripted, start, summary, texts

pytestmark = pytest.mark.sqlite_only

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def test_compaction_during_a_pending_review_never_reruns_a_finished_task(
    open_agent: Callable[..., ChatAgent],
) -> None:
    issue = CheckIssue(task_id="t2", description="Lint rules missing", blocking=True)
    model = scripted(plan("Set up CI", "Add linting"), done(), done())
    model.structured += [SelfCheck(passed=False, issues=[issue]), summary("Linting is not done.")]
    agent = open_agent(model, compaction_model=OfflineChatModel())
    cid, _ = start(agent)
    review = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert review.status == "interrupted" and len(requests(model, TasklistTaskResult)) == 2
    # the conversation's memory fills and is compacted while the review waits
    filler = [
        ChatThreadMessage(
            id=f"m{n}", role="user" if n % 2 == 0 else "assistant", text=f"note {n}", created_at=NOW
        )
        for n in range(10)
    ]
    overwrite_memory(agent.memory, "s1", cid, ThreadState(messages=filler))
    compaction = agent.memory.compact("s1", cid, structured_compactor(OfflineChatModel()))
    assert compaction.status.value == "succeeded"
    result = agent.resume({"action": "accept"}, session_id="s1", conversation_id=cid)
    assert result.status == "blocked"
    assert len(requests(model, TasklistTaskResult)) == 2  # no finished task ran again
    assert texts(agent, cid)[-2:] == ["Set up CI. Add linting. Write the docs.", result.text]


def memory_blocks(model: OfflineChatModel) -> dict[str, str]:
    """The memory blocks of the last chat request (not a compaction or extraction call)."""
    chats = [c for c in model.calls if c and c[0].text == AGENT_SYSTEM_PROMPT]
    wanted = (LONG_TERM_BLOCK_ID, PINNED_BLOCK_ID, SUMMARY_BLOCK_ID)
    return {m.id: m.text for m in chats[-1] if isinstance(m, SystemMessage) and m.id in wanted}


def test_a_revoked_preference_leaves_no_trace_in_the_next_context(
    open_agent: Callable[..., ChatAgent],
) -> None:
    model = OfflineChatModel(record=True)
    agent = open_agent(model, long_term_memory="explicit")

    def send(text: str, **where: Any) -> str:
        # each turn after the memory upkeep of the one before: the sequence is the test's
        result = agent.send(text, session_id="s", **where)
        assert agent.wait_for_upkeep(30)
        return result.conversation_id

    said = "From now on, always answer in Chinese. Remember that I want answers in Chinese."
    cid = send(said, create_conversation=True)
    for n in range(4):  # enough turns for compaction to fold the request
        send(f"Question {n} about the rollout plan.", conversation_id=cid)
    send(
        "I no longer want answers in Chinese. Forget that I want answers in Chinese.",
        conversation_id=cid,
    )
    blocks = memory_blocks(model)  # what the revoking turn itself was sent
    assert "Chinese" in blocks[SUMMARY_BLOCK_ID] and "Chinese" in blocks[LONG_TERM_BLOCK_ID]
    for n in range(4):  # the revocation is folded by the next compaction
        send(f"Another question {n}.", conversation_id=cid)
    blocks = memory_blocks(model)
    assert "Chinese" not in blocks.get(PINNED_BLOCK_ID, "")
    assert LONG_TERM_BLOCK_ID not in blocks
    assert "always answer in Chinese" not in blocks.get(SUMMARY_BLOCK_ID, "")
    assert agent.memories(session_id="s")["memories"] == []
