"""`SummarizingOfflineModel`: the offline model answering a summarization request from
LangChain's `SummarizationMiddleware` with the same quoted lines the offline compactor
writes. Only a peer of the evaluations asks for one, so the product's model does not.

The middleware asks with one message: its instructions, then the history to summarise
between `<messages>` tags, one `<message type="human|ai">` element each (XML-escaped).
An offline stand-in that answered with its usual echo would make a peer using the
middleware look worse than it is; this answers as the offline compactor does, so every
system measured with the offline model gets the same summariser.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from agent.offline import OfflineChatModel
from agent.offline.compaction import folded_summary
from agent.offline.local import ModelCall

SUMMARY_REQUEST_MARKER = "Messages to summarize:"
SUMMARY_ANSWER = "## SESSION INTENT\n{intent}\n\n## SUMMARY\n{summary}"
INTENT_CHARS = 200
_MESSAGES = re.compile(r"<messages>(?P<body>.*)</messages>", re.DOTALL)
_MESSAGE = re.compile(r'<message type="(?P<type>[a-z]+)"[^>]*>(?P<text>.*?)</message>', re.DOTALL)
_ROLES = {"human": "user", "ai": "assistant"}
_CARRIED_SUMMARY = "Here is a summary of the conversation to date:"


def summary_request(messages: Sequence[BaseMessage]) -> list[tuple[str, str]] | None:
    """The (role, text) history a summarization request asks about, or None when the
    messages are not one."""
    if len(messages) != 1 or not isinstance(messages[0], HumanMessage):
        return None
    text = messages[0].text
    if SUMMARY_REQUEST_MARKER not in text:
        return None
    found = _MESSAGES.search(text)
    if found is None:
        return None
    history = []
    for item in _MESSAGE.finditer(found.group("body")):
        role = _ROLES.get(item.group("type"))
        if role is not None:
            history.append((role, html.unescape(item.group("text")).strip()))
    return history


def summary_answer(history: Sequence[tuple[str, str]]) -> str:
    """`history` as the offline compactor's lines; an earlier summary that the history
    carries (as its first message) is merged, not repeated."""
    carried, intent = "", ""
    rest = list(history)
    if rest and rest[0][1].startswith(_CARRIED_SUMMARY):
        earlier = rest.pop(0)[1].removeprefix(_CARRIED_SUMMARY).strip()
        head, _, carried = earlier.partition("## SUMMARY\n")
        intent = head.removeprefix("## SESSION INTENT").strip()
    if not intent:
        first = next((text for role, text in rest if role == "user"), "")
        intent = " ".join(first.split())[:INTENT_CHARS]
    digest = folded_summary(carried, rest)
    return SUMMARY_ANSWER.format(intent=intent or "None", summary=digest)


class SummarizingOfflineModel(OfflineChatModel):
    """The offline model, with the summaries a `SummarizationMiddleware` asks for."""

    def respond(self, call: ModelCall) -> AIMessage:
        history = summary_request(call.messages)
        if history is None:
            return super().respond(call)
        meta = {"model_name": self.model_name}
        return AIMessage(content=summary_answer(history), response_metadata=meta)
