"""The turn's outcome for its caller, kept outside the run's state.

LangGraph streams the last step's state only after storing the run's last checkpoint;
a caller that passes a dict under `OUTCOME_KEY` still gets the answer when that store
fails (`agent.turns.TurnRecorder`).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from graphs.state import AgentUpdate

OUTCOME_KEY = "__agent_turn_outcome__"
"""A run's `configurable` key for a dict that `finalize` (and `remember`) fill with the
turn's outcome. (Keys that start with `__` are never stored in checkpoint metadata.)"""


def record_outcome(config: RunnableConfig, result: AgentUpdate, **fields: Any) -> None:
    """Fill the caller's outcome dict (`OUTCOME_KEY`), when it passed one."""
    record_extra(
        config, answer=result["answer"], status=result["status"], route=result["route"], **fields
    )


def record_extra(config: RunnableConfig, **fields: Any) -> None:
    """Add fields to the caller's outcome dict (`OUTCOME_KEY`), when it passed one."""
    outcome = config.get("configurable", {}).get(OUTCOME_KEY)
    if isinstance(outcome, dict):
        outcome.update(fields)
