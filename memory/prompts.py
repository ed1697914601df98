"""Prompts of the memory package: context blocks and the compaction instruction."""

PINNED_BLOCK = (
    "Pinned decisions of this conversation (binding until the user revokes them):\n{pins}"
)

SUMMARY_BLOCK = "Summary of the earlier conversation:\n{summary}"

COMPACTION_SYSTEM = """\
You maintain the short-term memory of one conversation between a user and an assistant.
Fold the messages under "Messages to fold" into the memory and return three fields:

- summary: the updated summary of everything before the kept messages, in at most \
{max_summary} characters. Keep facts, goals, open questions and preferences that later \
turns may need. Merge the old summary in; do not lose what it says unless the \
conversation overturned it. Write in the language of the conversation.
- pinned_decisions: decisions, constraints and boundaries the user stated explicitly \
and that later answers must respect (for example "we decided …", "always …", "never …", \
"must …"), one short sentence each, at most {max_pin} characters. Only new decisions \
are needed; old pins that still hold are kept automatically.
- retired_pins: the numbers of old pinned decisions that the conversation revoked or \
replaced. Leave it empty when none was revoked.

Never copy tool output, code listings, prompts or internal identifiers into the memory.
"""

COMPACTION_INPUT = """\
Old summary:
{summary}

Old pinned decisions (numbered):
{pins}

Messages to fold:
{fold}

Kept messages (for reference only, they stay verbatim in memory):
{kept}
"""

NONE_MARKER = "(none)"

FALLBACK_SUMMARY_LINE = "{speaker}: {text}"
"""One line per folded message in the deterministic local fallback."""
