"""The hydration DTO (what a client may see of a conversation) and the forbidden-key guard."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from memory.errors import FORBIDDEN_KEY, ForbiddenKeyError
from memory.limits import SUMMARY_PREVIEW_CHARS
from memory.schema import ThreadState
from memory.text import clamp

FORBIDDEN_KEYS = frozenset(
    {
        "apiKey",
        "checkpoint",
        "cookie",
        "deliveryChain",
        "displayKind",
        "graphState",
        "mcpEnvelope",
        "providerConfig",
        "providerResponse",
        "rawCheckpoint",
        "rawPrompt",
        "resourceContent",
        "runtimeArtifact",
        "sessionId",
        "source",
        "stack",
        "subagentInvocation",
        "subagentResult",
        "toolArgs",
        "toolCall",
        "toolMessage",
        "toolResult",
        "turnId",
        "tasklist",
        "workflowProgress",
        "threadId",
    }
)


@functools.lru_cache(maxsize=1024)
def _normal(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


_FORBIDDEN_NORMAL = frozenset(_normal(key) for key in FORBIDDEN_KEYS)
_SCALARS = (str, int, float, bool, type(None))


def assert_client_safe(payload: object, path: str = "$") -> None:
    """Raise `ForbiddenKeyError` (naming its path) if any mapping key in `payload` is a
    forbidden key, in any spelling (`threadId`, `THREAD-ID`); values are not inspected,
    so text that mentions the words is fine."""
    if isinstance(payload, dict | Mapping):
        for key, value in payload.items():
            if isinstance(key, str) and _normal(key) in _FORBIDDEN_NORMAL:
                raise ForbiddenKeyError(FORBIDDEN_KEY.format(key=key, path=path))
            if not isinstance(value, _SCALARS):
                assert_client_safe(value, f"{path}.{key}")
    elif isinstance(payload, list | tuple | set | frozenset):
        for index, item in enumerate(payload):
            if not isinstance(item, _SCALARS):
                assert_client_safe(item, f"{path}[{index}]")


def hydration_dto(conversation_id: str, state: ThreadState | None) -> dict[str, Any]:
    """What `hydrate` returns: the conversation's visible memory (`state` None: nothing
    stored yet), checked by the guard. A page shows `summary` whole where the folded
    messages were."""
    current = state or ThreadState()
    messages = [
        {"id": m.id, "role": m.role, "text": m.text, "createdAt": m.created_at.isoformat()}
        for m in current.messages
    ]
    dto: dict[str, Any] = {"conversationId": conversation_id, "messages": messages}
    if current.summary:
        dto["summaryPreview"] = clamp(current.summary, SUMMARY_PREVIEW_CHARS)
        dto["summary"] = current.summary
    dto |= {
        "summaryVersion": current.summary_version,
        "pinnedDecisions": list(current.pinned_decisions),
        "openQuestions": list(current.open_questions),
        "upkeep": current.upkeep,
        "restored": state is not None
        and bool(state.messages or state.summary or state.pinned_decisions),
    }
    assert_client_safe(dto)
    return dto
