"""The upkeep graph: `read_owed → [embed] → [remember] → [compact] → settle`, paying what
a written turn left owed on its conversation's record (`finalize` records it in the turn's
own transaction): the archived lines' vectors, the extraction, a compaction.

With `batch_from` a model's extraction may wait for its batch (`_extraction_due`);
meanwhile only explicit requests apply. It runs inline as the agent graph's `upkeep`
node, or after the turn (`agent.upkeep_runner`). A failure never fails the turn: the
record says `failed`, and what is unpaid stays on it for the next upkeep.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Annotated, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langgraph.channels import UntrackedValue
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from graphs.bounded import ModelTimeout
from graphs.events import emit_memory
from graphs.state import turn_ids
from graphs.structured import StructuredOutputError, StructuredPolicy, StructuredStats, as_policy
from memory import ThreadState
from memory.analysis import redact_secrets
from memory.compaction import (
    COMPACTION_MAX_TOKENS,
    CompactionOutput,
    CompactionStatus,
    InvalidCompactionOutput,
)
from memory.conversations import ConversationMemory
from memory.limits import EXTRACTION_BATCH_TURNS, MAX_OWED_IN_ONE_CALL
from memory.longterm import OwedTurn
from memory.longterm.explicit import is_explicit
from memory.longterm.extraction import (
    EXPLICIT_EXTRACTOR,
    EXTRACTION_MAX_TOKENS,
    Extractor,
    InvalidExtractionOutput,
)
from memory.longterm.operations import ExtractionOutput
from memory.longterm.store import LongTermMemory

logger = logging.getLogger(__name__)


class UpkeepInput(TypedDict, total=False):
    """The ids come from the run's context (`turn_ids`): no inline checkpoint holds them."""

    batch_from: datetime
    """Owed turns since then may wait for their batch (absent: extract now)."""
    batch_turns: int
    """Owed turns that make the batch due (`EXTRACTION_BATCH_TURNS` unless given)."""


class UpkeepOutput(TypedDict, total=False):
    """What the upkeep tells the turn (and its caller) it did (each replaced)."""

    upkeep: str
    """done | failed | pending (a turn that landed meanwhile owes more)."""
    compaction: str
    """succeeded | failed | fallback, when it compacted."""
    remembered: list[str]
    """Texts of the long-term items it added or said again."""
    degraded: bool
    """Set when a step failed (the turn stands)."""
    waiting: bool
    """Set when owed turns were left to wait for their batch."""


class UpkeepState(UpkeepInput, UpkeepOutput, total=False):
    """The upkeep's working state: never checkpointed (memory stays out of run threads)."""

    record: Annotated[ThreadState, UntrackedValue(ThreadState)]
    """The conversation's memory as `read_owed` found it, where compaction starts."""
    failed: Annotated[bool, UntrackedValue(bool)]
    """Whether a step of this upkeep failed."""
    embedded: Annotated[str, UntrackedValue(str)]
    """The user message up to which it embedded archived lines ("": none)."""
    paid: Annotated[list[str], UntrackedValue(list)]
    """The owed turns whose extraction this upkeep paid."""
    batching: Annotated[bool, UntrackedValue(bool)]
    """Whether owed turns were left to wait for their batch."""
    settled: Annotated[ThreadState | None, UntrackedValue(ThreadState)]
    """The memory as compaction stored it with the upkeep's end (None: `settle` stores it)."""


UpkeepGraph = StateGraph[UpkeepState, None, UpkeepInput, UpkeepOutput]


def owed_turns(record: ThreadState, conversation_id: str) -> list[OwedTurn]:
    """The turns owed an extraction, each with the assistant's line before it (if still
    held), the user's text redacted as the archive keeps it: no extractor sees a secret."""
    before = {
        message.id: previous.text
        for previous, message in zip(record.messages, record.messages[1:], strict=False)
        if previous.role == "assistant"
    }
    return [
        OwedTurn(
            message_id=message.id,
            conversation_id=conversation_id,
            user_text=redact_secrets(message.text),
            assistant_before=before.get(message.id, ""),
            at=message.created_at,
        )
        for message in record.upkeep_owed
    ]


def paid_by(state: UpkeepState) -> list[str]:
    """The owed extractions it made (or gave up), and the embedding it paid."""
    paid = list(state.get("paid", []))
    if state.get("embedded"):
        paid.append(state["embedded"])
    return paid


def structured_compactor(
    model: BaseChatModel, structured: StructuredPolicy | str | None = None
) -> Runnable[Any, Any]:
    """`model` bound to the `CompactionOutput` schema (`graphs.structured`)."""
    return as_policy(structured).bind(model, CompactionOutput, max_tokens=COMPACTION_MAX_TOKENS)


def structured_extractor(
    model: BaseChatModel, structured: StructuredPolicy | str | None = None
) -> Runnable[Any, Any]:
    """`model` bound to the `ExtractionOutput` schema (`graphs.structured`)."""
    return as_policy(structured).bind(model, ExtractionOutput, max_tokens=EXTRACTION_MAX_TOKENS)


