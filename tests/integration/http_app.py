"""App factories for HTTP tests: the real app over a `ChatAgent` with test models.

`uvicorn --factory tests.integration.http_app:<factory>`; settings from the environment.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

import psycopg
from fastapi import FastAPI
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from agent.api import create_app
from agent.offline import DEFAULT_HANDLERS, OfflineChatModel, StructuredHandler
from agent.offline.local import ModelCall
from agent.service import ChatAgent
from agent.settings import Settings
from memory.longterm import ExtractionOutput, Operation
from tests.fakes import PacedModel, ScriptedModel
from tests.gates import Gated, GatedModel

OUTAGE_TRIGGER = "take the database away"
OUTAGE_SECONDS = 10.0


def create() -> FastAPI:
    """Paced answers; messages containing "slow" stream slowly, "gate-NAME" wait."""
    return create_app(
        lambda: ChatAgent(model=GatedModel(slow_pause=0.3), long_term_memory="explicit")
    )


def create_for_workers() -> FastAPI:
    """Paced answers; compaction always fails, so every turn stays in memory verbatim
    (the hard-cap fallback folds old turns into summary lines, never drops them)."""
    return create_app(
        lambda: ChatAgent(
            model=GatedModel(slow_pause=0.3),
            compaction_model=ScriptedModel(),
            long_term_memory="explicit",
        )
    )


class OutageModel(PacedModel):
    """Answers normally, but a message with `OUTAGE_TRIGGER` first takes the database
    away (no connections allowed, existing ones terminated) for `OUTAGE_SECONDS`."""

    def _outage(self) -> None:
        url = Settings.from_env().database_url
        head, _, name = url.rpartition("/")
        admin = f"{head}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )

        def restore() -> None:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')

        threading.Timer(OUTAGE_SECONDS, restore).start()

    def respond(self, call: ModelCall) -> AIMessage:
        if call.messages and OUTAGE_TRIGGER in call.messages[-1].text:
            self._outage()
        return super().respond(call)


def create_with_outage() -> FastAPI:
    return create_app(lambda: ChatAgent(model=OutageModel(), long_term_memory="explicit"))


SLOW_WORD = "slowly"
SLOW_PAUSE = 0.05


class PacedOfflineModel(Gated, OfflineChatModel):
    """The offline model (answers, tools, task lists, compaction, all unchanged), whose
    answer pauses `SLOW_PAUSE` seconds before each streamed piece when the person's
    latest message contains `SLOW_WORD`: a page test can watch tokens arrive one by one
    and find the conversation busy while they do (or hold it at a gate, tests/gates.py)."""

    def pause(self, call: ModelCall) -> float:
        humans = [m.text for m in call.messages if isinstance(m, HumanMessage)]
        return SLOW_PAUSE if humans and SLOW_WORD in humans[-1] else 0.0


def create_paced_offline() -> FastAPI:
    """The offline model, paced for messages that ask for it (the chat page's tests)."""
    return create_app(lambda: ChatAgent(model=PacedOfflineModel(), long_term_memory="explicit"))


LISBON = "I live in Lisbon and I work as a data engineer."
PORTO = "I moved to Porto."


def scripted_extraction(messages: Sequence[BaseMessage]) -> ExtractionOutput:
    """A scripted extraction model: a turn saying `LISBON` adds where the person lives
    and what they do, a later `PORTO` updates where they live (in the same batch too)."""
    document = json.loads(str(messages[-1].content))
    home = next((m["id"] for m in document["current_memories"] if "Lisbon" in m["text"]), None)
    operations = []
    for n, turn in enumerate(document["turns"], start=1):
        if LISBON in turn["user"]:
            operations += [
                Operation(op="add", turn=n, quote=quote, kind="fact", text=quote)
                for quote in ("I live in Lisbon", "I work as a data engineer.")
            ]
            home = f"turn:{n}:1"  # the batch's name for the first add of turn n
        elif turn["user"] == PORTO and home is not None:
            operations.append(
                Operation(op="update", turn=n, quote=PORTO, id=home, kind="fact", text=PORTO)
            )
    return ExtractionOutput(operations=operations)


def create_paced_offline_extracting() -> FastAPI:
    """`create_paced_offline` whose long-term memory has a model: `scripted_extraction`
    (offline, items come from explicit requests only, which never change each other)."""
    handlers: dict[type[BaseModel], StructuredHandler] = {
        **DEFAULT_HANDLERS,
        ExtractionOutput: scripted_extraction,
    }
    return create_app(
        lambda: ChatAgent(
            model=PacedOfflineModel(structured_handlers=handlers),
            long_term_memory="model",
            # each turn's upkeep extracts: the page shows a change on the turn that made it
            settings=Settings(extraction_batch_turns=1),
        )
    )
