"""Salience for the offline compactor: what in a sentence carries information.

Deterministic rules for English and Chinese. A sentence carries information when it
holds a number, an amount, a date, an identifier or a name, or states a constraint,
a decision, a preference or a role (its `features`); `salience` weighs them. It is
content-free when it has no feature and nothing is left once filler is taken out
("Thanks, that helps.", "可以再详细说说吗？"). `terms` are the words a sentence is
about; they decide restatements and first mentions, and whether a reply answers a
question.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum

from agent.offline.chat import MEMORY_HEAD, OFFLINE_NOTICE, OFFLINE_PREFIX
from memory.text import clamp

CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{CJK}]+")
# ASCII word edges: `\b` would see no edge between a CJK character and a Latin one.
_A = r"(?<![A-Za-z0-9_])"
_Z = r"(?![A-Za-z0-9_])"
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n+")
_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_TRAILING_CLOSERS = "\"'”’)）」』】 "
_LEADING_OPENERS = "\"'“‘(（「『【[ "


class Feature(StrEnum):
    """What makes a sentence worth keeping."""

    NUMBER = "number"
    AMOUNT = "amount"
    DATE = "date"
    IDENTIFIER = "identifier"
    NAME = "name"
    CONSTRAINT = "constraint"
    DECISION = "decision"
    PREFERENCE = "preference"
    ROLE = "role"


WEIGHTS: Mapping[Feature, int] = {
    # An amount or a date nearly always comes with a number, so the pair outweighs a
    # lone number: "$48,500" and "March 14" are what a summary must not lose.
    Feature.NUMBER: 2,
    Feature.AMOUNT: 2,
    Feature.DATE: 3,
    Feature.IDENTIFIER: 3,
    Feature.NAME: 3,
    Feature.CONSTRAINT: 3,
    Feature.DECISION: 3,
    Feature.PREFERENCE: 3,
    Feature.ROLE: 3,
}
BASE_SCORE = 1
USER_BONUS = 1
"""The user's own statements describe their world; the assistant's often restate them."""

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_CJK_NUMERAL = "〇零一二两三四五六七八九十百千"
# A Chinese numeral needs a digit from 一 to 九 (两), so "千万别" is no amount, and a
# unit, so "一下" and "一点" are no numbers.
_CJK_NUMBER = f"[{_CJK_NUMERAL}]*[一二两三四五六七八九][{_CJK_NUMERAL}]*"
_NUMBER_WORDS = (
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty "
    "seventy eighty ninety hundred thousand million billion dozen"
)

_PATTERNS: Mapping[Feature, re.Pattern[str]] = {
    Feature.NUMBER: re.compile(
        rf"\d|{_CJK_NUMBER}[万亿位名人次天周月年号日元块倍个小时分钟秒岁%％]"
        rf"|\b(?:{'|'.join(_NUMBER_WORDS.split())})\b",
        re.IGNORECASE,
    ),
    Feature.AMOUNT: re.compile(
        r"[$€£¥￥]\s?\d|\d\s?(?:%|％|percent\b)"
        r"|\d[\d,.]*\s?(?:k|m|bn|million|billion|thousand|usd|eur|gbp|rmb|cny"
        r"|dollars?|euros?|pounds?)(?![A-Za-z])"
        rf"|\d[\d,.]*\s?(?:万|亿|元|块|美元|欧元|英镑|人民币)|{_CJK_NUMBER}[万亿元块]|百分之",
        re.IGNORECASE,
    ),
    Feature.DATE: re.compile(
        rf"{_A}\d{{4}}-\d{{1,2}}-\d{{1,2}}{_Z}|{_A}\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?{_Z}"
        rf"|\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
        rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b|\b{_MONTH}\s+\d{{4}}\b"
        r"|\b(?:January|February|March|April|June|July|August|September|October|November"
        r"|December)\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b"
        r"|\bQ[1-4]\b|\b(?:19|20)\d{2}\b|\b(?:tomorrow|next\s+(?:week|month|quarter|year))\b"
        r"|\d{1,4}\s*年|\d{1,2}\s*月|\d{1,2}\s*[日号]|[一二三四五六七八九十]{1,2}月"
        r"|(?:周|星期|礼拜)[一二三四五六日天]|明天|后天|下周|下个月|明年|月底|月初|年底|季度",
        re.IGNORECASE,
    ),
    Feature.IDENTIFIER: re.compile(
        rf"{_A}[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+{_Z}"  # snake_case
        rf"|{_A}[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*{_Z}"  # camelCase, PostgreSQL
        rf"|{_A}(?=[A-Za-z0-9-]*[A-Za-z])(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*{_Z}"
        rf"|{_A}[A-Z]{{2,}}(?:-[A-Z0-9]+)+{_Z}"  # OPS-TEAM
        r"|https?://\S+|[\w.+-]+@[\w-]+\.[\w.]+|`[^`\n]+`"
        rf"|{_A}[\w-]+\.(?:py|js|ts|json|ya?ml|toml|md|csv|sql|txt|go|rs|java|com|org|io){_Z}"
    ),
    Feature.CONSTRAINT: re.compile(
        r"\b(?:must|mustn't|never|always|only|at\s+(?:most|least)|no\s+more\s+than|up\s+to"
        r"|maximum|minimum|limits?|limited|capped|quota|deadline|required|requires?|cannot"
        r"|can't|not\s+allowed|forbidden|mandatory)\b"
        r"|必须|不能|不得|不可以|只能|只在|最多|至少|不超过|上限|下限|限制|限流|限额|截止|务必|禁止"
        r"|一律|总是|永远|不允许",
        re.IGNORECASE,
    ),
    Feature.DECISION: re.compile(
        r"\b(?:decided|decide|decision|agreed|chose|chosen|settled\s+on|approved|signed\s+off"
        r"|we(?:'ll|\s+will)\s+go\s+with|let's\s+(?:use|go\s+with)|we're\s+going\s+with)\b"
        r"|决定|定了|定在|定为|选定|选择了|采用|约定|同意|敲定|(?<!不)确定",
        re.IGNORECASE,
    ),
    Feature.PREFERENCE: re.compile(
        r"\b(?:prefer|prefers|preferred|preference|i\s+(?:really\s+)?(?:like|love|want|hate"
        r"|dislike)|i'd\s+(?:like|rather)|i\s+would\s+(?:like|rather)|i\s+don't\s+(?:like|want)"
        r"|favou?rite|rather\s+than)\b|喜欢|偏好|更愿意|希望|倾向|讨厌|想要|不想",
        re.IGNORECASE,
    ),
    Feature.ROLE: re.compile(
        r"\bI(?:'m|\s+am)\s+(?:a|an|the|our|their|your)\s+(?!bit\b|little\b|lot\b)"
        r"|\bmy\s+(?:role|job|title|team)\b|\bI\s+(?:work\s+(?:as|at|on|for)|lead|run|manage"
        r"|own|report\s+to)\b|\bin\s+charge\s+of\b|\bresponsible\s+for\b"
        r"|我是|我负责|负责人|我的角色|担任|我带|我管",
        re.IGNORECASE,
    ),
}

# Names: a capitalised word inside a sentence, an acronym, a Latin word inside Chinese
# text, a quoted Chinese name, or a word that introduces one (Chinese has no capitals).
_CAPITALISED = re.compile(rf"{_A}[A-Z][a-zA-Z]+{_Z}")
_ACRONYM = re.compile(rf"{_A}(?!OK{_Z})[A-Z]{{2,}}{_Z}")
_LATIN_WORD = re.compile(rf"{_A}[A-Za-z][A-Za-z0-9.+#-]*[A-Za-z0-9+#]{_Z}")
_CJK_QUOTED = re.compile(r"[「『“《][^」』”》]{1,30}[」』”》]")
_NAME_CUE = re.compile(
    r"\b(?:competitors?|rivals?|vendors?|suppliers?|customers?|clients?|partners?)\b"
    r"|竞争对手|对手|客户|供应商|合作伙伴|合作方|公司|集团",
    re.IGNORECASE,
)
_NOT_NAMES = frozenset({"I", "I'm", "I'd", "I'll", "I've", "OK", "Ok"})

_FILLER_WORD_LIST = """
a about actually again ah all alright also am an and any anything anyway appreciate
appreciated are as at awesome be been begin being bit but by bye can cheers clear
continue cool could course detail details did do does doing done elaborate else exactly
example examples explain fair fine follow for from further go going good got great had
has have he hello help helpful helps her here hers hey hi him his hm hmm how i i'm i've
if in indeed interesting into is it it's its just keep kind know let let's lets little
lot lots lovely make makes many maybe me mean meant more morning most much my need news
nice no not noted now of oh ok okay on one or other our out perfect perhaps please point
question questions quite rather really right said say says see seems sense she should so
some something sort sounds start still stuff super sure tell than thank thanks that
that's the their them then there these they thing things think this those thought to too
true understand understood up update updates us useful very want was way we welcome well
were what what's when where which who why will with wonderful would wow yeah yep yes yet
you you're your
"""
_CJK_FILLER_LIST = """
谢谢 感谢 多谢 好的 好吧 好啊 可以 明白 了解 知道 收到 懂了 没问题 有帮助 帮助 有用
不错 太好了 很好 挺好 真棒 有道理 道理 有意思 意思 继续 接着 多说 说说 讲讲 说一下
讲一下 展开 详细 具体 一点 一些 一下 更多 还有 其他 别的 问题 什么 怎么 为什么 如何
多少 哪些 哪个 觉得 听起来 这样 那样 然后 所以 因为 但是 而且 如果 已经 现在 我们 你们
他们 呢 吗 吧 啊 呀 哦 嗯 哈 了 的 得 地 是 这 那 个 很 也 就 都 还 请 你 我 他 她 它
们 能 会 想 看 说 讲 再 些 么 对 嘛 噢 喔 诶 哇 一 下 点 在 和 与 及 把 被 给 让 要 有
"""
_FILLER_WORDS = frozenset(_FILLER_WORD_LIST.split())
"""English words that carry nothing on their own: function words, acknowledgements,
follow-ups and question words. A sentence made of these alone is content-free."""
_CJK_FILLER = sorted(_CJK_FILLER_LIST.split(), key=len, reverse=True)
"""Chinese filler, longest first: taken out before deciding whether anything is left."""
_CJK_FILLER_PATTERN = re.compile("|".join(map(re.escape, _CJK_FILLER)))
_LATIN_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.,'/-]*[A-Za-z0-9]|[A-Za-z0-9]")


def one_line(text: str) -> str:
    """`text` on one line, code blocks taken out (a summary never copies code)."""
    return " ".join(_CODE_BLOCK.sub(" ", text).split())


def sentences(text: str) -> list[str]:
    """`text` split into trimmed sentences at end marks followed by a space (so "15.2"
    and "$48,500.00" stay whole), at Chinese end marks and at line breaks."""
    text = _CODE_BLOCK.sub("\n", text)
    return [" ".join(part.split()) for part in _SENTENCE_END.split(text) if part.strip()]


def is_question(sentence: str) -> bool:
    """Whether the sentence ends with a question mark (closing quotes aside)."""
    return sentence.rstrip(_TRAILING_CLOSERS).endswith(("?", "？"))


_OLD_NOTICE = f"{OFFLINE_PREFIX} No OPENAI_API_KEY is set, so this"
"""How earlier releases' offline answers opened: stored summaries still hold them."""


