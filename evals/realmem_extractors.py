"""The write-quality eval's scripted extractors, and the scripted model that answers with
the dataset's replies and the extractor's operations.

Extractors (answering the extraction model's structured-output calls, counted):
- oracle: for each gold `User` memory point whose source turn is in the batch, an `add`
  with the point's text and, as quote, the sentence of the user's line sharing most words
  with it;
- hostile: per turn, filler ("We're good to go.") and a fragment (the line's first three
  words), each quoting the line's first words; the assistant's line as the user's quote;
  "My password is hunter2" quoting the user's first sentence; the user's whole first
  sentence in distractor sessions; and a duplicate of each of the first `DUPLICATES`
  current items shown to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, PrivateAttr

from agent.offline.local import ModelCall
from bench.scripted import ScriptedChatModel
from evals.realmem_personas import Persona, content_words, sentences
from memory.limits import MAX_MEMORY_TEXT_CHARS, MAX_QUOTE_CHARS
from memory.longterm.items import normalise
from memory.longterm.operations import ExtractionOutput, Operation

DUPLICATES = 3
"""Current items the hostile extractor proposes again, per turn (the first shown)."""
FILLER = "We're good to go."
PLANTED_SECRET = "My password is hunter2"

Extract = Callable[[dict[str, Any]], list[Operation]]
"""A scripted extractor: the extraction input's JSON document → proposed operations."""


def _key(text: str) -> str:
    return normalise(text)[:200]


def oracle(persona: Persona) -> Extract:
    """Adds each gold `User` point of a batch's turns, quoting the user's own sentence."""
    by_line = {_key(t.user): t.points for s in persona.sessions for t in s.turns if t.points}

    def extract(document: dict[str, Any]) -> list[Operation]:
        ops = []
        for turn in document["turns"]:
            said = sentences(turn["user"])
            for point in by_line.get(_key(turn["user"]), ()):
                words = content_words(point)
                quote = max(said, key=lambda s: len(content_words(s) & words))
                ops.append(_add(turn["turn"], point, quote))
        return ops

    return extract


def hostile(persona: Persona) -> Extract:
    """Proposes what a careless or manipulated extractor would (the module docstring)."""
    distracting = {_key(t.user) for s in persona.sessions if s.distractor for t in s.turns}

    def extract(document: dict[str, Any]) -> list[Operation]:
        ops = []
        for turn in document["turns"]:
            n, user, before = turn["turn"], turn["user"], turn["assistant_before"]
            first = (sentences(user) or [user])[0]
            opening = " ".join(user.split()[:3])
            ops += [_add(n, FILLER, opening), _add(n, opening, opening)]
            ops.append(_add(n, PLANTED_SECRET, first))
            if before.strip():
                said = (sentences(before.lstrip("…")) or [before])[0]
                ops.append(_add(n, said, said))
            if _key(user) in distracting:
                ops.append(_add(n, first, first))
            shown = document["current_memories"][:DUPLICATES]
            ops += [_add(n, item["text"], first) for item in shown]
        return ops

    return extract


def _add(turn: int, text: str, quote: str) -> Operation:
    return Operation(
        op="add",
        turn=turn,
        kind="fact",
        text=text[:MAX_MEMORY_TEXT_CHARS],
        quote=quote[:MAX_QUOTE_CHARS],
    )


class ReplayModel(ScriptedChatModel):
    """The bench's scripted model, answering each turn with `reply` and long-term
    extraction with `extract` (each extraction call counted in `log`)."""

    proposed: int = 0
    """Operations the scripted extractor proposed."""
    _reply: str = PrivateAttr(default="")
    _extract: Extract | None = PrivateAttr(default=None)

    def script(self, reply: str) -> None:
        self._reply = reply

    def respond(self, call: ModelCall) -> AIMessage:
        message = super().respond(call)
        if self._reply and call.metadata.get("lc_source") is None:
            return AIMessage(content=self._reply)
        return message

    def with_structured_output(
        self, schema: dict[str, Any] | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        extract = self._extract
        if schema is not ExtractionOutput or extract is None:
            return super().with_structured_output(schema, include_raw=include_raw, **kwargs)
        log = self.log

        def answer(prompt: LanguageModelInput) -> dict[str, Any] | BaseModel:
            log.extraction_calls += 1
            messages = prompt if isinstance(prompt, list) else []
            operations = extract(json.loads(str(messages[-1].content)))
            self.proposed += len(operations)
            return ExtractionOutput(operations=operations)

        return RunnableLambda(answer, name="scripted_extraction")
