"""What the terminal chat shows besides a turn's events: review payloads, the registry,
the memory and long-term views, search results (a turn's events: `agent.cli.printer`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent.cli.commands import ACTION_USAGE, review_actions

PREVIEW_CHARS = 200
REVIEW_TITLES = {"strategy_review": "strategy review", "revision_review": "revision review"}


def one_line(text: object, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _task_lines(number: int, task: object) -> list[str]:
    if not isinstance(task, Mapping):
        return [f"  {number}. {one_line(task)}"]
    title = next((task[k] for k in ("title", "name", "description") if task.get(k)), "(untitled)")
    status = f" [{task['status']}]" if task.get("status") else ""
    ident = f" (id {task['id']})" if task.get("id") is not None else ""
    lines = [f"  {number}. {one_line(title)}{status}{ident}"]
    criteria = task.get("acceptance_criteria") or task.get("acceptanceCriteria")
    for criterion in criteria if isinstance(criteria, list) else [criteria] if criteria else []:
        lines.append(f"       - {one_line(criterion)}")
    return lines


def _issue_line(issue: object) -> str:
    if not isinstance(issue, Mapping):
        return f"  - {one_line(issue)}"
    keys = ("description", "issue", "title", "text", "message")
    text = next((issue[k] for k in keys if issue.get(k)), json.dumps(dict(issue), default=str))
    task = issue.get("task_title") or issue.get("task_id")
    where = f" (task: {one_line(task, 80)})" if task else ""
    blocking = " [blocking]" if issue.get("blocking") else ""
    return f"  - {one_line(text)}{where}{blocking}"


def render_review(payload: Mapping[str, Any]) -> str:
    """A review payload as readable text: goal and tasks, or issues, then the answers."""
    kind = str(payload.get("kind", ""))
    title = REVIEW_TITLES.get(kind) or f"review ({kind or 'unknown'})"
    lines = [f"── {title} ──"]
    for key in ("message", "question", "goal", "summary"):
        if isinstance(payload.get(key), str) and payload[key].strip():
            lines.append(f"{key}: {payload[key].strip()}")
    tasks, issues = payload.get("tasks"), payload.get("issues")
    if isinstance(tasks, list):
        lines.append("tasks:" if tasks else "tasks: none")
        for number, task in enumerate(tasks, 1):
            lines.extend(_task_lines(number, task))
    if isinstance(issues, list):
        lines.append("issues:" if issues else "issues: none")
        lines.extend(_issue_line(issue) for issue in issues)
    if isinstance(payload.get("error"), str):
        lines.append(f"(the last answer was refused: {payload['error']})")
    if kind not in REVIEW_TITLES:
        rest = {k: v for k, v in payload.items() if k not in ("kind", "actions", "error")}
        lines.append(json.dumps(rest, indent=2, ensure_ascii=False, default=str))
    actions = review_actions(payload)
    if actions:
        lines.append("answer with: " + " | ".join(ACTION_USAGE.get(a, a) for a in actions))
    return "\n".join(lines)


def render_listing(registry: Mapping[str, Any], *, current: str | None) -> str:
    """The registry as a numbered list, the conversation the chat is in (`current`, None
    in a new one) marked with `*`; what waits in a conversation says which command
    answers it (and `/switch` first, in another conversation)."""
    entries = registry.get("conversations") or []
    if not entries:
        lines = ["no conversations yet"]
    else:
        lines = [f"conversations ({len(entries)} of {registry.get('limit', '?')}):"]
        for number, entry in enumerate(entries, 1):
            here = entry["id"] == current
            switch = "" if here else "/switch to it, then "
            waiting = "".join(
                f"  [{label}: {switch}{command}]"
                for key, label, command in (
                    ("unfinished", "unfinished", "/recover"),
                    ("reviewPending", "review pending", "/review"),
                )
                if entry.get(key)
            )
            lines.append(
                f"{'*' if here else ' '} {number}. {one_line(entry['title'], 70)}"
                f"  ({entry['id']}){waiting}"
            )
    if current is None:
        lines.append("(you are in a new conversation: your next message creates it)")
    return "\n".join(lines)


def render_memory(dto: Mapping[str, Any]) -> str:
    """The hydration view: summary (preview, version), pins, open questions, recent messages."""
    lines = [f"memory of conversation {str(dto.get('conversationId', ''))[:8]}:"]
    version = dto.get("summaryVersion") or 0
    lines.append(
        f"summary (version {version}): {one_line(dto['summaryPreview'], 400)}"
        if dto.get("summaryPreview")
        else "summary: none yet"
    )
    pins = dto.get("pinnedDecisions") or []
    lines.append("pinned decisions:" if pins else "pinned decisions: none")
    lines.extend(f"  {number}. {pin}" for number, pin in enumerate(pins, 1))
    questions = dto.get("openQuestions") or []
    if questions:
        lines.append("open questions:")
        lines.extend(f"  - {one_line(question)}" for question in questions)
    messages = dto.get("messages") or []
    lines.append(f"recent messages ({len(messages)}):" if messages else "recent messages: none")
    lines.extend(f"  {m.get('role')}: {one_line(m.get('text', ''))}" for m in messages)
    return "\n".join(lines)


def _source(item: Mapping[str, Any]) -> str:
    """Where an item came from: the day and the user's words, or that it was added here."""
    source = item.get("provenance") or {}
    day = str(source.get("at") or item.get("createdAt", ""))[:10]
    if not (source.get("conversationId") or item.get("conversationId")):
        return f"       added by you on {day}"
    quote = source.get("quote")
    return f"       said on {day}" + (f": “{one_line(quote)}”" if quote else "")


def _item_line(number: int, item: Mapping[str, Any]) -> str:
    return f"  {number}. [{item.get('kind')}] {one_line(str(item.get('text', '')))}"


def render_memories(listing: Mapping[str, Any]) -> str:
    """The long-term items, numbered for `/forget N`, newest first, each with where it
    was said."""
    items = listing.get("memories") or []
    if not items:
        return "long-term memory: nothing yet (say a preference, or /remember TEXT)"
    lines = [f"long-term memory ({len(items)} of {listing.get('limit', '?')}):"]
    for number, item in enumerate(items, 1):
        lines += [_item_line(number, item), _source(item)]
    return "\n".join(lines)


def render_history(listing: Mapping[str, Any]) -> str:
    """The items later statements changed, most recently changed first, numbered for
    `/forget N`: when each changed, what replaced it (while that holds), where it was said."""
    items = listing.get("history") or []
    if not items:
        return "long-term memory history: nothing you said has changed an item yet"
    current = {item["id"]: item for item in listing.get("memories") or []}
    lines = [f"long-term memory history ({len(items)}; never used again, /forget N forgets one):"]
    for number, item in enumerate(items, 1):
        by = current.get(item.get("supersededBy") or "")
        change = f"replaced by “{one_line(by['text'])}”" if by else "no longer holds"
        day = str(item.get("invalidAt", ""))[:10]
        lines += [_item_line(number, item), f"       changed on {day}: {change}", _source(item)]
    return "\n".join(lines)


def render_search(query: str, results: Sequence[Mapping[str, Any]]) -> str:
    """Archived lines found by `/search`, one per line: date, conversation title, role."""
    if not results:
        return f"search: nothing in your earlier conversations matches {query!r}"
    lines = [f"search: {len(results)} line(s) for {query!r}:"]
    lines.extend(
        f"  {str(hit.get('createdAt', ''))[:10]} · {one_line(str(hit.get('title', '')))} · "
        f"{hit.get('role')}: {one_line(str(hit.get('text', '')))}"
        for hit in results
    )
    return "\n".join(lines)