def is_offline_boilerplate(text: str) -> bool:
    """Whether an assistant text is the offline model's plain answer, which only restates
    memory; condensed copies in old summaries count too."""
    return text.startswith((OFFLINE_NOTICE[: len(OFFLINE_PREFIX) + 30], MEMORY_HEAD, _OLD_NOTICE))


def without_offline_prefix(text: str) -> str:
    """An assistant text without the offline model's "[offline model]" label."""
    return text.removeprefix(OFFLINE_PREFIX).strip()


def _has_name(sentence: str) -> bool:
    if _ACRONYM.search(sentence) or _CJK_QUOTED.search(sentence) or _NAME_CUE.search(sentence):
        return True
    if _CJK_RUN.search(sentence):
        # In Chinese text a Latin word is a name or a product ("Kafka", "PostgreSQL").
        return any(w.casefold() != "ok" for w in _LATIN_WORD.findall(sentence))
    # A capital at the start of a sentence says nothing; inside it, it marks a name.
    body = sentence.lstrip(_LEADING_OPENERS)
    return any(m.start() > 0 and m.group() not in _NOT_NAMES for m in _CAPITALISED.finditer(body))


def features(sentence: str) -> frozenset[Feature]:
    """The features of one sentence."""
    found = {feature for feature, pattern in _PATTERNS.items() if pattern.search(sentence)}
    if _has_name(sentence):
        found.add(Feature.NAME)
    return frozenset(found)