def failure_reason(error: BaseException | str) -> str:
    """A model step's failure by kind, never its text: `invalid_output` (the answer did
    not validate: nothing of it is stored), `timeout`, or `error`."""
    name = error.split(":", 1)[0] if isinstance(error, str) else type(error).__name__
    kinds = {
        StructuredOutputError.__name__: "invalid_output",
        InvalidCompactionOutput.__name__: "invalid_output",
        ModelTimeout.__name__: "timeout",
    }
    return kinds.get(name, "error")


@dataclass(eq=False)
class UpkeepNodes:
    """The upkeep's nodes; the fields are `build_upkeep_graph`'s arguments."""

    memory: ConversationMemory
    compactor: Runnable[Any, Any]
    long_term: tuple[LongTermMemory, Extractor] | None = None
    stats: StructuredStats | None = None

    def _after_remember(self, record: ThreadState) -> Literal["compact", "settle"]:
        return "compact" if record.compaction_owed else "settle"

    def _after_embed(self, record: ThreadState) -> Literal["remember", "compact", "settle"]:
        if record.upkeep_owed and self.long_term is not None:
            return "remember"
        return self._after_remember(record)

    def read_owed(self, state: UpkeepState) -> Command[Any]:
        """Read the upkeep record (one read) and go to what pays it. Finding nothing owed, it
        still says how the last upkeep ended, for a stream told `pending` meanwhile."""
        session_id, conversation_id = turn_ids()
        snapshot = self.memory.documents.read(session_id, conversation_id)
        record = snapshot.state
        if record is None or not snapshot.registry.owns(conversation_id):
            emit_memory("upkeep", "done")
            return Command(update={"upkeep": "done"}, goto=END)
        if not record.owes_upkeep and record.upkeep != "pending":  # paid already
            emit_memory("upkeep", record.upkeep)
            return Command(update={"upkeep": record.upkeep}, goto=END)
        # without `remember` (long-term memory off since it was owed) an owed
        # extraction is given up rather than left owed for ever
        paid = [] if self.long_term is not None else [m.id for m in record.upkeep_owed]
        update = {"record": record, "failed": False, "embedded": "", "paid": paid}
        update |= {"batching": False, "settled": None}
        goto = "embed" if record.embedding_owed is not None else self._after_embed(record)
        return Command(update=update, goto=goto)

    def embed(self, state: UpkeepState) -> Command[Any]:
        """Embed the archived lines owed a vector (one call, no lock held, stored in a short
        transaction); on failure they are found by their words only."""
        record = state["record"]
        update: dict[str, Any] = {"embedded": record.embedding_owed or ""}
        emit_memory("embed", "started")
        try:
            added = self.memory.archive.embed_lines(turn_ids()[0])
        except Exception:
            logger.exception("embedding archived lines failed; they are found by their words")
            emit_memory("embed", "failed")
            update |= {"failed": True, "degraded": True}
        else:
            emit_memory("embed", "succeeded", lines=added)
        return Command(update=update, goto=self._after_embed(record))

    def _extraction_due(self, state: UpkeepState, record: ThreadState) -> bool:
        """Whether the owed turns are extracted now, else they wait for their batch: due at
        `batch_turns` owed turns, when a compaction is owed, or when an owed turn is older
        than `batch_from` (a stopped process left it)."""
        since = state.get("batch_from")
        if since is None or self.long_term is None or self.long_term[1].source != "model":
            return True
        owed = record.upkeep_owed
        return (
            len(owed) >= state.get("batch_turns", EXTRACTION_BATCH_TURNS)
            or any(message.created_at < since for message in owed)
            or bool(self._folded(record) & {message.id for message in owed})
        )

    def _folded(self, record: ThreadState) -> set[str]:
        """The user messages the owed compaction is about to fold (with the assistant's line
        before them: hence the one more)."""
        if not record.compaction_owed:
            return set()
        reach = len(record.messages) - self.memory.keep + 1
        return {message.id for message in record.messages[:reach] if message.role == "user"}

    def remember(self, state: UpkeepState) -> Command[Any]:
        """Extract from the user's own words in the owed turns (one call per
        `MAX_OWED_IN_ONE_CALL`; never the answer, tools or artifacts) and write what the
        gate lets through, forgetting everywhere in the write's transaction. Turns left
        for their batch get their explicit requests only; a failed batch stays owed."""
        assert self.long_term is not None
        long_term, extractor = self.long_term
        record = state["record"]
        session_id, conversation_id = turn_ids()
        turns = owed_turns(record, conversation_id)
        due = self._extraction_due(state, record)
        if not due:
            extractor = EXPLICIT_EXTRACTOR
            turns = [turn for turn in turns if is_explicit(turn.user_text)]
        remembered: list[str] = []
        paid: list[str] = []
        failed = False
        forget = self.memory.forgetter(session_id)
        reread = partial(self._stored_turns, session_id, conversation_id)
        for start in range(0, len(turns), MAX_OWED_IN_ONE_CALL):
            emit_memory("remember", "started")
            batch = turns[start : start + MAX_OWED_IN_ONE_CALL]
            write_with = partial(
                long_term.remember_turns, session_id, batch, forget=forget, reread=reread
            )
            refused = False
            try:
                try:
                    write = write_with(extractor)
                except InvalidExtractionOutput:
                    # the model's answer, asked twice, was of the wrong form: nothing of it
                    # is stored, the batch is refused (not failed: the same model would
                    # fail it again), and its explicit requests are still applied
                    logger.warning("extraction answer refused; explicit requests only")
                    refused = True
                    write = write_with(EXPLICIT_EXTRACTOR)
            except Exception as exc:
                logger.exception("long-term extraction failed; its turns stay owed")
                emit_memory("remember", "failed", reason=failure_reason(exc))
                failed = True
                continue
            if due:
                paid += [turn.message_id for turn in batch]
            remembered += write.remembered
            emit_memory(
                "remember",
                "refused" if refused else "succeeded" if write.altered else "skipped",
                **({"reason": "invalid_output"} if refused else {}),
                remembered=len(write.added),
                retired=write.retired,
                **({"refused": write.refusals} if write.refused else {}),
            )
        update: dict[str, Any] = {"remembered": remembered, "paid": paid, "batching": not due}
        if not due:
            update["waiting"] = True
        if failed:
            update |= {"failed": True, "degraded": True}
        return Command(update=update, goto=self._after_remember(record))

    def _stored_turns(
        self, session_id: str, conversation_id: str, turns: Sequence[OwedTurn]
    ) -> list[OwedTurn]:
        """`turns` as the record holds them now (a forgetting since redacted them; a turn
        no longer owed reads empty)."""
        record = self.memory.read_memory(session_id, conversation_id)
        stored = {turn.message_id: turn for turn in owed_turns(record, conversation_id)}
        return [
            stored.get(turn.message_id) or replace(turn, user_text="", assistant_before="")
            for turn in turns
        ]

    def compact(self, state: UpkeepState) -> dict[str, Any]:
        """Compact with no lock held; compare-and-set the result, the upkeep's end in one commit."""
        emit_memory("compact", "started")
        try:
            result = self.memory.compact(
                *turn_ids(),
                self.compactor,
                snapshot=state["record"],
                settle=(paid_by(state), bool(state.get("failed")), bool(state.get("batching"))),
            )
        except Exception:
            logger.exception("compaction failed before reaching the model")
            emit_memory("compact", "failed")
            return {"compaction": CompactionStatus.FAILED.value, "degraded": True, "failed": True}
        # a model's failure by kind: `failed` left memory as it was, `fallback` folded
        # the oldest lines without it
        failure = {} if result.error is None else {"reason": failure_reason(result.error)}
        emit_memory(
            "compact",
            result.status.value,
            **failure,
            summaryChars=len(result.state.summary),
            pinnedDecisions=len(result.state.pinned_decisions),
            summaryVersion=result.state.summary_version,
            **({"refused": dict(result.refused)} if result.refused else {}),
        )
        update: dict[str, Any] = {"compaction": result.status.value}
        if result.status is CompactionStatus.FAILED:
            update["failed"] = True
        else:  # stored, settled in the same commit
            update["settled"] = result.state
        return update

    def settle(self, state: UpkeepState) -> dict[str, Any]:
        """Record what the upkeep paid and its end: `done`, `failed`, `pending` (a turn landed)."""
        failed = bool(state.get("failed"))
        batching = bool(state.get("batching"))
        try:
            stored = state.get("settled") or self.memory.settle_upkeep(
                *turn_ids(), paid_by(state), failed=failed, batching=batching
            )
        except Exception:  # the record still says pending: the next upkeep pays it
            logger.exception("settling the memory upkeep failed")
            stored, failed = None, True
        status = "failed" if failed else stored.upkeep if stored is not None else "done"
        # a failure says what the structured calls met so far
        met = {"structured": self.stats.snapshot()} if failed and self.stats is not None else {}
        emit_memory("upkeep", status, **met)
        return {"upkeep": status}


def build_upkeep_graph(
    *,
    memory: ConversationMemory,
    compactor: Runnable[Any, Any],
    long_term: tuple[LongTermMemory, Extractor] | None = None,
    stats: StructuredStats | None = None,
) -> UpkeepGraph:
    """`read_owed → [embed] → [remember] → [compact] → settle`; `long_term` is the users'
    long-term memory and its extractor (None: no `remember`), `stats` the counts of the
    structured calls, shown when an upkeep failed."""
    nodes = UpkeepNodes(memory, compactor, long_term, stats)
    remembers = ("remember",) if long_term is not None else ()
    builder: UpkeepGraph = StateGraph(
        UpkeepState, input_schema=UpkeepInput, output_schema=UpkeepOutput
    )
    builder.add_node(nodes.read_owed, destinations=("embed", *remembers, "compact", "settle", END))
    builder.add_node(nodes.embed, destinations=(*remembers, "compact", "settle"))
    if long_term is not None:
        builder.add_node(nodes.remember, destinations=("compact", "settle"))
    builder.add_node(nodes.compact)
    builder.add_node(nodes.settle)
    builder.add_edge(START, "read_owed")
    builder.add_edge("compact", "settle")
    builder.add_edge("settle", END)
    return builder
