"""The offline model's compaction, judging no meaning: the old summary's lines, then one
line per folded message in the speaker's own words, quoted as the local fallback quotes
them (no text reads as another speaker's); its own echoes add nothing, a line said again
replaces its older copy, and past the limit the oldest line without a name, number or date
(`memory.compaction_checks.values`) goes first. No pins or open questions: offline,
episodic recall carries the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import ValidationError

from agent.offline.chat import MEMORY_HEAD, OFFLINE_NOTICE, OFFLINE_PREFIX
from memory.compaction import FALLBACK_LINE_CHARS, CompactionInput, CompactionOutput
from memory.compaction_checks import values
from memory.limits import MAX_SUMMARY_CHARS
from memory.prompts import FALLBACK_SUMMARY_LINE
from memory.text import clamp, quoted

NOT_A_COMPACTION_INPUT = (
    "the offline compaction handler needs a CompactionInput JSON document "
    "(from memory.compaction.compaction_prompt) as the last user message"
)
EMPTY_SUMMARY = "Nothing from the earlier conversation needs to be remembered."
SPEAKERS = {"user": "User", "assistant": "Assistant"}


def summary_line(role: str, text: str) -> str | None:
    """A folded message as one quoted line, or None for the offline model's echo."""
    if text.startswith((OFFLINE_NOTICE, MEMORY_HEAD)):
        return None
    words = " ".join(text.removeprefix(OFFLINE_PREFIX).split())
    if not words:
        return None
    speaker = SPEAKERS.get(role, "Assistant")
    return FALLBACK_SUMMARY_LINE.format(
        speaker=speaker, text=quoted(clamp(words, FALLBACK_LINE_CHARS))
    )


def folded_summary(
    old_summary: str, fold: Sequence[tuple[str, str]], limit: int = MAX_SUMMARY_CHARS
) -> str:
    """The old summary's lines and a line per folded message, at most `limit` characters."""
    said = [line for line in old_summary.splitlines() if line.strip()]
    said += [line for role, text in fold if (line := summary_line(role, text))]
    newest = {line.casefold(): index for index, line in enumerate(said)}
    lines = [line for index, line in enumerate(said) if newest[line.casefold()] == index]
    plain = [not values(line) for line in lines]
    while len(lines) > 1 and sum(len(line) + 1 for line in lines) > limit + 1:
        drop = plain.index(True) if True in plain else 0
        del lines[drop], plain[drop]
    return clamp("\n".join(lines), limit) or EMPTY_SUMMARY


def compaction_output(messages: Sequence[BaseMessage]) -> CompactionOutput:
    """The offline `CompactionOutput` for a compaction prompt: its summary only
    (`ValueError` when no user message is a `CompactionInput` document)."""
    # the newest user message that is one: a retry adds a note after the document
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            try:
                document = CompactionInput.model_validate_json(message.text)
            except ValidationError:
                continue
            fold = [(m.role, m.own_words or m.text) for m in document.messages_to_fold]
            summary = folded_summary(document.old_summary, fold)
            return CompactionOutput(summary=summary, pinned_decisions=[], retired_pins=[])
    raise ValueError(NOT_A_COMPACTION_INPUT)
