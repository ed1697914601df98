"""What the terminal chat understands: input lines as `Command`s, review answers as decisions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MESSAGE_PREFIXES = ("/tasklist", "/delivery")
"""Prefixes sent to the agent as messages: it routes them to its workflows."""

HELP = """\
Type a message and press Enter to chat. Commands:
  /new              start a new conversation (your next message creates it)
  /list             list this session's conversations (* marks the selected one)
  /switch N         continue conversation N of the last /list
  /memory           show what the agent remembers of this conversation
  /memories         list what it remembers about you across conversations
  /memories history list what a later statement of yours changed
  /remember TEXT    ask it to remember TEXT about you (no secrets: they are refused)
  /forget N         forget item N of the last /memories (or /memories history)
  /search WORDS     find WORDS in your earlier conversations (also unlisted ones)
  /export FILE      save all this session holds (conversations, memories, archive) to FILE
  /import FILE      bring an export back into this session (what it has stays)
  /tasklist GOAL    plan GOAL as a task list (stops for your review)
  /delivery REQUEST run the delivery workflow on REQUEST
  /recover          continue a task list or delivery that a crash stopped
  /review           answer a review left pending
                    (approve | edit <task>; <task>; … | reject <reason> |
                     respond <feedback>; after the self-check: accept | revise)
  /help             show this help
  /quit             leave (Ctrl-D too); Ctrl-C cancels a running turn"""

ACTION_USAGE = {
    "approve": "approve",
    "edit": "edit <task>; <task>; …",
    "reject": "reject <reason>",
    "respond": "respond <feedback>",
    "accept": "accept",
    "revise": "revise",
}
DEFAULT_ACTIONS = {
    "strategy_review": ("approve", "edit", "reject", "respond"),
    "revision_review": ("accept", "revise"),
}
TEXT_FIELDS = {"reject": "reason", "respond": "feedback"}
"""Actions that need text, and the decision field that carries it (others take none)."""

NO_ARGUMENT_COMMANDS = frozenset({"new", "list", "memory", "recover", "review", "help", "quit"})
ALIASES = {"exit": "quit"}
UNKNOWN_COMMAND = "unknown command {head}; type /help for the commands"
NUMBER_USAGE = {
    "switch": "usage: /switch N, with N a number from /list",
    "forget": "usage: /forget N, with N a number from /memories",
}
TEXT_USAGE = {
    "remember": "usage: /remember TEXT",
    "search": "usage: /search WORDS",
    "export": "usage: /export FILE",
    "import": "usage: /import FILE",
}
MEMORIES_USAGE = "usage: /memories, or /memories history"
EDIT_FORMAT = (
    "edit takes the new task list: titles separated by ';' (edit Write the tests; "
    "Ship it), or JSON for acceptance criteria too "
    '(edit [{"title": "Write the tests", "acceptance_criteria": ["they pass"]}])'
)


class UsageError(ValueError):
    """An input line or review answer the CLI cannot use; shown as `error: ...`."""


@dataclass(frozen=True)
class Command:
    """A parsed input line: `name` is `message` or the command without its slash, `text`
    its text (a message, words, a file, `history`), `number` that of `/switch`, `/forget`."""

    name: str
    text: str = ""
    number: int | None = None


def parse_command(line: str) -> Command | None:
    """Parse an input line; None for a blank line, `UsageError` for an unknown command or
    bad arguments to a known one."""
    text = line.strip()
    if not text:
        return None
    head, _, rest = text.partition(" ")
    if not head.startswith("/") or head in MESSAGE_PREFIXES:
        return Command("message", text=text)
    name = ALIASES.get(head[1:].lower(), head[1:].lower())
    rest = rest.strip()
    if name in NUMBER_USAGE:
        if not (rest.isascii() and rest.isdigit()) or int(rest) < 1:
            raise UsageError(NUMBER_USAGE[name])
        return Command(name, number=int(rest))
    if name in TEXT_USAGE:
        if not rest:
            raise UsageError(TEXT_USAGE[name])
        return Command(name, text=rest)
    if name == "memories":
        if rest.lower() not in ("", "history"):
            raise UsageError(MEMORIES_USAGE)
        return Command(name, text=rest.lower())
    if name in NO_ARGUMENT_COMMANDS:
        if rest:
            raise UsageError(f"/{name} takes no arguments")
        return Command(name)
    raise UsageError(UNKNOWN_COMMAND.format(head=head))


def review_actions(payload: Mapping[str, Any]) -> tuple[str, ...]:
    """The actions a review allows: its `actions` (names or `{"action": ...}`), else the kind's."""
    names: list[str] = []
    raw = payload.get("actions")
    for item in raw if isinstance(raw, list | tuple) else ():
        name = item.get("action") or item.get("name") if isinstance(item, Mapping) else item
        if isinstance(name, str) and name:
            names.append(name)
    return tuple(names) or DEFAULT_ACTIONS.get(str(payload.get("kind")), ())


def _task_list(text: str) -> list[Any]:
    """`edit`'s tasks: JSON (a list, or `{"tasks": [...]}`), else titles split on ';'."""
    if text.startswith(("[", "{")):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise UsageError(EDIT_FORMAT) from None
        if isinstance(value, Mapping) and isinstance(value.get("tasks"), list):
            value = value["tasks"]
    else:
        value = [title.strip() for title in text.split(";") if title.strip()]
    if not isinstance(value, list) or not value:
        raise UsageError(EDIT_FORMAT)
    return value


def parse_decision(line: str, actions: Sequence[str]) -> dict[str, Any]:
    """Parse a review answer such as `approve`, `reject too risky` or `edit [...]` among
    the review's `actions` (empty: any); `UsageError` for another action or bad text."""
    action, _, rest = line.strip().partition(" ")
    action, rest = action.lower(), rest.strip()
    if not action or (actions and action not in actions):
        allowed = " | ".join(ACTION_USAGE.get(name, name) for name in actions)
        raise UsageError(f"answer with one of: {allowed}")
    if action in TEXT_FIELDS:
        if not rest:
            raise UsageError(f"usage: {ACTION_USAGE[action]}")
        return {"action": action, TEXT_FIELDS[action]: rest}
    if action == "edit":
        return {"action": "edit", "tasks": _task_list(rest)}
    if rest:
        raise UsageError(f"{action} takes no text")
    return {"action": action}
