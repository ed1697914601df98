"""Export and import benchmark: what it costs to bring back the largest document an
import takes in count (10 conversations, 100 items, `--lines` archived lines; default
20,000, the limit) and to export it again.

- validate: `read_document` on the JSON bytes (parse, schema, storable text).
- import: `ChatAgent.import_` into a fresh session (validation, secret scan of every
  line and title, one transaction).
- export: `ChatAgent.export` of that session.

Run: `python -m bench.transfer_bench [--lines N] [--database-url URL]` (default: a
temporary SQLite file).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from agent import ChatAgent
from agent.offline import OfflineChatModel
from agent.settings import Settings
from bench.archive_bench import vocabulary
from memory.export_document import read_document
from memory.longterm.items import normalise
from memory.schema import utcnow

T0 = "2025-03-01T10:00:00+00:00"


def document(lines: int, rng: random.Random) -> dict[str, Any]:
    """A document at the import's limits, its texts made-up sentences of 10-40 words."""
    words = vocabulary(rng)

    def sentence() -> str:
        return " ".join(rng.choices(words, k=rng.randint(10, 40)))

    message = {"role": "user", "text": "hello", "created_at": T0}
    return {
        "format": "langgraph-memory-agent.export",
        "version": 1,
        "exportedAt": T0,
        "conversations": [
            {
                "id": f"c{n}",
                "title": f"Conversation {n}",
                "createdAt": T0,
                "lastActiveAt": T0,
                "memory": {"messages": [{**message, "id": f"c{n}-m1"}]},
            }
            for n in range(10)
        ],
        "memories": [
            {
                "id": f"m_{n:016x}",
                "kind": "fact",
                "text": (text := f"I keep {n} {rng.choice(words)} books"),
                "importance": 3,
                "created_at": T0,
                "updated_at": T0,
                "key": normalise(text),
            }
            for n in range(100)
        ],
        "archive": [
            {
                "conversationId": f"c{n % 30}",
                "title": f"Conversation {n % 30}",
                "messageId": f"m{n}",
                "role": ("user", "assistant")[n % 2],
                "createdAt": T0,
                "text": sentence(),
            }
            for n in range(lines)
        ],
        "tombstones": [],
    }


def timed(run: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = run()
    return result, (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    raw = json.dumps(document(args.lines, random.Random(7))).encode()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{Path(tmp) / 'bench.sqlite'}"
        settings = Settings(data_dir=Path(tmp) / "data")
        with ChatAgent(database_url=url, model=OfflineChatModel(), settings=settings) as agent:
            _, validate_ms = timed(lambda: read_document(raw, utcnow()))
            session = f"bench{random.randrange(1 << 30)}"
            summary, import_ms = timed(lambda: agent.import_(raw, session_id=session))
            _, export_ms = timed(lambda: agent.export(session_id=session))
            agent.forget_history(session_id=session)
            agent.forget_all(session_id=session)
    print(
        f"transfer ({url.partition(':')[0]}, {args.lines:,} lines, {len(raw) / 1e6:.1f} MB): "
        f"validate {validate_ms:.0f} ms, import {import_ms:.0f} ms, export {export_ms:.0f} ms; "
        f"imported {summary['archive']['imported']:,} lines"
    )


if __name__ == "__main__":
    main()
