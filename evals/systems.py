"""The systems an evaluation compares, all driven by the same model.

- `ours`: this agent through `ChatAgent` (chat memory, compaction, long-term memory;
  `evals.ours`);
- `ours_oracle`, `ours_hostile`: the same agent whose extraction is a scripted model
  playing the scenario's annotations (`evals.oracle`), to measure what comes after
  extraction; the hostile one also proposes what the gate must refuse (scenarios only);
- `bm25_history`: `create_agent` whose model sees the last 8 messages and, within a
  2,000-token recall budget, the past user and assistant turns of the whole session
  that BM25 ranks best for the new message (a baseline that carries things across
  conversations with no memory logic at all);
- `full_history`: `create_agent` over a checkpointer, every message kept;
- `last_8`: `create_agent` whose model sees the system prompt, the last 8 messages and
  the new input (truncation);
- `summarization`: `create_agent` + `SummarizationMiddleware(("messages", 10),
  ("messages", 4))`.
Each system keeps one thread per (session, conversation) of a scenario. Every model
request is recorded with its tokens in and out (`evals.recording`), so that the
evaluation checks what the model was sent and counts every call, not only the chat
request; a turn played with `recalling` also says what its context brought back from
the session's other conversations.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    SummarizationMiddleware,
    wrap_model_call,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from rank_bm25 import BM25Okapi

from agent.offline import OfflineChatModel
from evals.contract import Metric, Recalled, System
from evals.dialogue import content_words
from evals.offline_summaries import SummarizingOfflineModel
from evals.oracle import GateOutcome, Script, scripted
from evals.ours import Ours
from evals.recording import CallLog, recorded
from evals.scenario import Scenario
from evals.tokens import count_text
from graphs.prompts import AGENT_SYSTEM_PROMPT

LAST_MESSAGES = 8
SUMMARY_TRIGGER, SUMMARY_KEEP = 10, 4
RECALL_BUDGET_TOKENS = 2_000
"""What `bm25_history` may add from past turns: the recall budget of a long-term memory."""


@wrap_model_call
def last_messages(request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
    """Truncation: the model sees the last `LAST_MESSAGES` messages and the new input."""
    return handler(request.override(messages=request.messages[-(LAST_MESSAGES + 1) :]))


class Peer:
    """A `create_agent` agent with the given middleware, one thread per conversation."""

    def __init__(
        self,
        name: str,
        model: BaseChatModel,
        middleware: Callable[[BaseChatModel], list[AgentMiddleware[Any, Any, Any]]],
        by_construction: frozenset[Metric] = frozenset({"leakage", "deletion", "store"}),
    ) -> None:
        self.name = name
        self.by_construction = by_construction
        self.log = CallLog()
        model = recorded(model, self.log)
        self.agent = create_agent(
            model=model,
            tools=[],
            system_prompt=SystemMessage(content=AGENT_SYSTEM_PROMPT),
            middleware=middleware(model),
            checkpointer=InMemorySaver(),
        )

    def turn(self, session: str, conversation: str, text: str) -> str:
        config: Any = {"configurable": {"thread_id": f"{session}:{conversation}"}}
        output = self.agent.invoke({"messages": [HumanMessage(content=text)]}, config)
        return str(output["messages"][-1].text)

    def recalling(self, session: str, conversation: str, text: str) -> Recalled:
        self.turn(session, conversation, text)
        return Recalled()  # it sees its own conversation only

    def forget(self, session: str, match: str) -> int:
        return 0  # no long-term memory: nothing to delete

    def drop(self, session: str, conversation: str) -> None:
        pass  # a thread never reused: nothing else sees it

    def memories(self, session: str) -> list[str] | None:
        return None

    def gate(self, sessions: Iterable[str]) -> GateOutcome | None:
        return None

    def close(self) -> None:
        pass


def summarization(model: BaseChatModel) -> list[AgentMiddleware[Any, Any, Any]]:
    if type(model) is OfflineChatModel:  # its summaries: the offline compactor's lines
        model = SummarizingOfflineModel(**dict(model))
    return [
        SummarizationMiddleware(
            model=model, trigger=("messages", SUMMARY_TRIGGER), keep=("messages", SUMMARY_KEEP)
        )
    ]


def bm25_words(text: str) -> list[str]:
    """BM25 terms: content words, and Chinese as character pairs (a single character
    says little; a pair is close to a word)."""
    words = content_words(text)
    terms = [w for w in words if len(w) > 1 or w.isascii()]
    terms += [a + b for a, b in itertools.pairwise(words) if not (a + b).isascii()]
    return terms


@dataclass(frozen=True)
class Line:
    conversation: str
    role: str
    text: str
    terms: tuple[str, ...] = field(init=False)
    """Its BM25 terms, found once: every search ranks every past line."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", tuple(bm25_words(self.text)) or ("\x00",))


