"""The systems an evaluation compares, all driven by the same model.

- `ours`: this agent through `ChatAgent` (chat memory, compaction, long-term memory);
- `full_history`: `create_agent` over a checkpointer, every message kept;
- `last_8`: `create_agent` whose model sees the system prompt, the last 8 messages and
  the new input (truncation);
- `summarization`: `create_agent` + `SummarizationMiddleware(("messages", 10),
  ("messages", 4))`.
Each system keeps one thread per (session, conversation) of a scenario. Every model
request is recorded, so that the evaluation checks what the model was sent.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    SummarizationMiddleware,
    wrap_model_call,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent import ChatAgent
from agent.offline.model import STRUCTURED_OUTPUT_KWARG
from agent.offline.summaries import summary_request
from agent.settings import Settings
from graphs.prompts import AGENT_SYSTEM_PROMPT

SECRET = "evaluation-secret-" + "x" * 32
LAST_MESSAGES = 8
SUMMARY_TRIGGER, SUMMARY_KEEP = 10, 4


@dataclass
class CallLog:
    """The requests a model answered: chat requests (what the context was) and the
    calls spent on memory (compaction, extraction, summaries)."""

    chats: list[list[BaseMessage]] = field(default_factory=list)
    memory_calls: int = 0

    @property
    def calls(self) -> int:
        return len(self.chats) + self.memory_calls


class Recorder(BaseCallbackHandler):
    """Records every chat-model request into a `CallLog`: a chat request (its messages
    are the context under evaluation), or a call spent on memory: structured output
    (compaction, extraction) or a summary of `SummarizationMiddleware`."""

    def __init__(self, log: CallLog) -> None:
        self.log = log

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        params = kwargs.get("invocation_params") or {}
        metadata = kwargs.get("metadata") or {}
        memory = (
            STRUCTURED_OUTPUT_KWARG in params
            or "response_format" in params
            or isinstance(params.get("tool_choice"), dict)
            or metadata.get("lc_source") == "summarization"
            or summary_request(messages[0]) is not None
        )
        if memory:
            self.log.memory_calls += 1
        else:
            self.log.chats.append(list(messages[0]))


def recorded(model: BaseChatModel, log: CallLog) -> BaseChatModel:
    """`model` recording its requests into `log` (the same way for every system)."""
    return model.model_copy(update={"callbacks": [Recorder(log)]})


class System(Protocol):
    """One system under evaluation."""

    name: str
    log: CallLog

    def turn(self, session: str, conversation: str, text: str) -> str:
        """Play one user turn; returns the answer."""
        ...

    def forget(self, session: str, match: str) -> int:
        """Delete the session's long-term items containing `match`; how many."""
        ...

    def close(self) -> None: ...


class Ours:
    """This agent, as its users drive it (`ChatAgent.send`)."""

    name = "ours"

    def __init__(self, model: BaseChatModel, workdir: Path) -> None:
        self.log = CallLog()
        model = recorded(model, self.log)
        settings = Settings(data_dir=workdir / "data", long_term_memory="auto")
        self.agent = ChatAgent(
            database_url=f"sqlite:///{workdir / 'ours.sqlite'}",
            model=model,
            compaction_model=model,
            secret=SECRET,
            settings=settings,
        )
        self.conversations: dict[tuple[str, str], str] = {}

    def turn(self, session: str, conversation: str, text: str) -> str:
        known = self.conversations.get((session, conversation))
        result = self.agent.send(
            text, session_id=session, conversation_id=known, create_conversation=known is None
        )
        self.conversations[(session, conversation)] = result.conversation_id
        # the memory upkeep after the turn, before the next: a scenario is a sequence
        self.agent.wait_for_upkeep()
        return result.text

    def forget(self, session: str, match: str) -> int:
        items = self.agent.memories(session_id=session)["memories"]
        doomed = [item["id"] for item in items if match.casefold() in item["text"].casefold()]
        for memory_id in doomed:
            self.agent.forget(memory_id, session_id=session)
        return len(doomed)

    def close(self) -> None:
        self.agent.close()


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
    ) -> None:
        self.name = name
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

    def forget(self, session: str, match: str) -> int:
        return 0  # no long-term memory: nothing to delete

    def close(self) -> None:
        pass


def summarization(model: BaseChatModel) -> list[AgentMiddleware[Any, Any, Any]]:
    return [
        SummarizationMiddleware(
            model=model, trigger=("messages", SUMMARY_TRIGGER), keep=("messages", SUMMARY_KEEP)
        )
    ]


SYSTEM_NAMES = ("ours", "full_history", "last_8", "summarization")


def build(name: str, model: BaseChatModel, workdir: Path) -> System:
    """A fresh system `name` over `model` (its own storage under `workdir`)."""
    if name == "ours":
        return Ours(model, Path(tempfile.mkdtemp(dir=workdir)))
    middleware: dict[str, Callable[[BaseChatModel], list[AgentMiddleware[Any, Any, Any]]]] = {
        "full_history": lambda model: [],
        "last_8": lambda model: [last_messages],
        "summarization": summarization,
    }
    return Peer(name, model, middleware[name])
