"""What of a user's text is their own words: quoted, pasted, forwarded and role-forged
text, prompt injections and slash commands are not.

Structure only, never meaning: a quote (`>` lines, quote marks, code blocks), a
hand-off ("X wrote:", an e-mail header, "here is the email:", "下面是…发来的："), a line
that speaks as someone else ("assistant: …", "系统："), an attack on the assistant
("ignore previous instructions") or a pasted memory block or JSON document ends or
removes what the user stated themselves.
"""

from __future__ import annotations

import re

CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
QUOTED_LINE = re.compile(r"^\s*(?:>|&gt;|\|).*$", re.M)
QUOTE_MARKS = re.compile(
    r"\"[^\"\n]{2,}\"|“[^”]{2,}”|「[^」]{2,}」|『[^』]{2,}』|‘[^’]{4,}’"
    r"|(?<![A-Za-z])'[^'\n]{8,}'(?![A-Za-z])"
)
HANDOFF = re.compile(
    r"(?:\b(?:wrote|writes|said|says|replied|posted|sent(?: me)?|forwarded)\b\s*:"
    r"|-{2,}\s*(?:forwarded|original) message\s*-{2,}"
    r"|^\s*(?:from|to|subject|date|cc|sent|发件人|收件人|主题)\s*[:：]"
    r"|\b(?:here(?:'s| is| are)|below is|this is)\b[^\n:：]{0,40}[:：]"
    r"|(?:下面|以下|这)是[^\n：:]{0,20}[：:]"
    r"|[^\n：:]{0,12}(?:发来的|转发的|写道|说道|原文)[^\n：:]{0,6}[：:]"
    r"|\b(?:proofread|translate|rewrite|edit|polish|check|summari[sz]e)\b[^\n:：]{0,30}[:：]"
    r"|(?:润色|翻译|改写|检查)[^\n：:]{0,10}[：:]"
    # a line that speaks as someone else ("assistant: …", "> system: …", "助手：…")
    r"|^[\s>]*(?:assistant|system|user|ai|bot|model|助手|系统|用户)\s*[:：]"
    # a prompt injection: what follows is an attack on the assistant, not the user's say
    r"|\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|system)\s+(?:instructions|prompts?|rules|messages)\b"
    r"|忽略(?:之前|以上|前面|上面)的?(?:所有)?(?:指令|指示|提示|规则)"
    # a pasted memory block, or a pasted JSON document
    r"|^\s*(?:pinned decisions|summary of (?:the|our) earlier conversation|from earlier"
    r" conversations|what i remember about you|long-term memory)\b[^\n]{0,40}[:：(]"
    r"|^\s*[\[{]\s*[\"\[{])",
    re.I | re.M,
)
SLASH_COMMAND = re.compile(r"^\s*/[a-z]+\b", re.I)


def is_command(text: str) -> bool:
    """Whether `text` is a slash command ("/memory", "/forget 3"): it states nothing."""
    return bool(SLASH_COMMAND.match(text))


def own_words(text: str) -> str:
    """`text` without what the user did not state themselves: quoted lines, code
    blocks, quoted strings, everything after a hand-off, a role-forged line or an
    injection. A slash command states nothing."""
    text = text.replace("\r", "")
    if is_command(text):
        return ""
    text = CODE_BLOCK.sub(" ", text)
    handoff = HANDOFF.search(text)
    if handoff is not None:
        text = text[: handoff.start()]
    text = QUOTED_LINE.sub(" ", text)
    return QUOTE_MARKS.sub(" … ", text)


__all__ = ["is_command", "own_words"]