class Bm25History:
    """A baseline that can carry things across conversations without any memory logic:
    every past user and assistant turn of the session is searched with BM25 (the new
    message is the query), and the best lines within `RECALL_BUDGET_TOKENS` are shown
    beside the current conversation's last `LAST_MESSAGES` messages. A forget removes
    the lines that contain the match (its memory is the transcript)."""

    name = "bm25_history"
    by_construction: frozenset[Metric] = frozenset({"leakage", "store"})

    def __init__(self, model: BaseChatModel) -> None:
        self.log = CallLog()
        self.lines: dict[str, list[Line]] = {}
        self.recall = ""
        self.recalled = Recalled()
        model = recorded(model, self.log)

        @wrap_model_call
        def with_recall(
            request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
        ) -> Any:
            system = AGENT_SYSTEM_PROMPT
            if self.recall:
                system += "\n\nFrom earlier turns with this user:\n" + self.recall
            return handler(
                request.override(
                    messages=request.messages[-(LAST_MESSAGES + 1) :],
                    system_message=SystemMessage(content=system),
                )
            )

        self.agent = create_agent(
            model=model, tools=[], middleware=[with_recall], checkpointer=InMemorySaver()
        )
        self.turns: dict[tuple[str, str], int] = {}

    def search(self, session: str, conversation: str, query: str) -> list[Line]:
        """The best past lines for `query`, in the order they were said, within budget;
        the current conversation's last messages are left out (they are shown anyway)."""
        lines = self.lines.get(session, [])
        mine = [i for i, line in enumerate(lines) if line.conversation == conversation]
        visible = set(mine[-LAST_MESSAGES:])
        candidates = [i for i in range(len(lines)) if i not in visible]
        terms = bm25_words(query)
        if not candidates or not terms:
            return []
        corpus = [lines[i].terms for i in candidates]
        scores = BM25Okapi(corpus).get_scores(terms)
        ranked = sorted(
            ((score, i) for i, score in zip(candidates, scores, strict=True) if score > 0),
            key=lambda pair: (-pair[0], pair[1]),
        )
        chosen, used = [], 0
        for _, i in ranked:
            cost = count_text(lines[i].text) + 3
            if used + cost <= RECALL_BUDGET_TOKENS:
                chosen.append(i)
                used += cost
        return [lines[i] for i in sorted(chosen)]

    def turn(self, session: str, conversation: str, text: str) -> str:
        found = self.search(session, conversation, text)
        self.recall = "\n".join(f"{line.role}: {line.text}" for line in found)
        self.recalled = Recalled(len(found), count_text(self.recall))
        config: Any = {"configurable": {"thread_id": f"{session}:{conversation}"}}
        output = self.agent.invoke({"messages": [HumanMessage(content=text)]}, config)
        answer = str(output["messages"][-1].text)
        self.lines.setdefault(session, []).extend(
            [Line(conversation, "user", text), Line(conversation, "assistant", answer)]
        )
        return answer

    def recalling(self, session: str, conversation: str, text: str) -> Recalled:
        self.turn(session, conversation, text)
        return self.recalled

    def forget(self, session: str, match: str) -> int:
        lines = self.lines.get(session, [])
        kept = [line for line in lines if match.casefold() not in line.text.casefold()]
        self.lines[session] = kept
        return len(lines) - len(kept)

    def drop(self, session: str, conversation: str) -> None:
        lines = self.lines.get(session, [])
        self.lines[session] = [line for line in lines if line.conversation != conversation]

    def memories(self, session: str) -> list[str] | None:
        return None  # the transcript itself: it keeps everything by design

    def gate(self, sessions: Iterable[str]) -> GateOutcome | None:
        return None

    def close(self) -> None:
        pass


SCRIPTED: dict[str, Script] = {"ours_oracle": "oracle", "ours_hostile": "hostile"}
"""Systems whose extraction plays a scenario's annotations: they run on scenarios only."""
SYSTEM_NAMES = ("ours", *SCRIPTED, "bm25_history", "full_history", "last_8", "summarization")


def build(
    name: str,
    model: BaseChatModel,
    workdir: Path,
    clock: Callable[[], datetime] | None = None,
    scenario: Scenario | None = None,
) -> System:
    """A fresh system `name` over `model` (its own storage under `workdir`; `clock` dates
    what `ours` stores, when given; a scripted system plays `scenario`'s annotations)."""
    if name == "ours":
        return Ours(model, Path(tempfile.mkdtemp(dir=workdir)), clock)
    if name in SCRIPTED:
        if scenario is None:
            raise ValueError(f"{name} plays a scenario's annotations: give the scenario")
        script = scripted(scenario, SCRIPTED[name])
        return Ours(model, Path(tempfile.mkdtemp(dir=workdir)), clock, name=name, script=script)
    if name == "bm25_history":
        return Bm25History(model)
    if name == "full_history":  # keeps every message: nothing to lose
        return Peer(
            name, model, lambda model: [], frozenset({"fidelity", "leakage", "deletion", "store"})
        )
    middleware: dict[str, Callable[[BaseChatModel], list[AgentMiddleware[Any, Any, Any]]]] = {
        "last_8": lambda model: [last_messages],
        "summarization": summarization,
    }
    return Peer(name, model, middleware[name])
