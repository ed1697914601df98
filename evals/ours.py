"""This agent as an evaluated system (`ours`, and the scripted `ours_oracle` and
`ours_hostile`): driven through `ChatAgent` as its users drive it, with every model
request recorded (`evals.recording`) and what its write gate refuses counted."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from agent import ChatAgent
from agent.models import at_temperature_zero
from agent.settings import Settings
from evals.contract import Metric, Recalled
from evals.oracle import GateOutcome, ScriptedExtraction
from evals.recording import CallLog, recorded
from evals.tokens import count_text
from memory.context import RECALL_BLOCK_ID
from memory.longterm.gate import WritePlan

SECRET = "evaluation-secret-" + "x" * 32


class Ours:
    """This agent, as its users drive it (`ChatAgent.send`), counting what its write gate
    refuses. With a `script` (`evals.oracle`), its model is the offline one answering
    extraction requests with that script (`long_term_memory="model"`), whatever `model`
    was given."""

    by_construction: frozenset[Metric] = frozenset()

    def __init__(
        self,
        model: BaseChatModel,
        workdir: Path,
        clock: Callable[[], datetime] | None = None,
        *,
        name: str = "ours",
        script: ScriptedExtraction | None = None,
    ) -> None:
        self.name = name
        self.log = CallLog()
        self.script = script
        self.refused: Counter[str] = Counter()
        model = recorded(script.model() if script is not None else model, self.log)
        settings = Settings(
            data_dir=workdir / "data", long_term_memory="auto" if script is None else "model"
        )
        self.agent = ChatAgent(
            database_url=f"sqlite:///{workdir / 'ours.sqlite'}",
            model=model,
            compaction_model=at_temperature_zero(model),
            secret=SECRET,
            settings=settings,
        )
        if clock is not None:
            # the memory dates what it stores (archived lines too) by this clock: a
            # replayed history keeps the dates it was said on
            self.agent.memory.clock = clock
        self.conversations: dict[tuple[str, str], str] = {}
        self._count_refusals()

    def _count_refusals(self) -> None:
        """Add up what the write gate refused in each upkeep's extraction: the
        `WritePlan` that `remember_turns` returns is what the upkeep's `memory` event of
        stage `remember` reports (`refused`, by reason). Read here rather than from a
        stream, which relays every answer token across threads (twice the time)."""
        long_term = self.agent.long_term
        remember = long_term.remember_turns

        def counted(*args: Any, **kwargs: Any) -> WritePlan:
            write = remember(*args, **kwargs)
            self.refused.update(write.refusals)
            return write

        long_term.remember_turns = counted  # type: ignore[method-assign]

    def turn(self, session: str, conversation: str, text: str) -> str:
        known = self.conversations.get((session, conversation))
        result = self.agent.send(
            text, session_id=session, conversation_id=known, create_conversation=known is None
        )
        self.conversations[(session, conversation)] = result.conversation_id
        # the memory upkeep after the turn, before the next: a scenario is a sequence
        self.agent.wait_for_upkeep()
        return result.text

    def recalling(self, session: str, conversation: str, text: str) -> Recalled:
        """The turn streamed: its `memory` event of stage `recall` names the lines
        recalled; their block is the one the model was sent under `RECALL_BLOCK_ID`."""
        known = self.conversations.get((session, conversation))
        before = len(self.log.chats)

        async def stream() -> tuple[str, int]:
            opened, lines = known or "", 0
            async for event in self.agent.astream(
                text, session_id=session, conversation_id=known, create_conversation=not known
            ):
                if event["event"] == "conversation":
                    opened = event["conversationId"]
                elif event["event"] == "memory" and event["stage"] == "recall":
                    lines = len(event.get("lines") or ())
                elif event["event"] == "error":
                    raise RuntimeError(f"{event['code']}: {event['message']}")
            return opened, lines

        opened, lines = asyncio.run(stream())
        self.conversations[(session, conversation)] = opened
        self.agent.wait_for_upkeep()
        sent = self.log.chats[before] if len(self.log.chats) > before else []
        block = next((m.text for m in sent if m.id == RECALL_BLOCK_ID), "")
        return Recalled(lines, count_text(block) if block else 0)

    def forget(self, session: str, match: str) -> int:
        items = self.agent.memories(session_id=session)["memories"]
        doomed = [item["id"] for item in items if match.casefold() in item["text"].casefold()]
        for memory_id in doomed:
            self.agent.forget(memory_id, session_id=session)
        return len(doomed)

    def drop(self, session: str, conversation: str) -> None:
        known = self.conversations.pop((session, conversation), None)
        if known is not None:
            self.agent.delete_conversation(session_id=session, conversation_id=known)

    def memories(self, session: str) -> list[str] | None:
        return [item["text"] for item in self.agent.memories(session_id=session)["memories"]]

    def gate(self, sessions: Iterable[str]) -> GateOutcome:
        """The refusals, and (with a hostile script) whether anything it planted was
        stored, as a current item or as history."""
        planted = self.script.planted if self.script is not None else set()
        stored = [
            item["text"].casefold()
            for session in sessions
            for listing in [self.agent.memories(session_id=session, include_history=True)]
            for item in [*listing["memories"], *listing["history"]]
        ]
        left = sum(any(text.casefold() in item for item in stored) for text in planted)
        attacks = self.script.attacks if self.script is not None else Counter()
        return GateOutcome(Counter(self.refused), Counter(attacks), len(planted), left)

    def close(self) -> None:
        self.agent.close()