def salience(sentence: str, *, by_user: bool = False) -> int:
    """How much a sentence is worth keeping: its features' weights, a base point and a
    point for the user's own words."""
    score = BASE_SCORE + sum(WEIGHTS[feature] for feature in features(sentence))
    return score + USER_BONUS if by_user else score


def _stem(word: str) -> str:
    # Light stemming so "limits" and "limit" are one term; enough for overlap tests.
    word = word.removesuffix("'s").removesuffix("’s")
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def terms(text: str) -> frozenset[str]:
    """What `text` is about: Latin words and numbers (casefolded, filler out, lightly
    stemmed) and, for Chinese, the character pairs of what is left once filler is out."""
    folded = text.casefold()
    found = {
        _stem(token)
        for token in _LATIN_TOKEN.findall(_CJK_RUN.sub(" ", folded))
        if token not in _FILLER_WORDS
    }
    for run in _CJK_RUN.findall(_CJK_FILLER_PATTERN.sub(" ", folded)):
        if len(run) == 1:
            found.add(run)
        found.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(found)


def is_content_free(sentence: str) -> bool:
    """Whether a sentence carries nothing: no feature, and no term left once filler is
    out ("Thanks, that helps.", "Can you say a bit more about that?", "好的，明白了。")."""
    return not features(sentence) and not terms(sentence)


def clipped_line(text: str, limit: int) -> str:
    """`text` as one summary or question item: one line, at most `limit` characters."""
    return clamp(one_line(text), limit)
