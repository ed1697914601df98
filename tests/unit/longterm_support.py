"""Shared by the write gate's tests: stored items and owed turns at a fixed time, a
model's operations, and the plan the gate makes of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memory.longterm import MemoryItem, Operation, OwedTurn, WritePlan, plan_write
from memory.longterm.gate import Reason
from memory.longterm.items import MemoryKind, normalise

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def item(
    text: str,
    *,
    kind: MemoryKind = "preference",
    importance: int = 3,
    age_days: int = 0,
    item_id: str | None = None,
    conversation_id: str | None = None,
) -> MemoryItem:
    moment = NOW - timedelta(days=age_days)
    return MemoryItem(
        id=item_id or f"m_{abs(hash((text, age_days))) % 10**12:012d}",
        kind=kind,
        text=text,
        importance=importance,
        created_at=moment,
        updated_at=moment,
        key=normalise(text),
        conversation_id=conversation_id,
    )


def turn(user: str, assistant: str = "", message: str = "u1") -> OwedTurn:
    return OwedTurn(message, "c1", user, assistant, NOW)


def op(name: str, quote: str, *, turn: int = 1, **fields: Any) -> Operation:
    return Operation.model_validate({"op": name, "turn": turn, "quote": quote, **fields})


def modelled(current: list[MemoryItem], said: list[OwedTurn], *ops: Operation) -> WritePlan:
    return plan_write(current, list(ops), said, source="model")


def reasons(result: WritePlan) -> list[Reason]:
    return [refusal.reason for refusal in result.refused]
