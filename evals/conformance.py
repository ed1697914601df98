"""`python -m evals.conformance`: how a local model meets the agent's structured calls,
per model x server x structured-output method, written to `docs/conformance.md`.

Each method plays one frozen dialogue (`DIALOGUE`) through a `ChatAgent` on
`AGENT_MODEL=local`, every answer bounded, and reads what came back on the wire and in
the memory events: the share of structured answers that are valid for their schema, the
share of compactions that fell back, the gate's refusals by reason, the items stored,
the pins kept (and how many are grounded in the dialogue), seconds per structured call,
per turn and per upkeep. A method stops its dialogue once its share of the time left of
`--minutes` is spent (the table says how many turns ran). Quality figures from a 135M model show the
plumbing, not the ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agent import ChatAgent
from agent.local_model import LocalModelUnavailable, model_path, serve
from agent.settings import Settings, StructuredOutputMethod
from evals.wire import Call, recording
from memory.compaction import CompactionOutput
from memory.longterm.operations import ExtractionOutput
from memory.prompts import EXTRACTION_SYSTEM

DOCS = Path(__file__).resolve().parents[1] / "docs" / "conformance.md"
METHODS: tuple[StructuredOutputMethod, ...] = (
    "json_schema",
    "json_mode",
    "function_calling",
    "auto",
)
"""In this order by default: a method a server refuses costs little, and leaves its time to
the next; `auto` (the default setting: the ladder, learned from the first refusal) last."""
MAX_TOKENS = 256
SESSION = "conformance"
DIALOGUE = (
    "Hi! I am planning a trip to Lisbon with my sister Ana in May.",
    "Remember that I am vegetarian.",
    "Decision: we stay in Alfama, and the budget is 1200 euros in total.",
    "I work as a teacher, so I can only travel during the school holidays.",
    "Actually, make the budget 1500 euros, not 1200.",
    "Which museums would you suggest for a rainy day?",
)
"""Six user turns: twelve messages, so compaction runs after the fifth; a fact, an
explicit request, a decision, a change of it."""
SCHEMAS: dict[str, type[BaseModel]] = {
    "ExtractionOutput": ExtractionOutput,
    "CompactionOutput": CompactionOutput,
}
WORD = re.compile(r"\w{3,}")


@dataclass
class Row:
    """One model x server x method."""

    model: str
    method: str
    turns: int = 0
    structured: int = 0
    valid: int = 0
    compactions: int = 0
    fallbacks: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    items: int = 0
    pins: int = 0
    grounded_pins: int = 0
    call_seconds: list[float] = field(default_factory=list)
    turn_seconds: list[float] = field(default_factory=list)
    upkeep_seconds: list[float] = field(default_factory=list)
    failed_upkeeps: int = 0
    unbounded: int = 0


def schema_of(call: Call) -> type[BaseModel] | None:
    """The schema a structured call asked for (JSON mode: told by its system prompt)."""
    name = call.structured
    if name == "json_object":
        system = str(call.request["messages"][0].get("content", ""))
        return ExtractionOutput if system.startswith(EXTRACTION_SYSTEM[:60]) else CompactionOutput
    return SCHEMAS.get(name or "")


def valid(call: Call) -> bool:
    """Whether the answer is a JSON object its schema accepts, as it came back."""
    schema, output = schema_of(call), call.output()
    if call.status != 200 or schema is None or output is None:
        return False
    try:
        schema.model_validate(json.loads(output))
    except (ValueError, ValidationError):
        return False
    return True


def mean(values: list[float]) -> str:
    return f"{statistics.fmean(values):.1f}" if values else "n/a"


def rate(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}% ({part}/{whole})" if whole else "n/a"


async def _turn(
    agent: ChatAgent, text: str, conversation: str | None
) -> tuple[str, float, float | None, list[dict[str, Any]]]:
    started, done_at, upkeep_at = time.monotonic(), None, None
    events: list[dict[str, Any]] = []
    stream = agent.astream(
        text, session_id=SESSION, conversation_id=conversation, create_conversation=not conversation
    )
    async for event in stream:
        events.append(dict(event))
        if event["event"] == "done":
            done_at = time.monotonic()
        if event["event"] == "memory" and event["stage"] == "upkeep":
            upkeep_at = time.monotonic()
    done = [e for e in events if e["event"] == "done"]
    if done_at is None or not done:
        raise RuntimeError(f"the turn did not finish: {events[-1:]}")
    upkeep = None if upkeep_at is None else upkeep_at - done_at
    return str(done[0]["result"]["conversationId"]), done_at - started, upkeep, events


def play(env: dict[str, str], row: Row, deadline: float) -> None:
    """The dialogue through one agent, until it ends or `deadline` (monotonic) passes."""
    said: list[str] = []
    with recording() as wire, ChatAgent(settings=Settings.from_env(env)) as agent:
        conversation = None
        for text in DIALOGUE:
            if time.monotonic() > deadline:
                break
            conversation, seconds, upkeep, events = asyncio.run(_turn(agent, text, conversation))
            row.turns += 1
            row.turn_seconds.append(seconds)
            if upkeep is not None:
                row.upkeep_seconds.append(upkeep)
            said.append(text)
            said += [str(e["result"]["text"]) for e in events if e["event"] == "done"]
            for event in events:
                if event["event"] != "memory":
                    continue
                if event["stage"] == "upkeep" and event["status"] == "failed":
                    row.failed_upkeeps += 1
                if event["stage"] == "compact" and event["status"] in (
                    "succeeded",
                    "fallback",
                    "failed",
                ):
                    row.compactions += 1
                    row.fallbacks += event["status"] != "succeeded"
                row.refused.update(event.get("refused") or {})
        row.items = len(agent.memories(session_id=SESSION)["memories"])
        if conversation is not None:
            pins = agent.hydrate(session_id=SESSION, conversation_id=conversation)
            words = set(WORD.findall(" ".join(said).lower()))
            row.pins = len(pins["pinnedDecisions"])
            row.grounded_pins = sum(
                set(WORD.findall(pin.lower())) <= words for pin in pins["pinnedDecisions"]
            )
    for call in wire.calls:
        bound = call.request.get("max_tokens")
        tokens = call.completion_tokens
        row.unbounded += bound is None or (tokens is not None and tokens > bound)
        if call.structured is not None:
            row.structured += 1
            row.valid += valid(call)
            row.call_seconds.append(call.seconds)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def table(rows: list[Row], started: datetime, loads: tuple[str, str], minutes: float) -> str:
    head = (
        "| model | server | method | turns | schema-valid | compaction fallback or failed | "
        "gate refusals | items | pins kept (grounded) | s / structured call | s / turn | "
        "s / upkeep | upkeeps failed | unbounded calls |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    server = f"llama-cpp-python {version('llama-cpp-python')}"
    lines = []
    for row in rows:
        refused = ", ".join(f"{k} {v}" for k, v in sorted(row.refused.items())) or "none"
        lines.append(
            f"| {row.model} | {server} | {row.method} | {row.turns}/{len(DIALOGUE)} | "
            f"{rate(row.valid, row.structured)} | {rate(row.fallbacks, row.compactions)} | "
            f"{refused} | {row.items} | {row.pins} ({row.grounded_pins}) | "
            f"{mean(row.call_seconds)} | {mean(row.turn_seconds)} | "
            f"{mean(row.upkeep_seconds)} | {row.failed_upkeeps} | {row.unbounded} |"
        )
    return (
        "# Conformance: local models and the agent's structured calls\n\n"
        "Written by `python -m evals.conformance` (do not edit by hand). Each row plays the "
        f"same frozen {len(DIALOGUE)}-turn dialogue (`evals/conformance.py`) through "
        "`ChatAgent` on `AGENT_MODEL=local`, long-term extraction by the model, every "
        f"answer bounded to {MAX_TOKENS} tokens, within {minutes:g} minutes in all. "
        "Schema-valid: structured answers that parse as JSON and validate against their "
        "schema as they came back; compaction fallback or failed: compactions whose model "
        "output was not taken (the deterministic fallback, or nothing folded); pins "
        "grounded: every word of the pin is in the dialogue; "
        "unbounded calls: requests without `max_tokens`, or answers longer than it. "
        "Seconds are wall time on a machine shared with other work (its load below), so "
        "they are upper bounds. A 135M model's quality figures show the plumbing, not the "
        "ceiling.\n\n"
        f"- date: {started:%Y-%m-%d %H:%M} UTC\n"
        f"- machine: {machine()}\n"
        f"- load average (1 min) at start and end: {loads[0]}, {loads[1]}\n\n"
        f"{head}{chr(10).join(lines)}\n"
    )


def load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.conformance", description=__doc__)
    parser.add_argument(
        "--model",
        action="append",
        type=Path,
        help="a GGUF file (repeatable; default: the packaged SmolLM2-135M-Instruct)",
    )
    parser.add_argument("--method", action="append", choices=METHODS, help="(repeatable)")
    parser.add_argument("--minutes", type=float, default=15.0, help="the whole run's bound")
    parser.add_argument("--out", type=Path, default=DOCS)
    args = parser.parse_args(argv)
    methods = args.method or list(METHODS)
    models: list[Path | None] = list(args.model or [None])
    started, start_load = datetime.now(UTC), load()
    end = time.monotonic() + args.minutes * 60
    runs_left = len(methods) * len(models)
    rows: list[Row] = []
    for gguf in models:
        with tempfile.TemporaryDirectory() as tmp:
            env = {
                "AGENT_MODEL": "local",
                "AGENT_ANSWER_TOKENS": str(MAX_TOKENS),
                "AGENT_DATA_DIR": f"{tmp}/data",
                "AGENT_SESSION_SECRET": "conformance-run-secret-of-32-characters",
                "AGENT_LONG_TERM_MEMORY": "model",
            }
            if gguf is not None:
                env["AGENT_LOCAL_MODEL_PATH"] = str(gguf)
            settings = Settings.from_env(env)
            try:
                name = model_path(settings).name.removesuffix(".gguf")
            except LocalModelUnavailable as exc:
                parser.error(str(exc))
            _endpoint, release = serve(settings)  # one server for every method of the model
            try:
                for method in methods:
                    row = Row(name, method)
                    run_env = {
                        **env,
                        "AGENT_STRUCTURED_OUTPUT_METHOD": method,
                        "AGENT_DATABASE_URL": f"sqlite:///{tmp}/{method}.db",
                    }
                    # each run has an equal share of the time left, a short one leaves more
                    play(run_env, row, time.monotonic() + (end - time.monotonic()) / runs_left)
                    runs_left -= 1
                    rows.append(row)
                    print(table([row], started, (start_load, load()), args.minutes), flush=True)
            finally:
                release()
    args.out.write_text(table(rows, started, (start_load, load()), args.minutes))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
