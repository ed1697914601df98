"""Plays turns on a system for the evaluation: the context the model was sent for each
turn (without the turn's own message), and the tokens of every call it made."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from evals.contract import Recalled, System
from evals.tokens import count_messages


@dataclass
class Tokens:
    """Token counts of one run: the context of every turn, and what every call cost."""

    context: list[int] = field(default_factory=list)
    memory: int = 0
    """Input and output of every call spent on memory."""
    total: int = 0
    """Input and output of every call (chat requests, their answers and memory)."""
    calls: int = 0

    @property
    def turns(self) -> int:
        return len(self.context)


def context_text(context: Sequence[BaseMessage]) -> str:
    """The text of a context without its last message (the turn's own new input)."""
    return "\n".join(message.text for message in context[:-1])


class Turns:
    """Plays turns on a system and keeps the token counts."""

    def __init__(self, system: System, tokens: Tokens) -> None:
        self.system = system
        self.tokens = tokens
        self.first = len(system.log.records)

    def play(self, session: str, conversation: str, text: str) -> tuple[str, str]:
        """One turn: the answer, and the context the model was sent (without the turn's
        own message)."""
        before = len(self.system.log.chats)
        answer = self.system.turn(session, conversation, text)
        return answer, self._seen(before)

    def recalling(self, session: str, conversation: str, text: str) -> tuple[str, Recalled]:
        """One turn played with `System.recalling`: the context the model was sent
        (without the turn's own message), and what it recalled from other conversations."""
        before = len(self.system.log.chats)
        recalled = self.system.recalling(session, conversation, text)
        return self._seen(before), recalled

    def _seen(self, before: int) -> str:
        chats = self.system.log.chats[before:]
        context = chats[0] if chats else []
        self.tokens.context.append(count_messages(context))
        return context_text(context)

    def settle(self) -> None:
        """Count every call made since the first turn (late memory calls included)."""
        records = self.system.log.records[self.first :]
        self.tokens.calls = len(records)
        self.tokens.memory = sum(c.tokens_in + c.tokens_out for c in records if c.memory)
        self.tokens.total = sum(c.tokens_in + c.tokens_out for c in records)


def report_progress(n: int, total: int, name: str, item: str, turns: int) -> None:
    print(f"[{n}/{total}] {name:<14} {item} ({turns} turns)", file=sys.stderr, flush=True)
