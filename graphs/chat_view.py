"""Studio's chat view of a turn: its user message and answer, each with one id.

A `messages` stream shows a message once per id: the user's message keeps the id it
had as input, and the answer the id it had when the model streamed it.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from graphs.state import AgentState
from memory.turns import final_ai_message


def input_message_id(state: AgentState) -> str | None:
    """The id of Studio's input message, reused so that a `messages` stream that saw it
    as input does not show it again as output."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return last.id if isinstance(last, HumanMessage) and last.id else None


def visible_messages(state: AgentState, answer: str) -> list[AnyMessage]:
    """The turn as Studio's chat view shows it: the user's message and the answer, with
    the ids they already had, so that a `messages` stream shows each one once."""
    turn_messages = state.get("turn_messages") or []
    user = turn_messages[0] if turn_messages else HumanMessage(content=state["user_text"])
    final = final_ai_message(turn_messages)
    answer_id = final.id if final is not None else f"{state['turn_id']}-a"
    return [user, AIMessage(content=answer, id=answer_id)]
