"""Secret detection for the long-term write gate: code decides, never a model.

A text that discloses a secret is never stored or recalled, whoever proposed it. The
whole text is scanned after NFKC normalisation (full-width digits become ASCII) for: a
value near a word that names a secret, in either order, in English or Chinese ("4821 is
my PIN", "password是…"); a user name given with its password; key formats from
detect-secrets' maintained regex plugins (its keyword and entropy plugins are built for
source code, and a public IP is no secret) and a few it lacks; long tokens of high
entropy; checksummed numbers (python-stdnum: cards, IBANs, SSNs, Chinese resident ids)
and identity numbers after their name.

A pattern the engine would try at every position sits behind a gate of the literals
any match contains (`memory.longterm.prefilter`), which skips only what cannot match.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import cast

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.ip_public import IPPublicDetector
from stdnum import iban, luhn
from stdnum.cn import ric
from stdnum.us import ssn

from memory.longterm.prefilter import Prefiltered


class SecretKind(StrEnum):
    """What a refused text looked like it disclosed (said to the user, never the value)."""

    PASSWORD = "a password or pass phrase"
    SECRET_VALUE = "a secret, code word or PIN"
    API_KEY = "an API key or access token"
    PRIVATE_KEY = "a private key"
    CARD = "a payment card number"
    BANK_ACCOUNT = "a bank account number"
    IDENTITY = "an identity document number"


_WORDS = re.I | re.A
"""The flags of the patterns: ASCII word boundaries, so that an English word or a number
written against Chinese ("password是…", "我的pin是…") still begins and ends a word."""


def _gated(pattern: str) -> Prefiltered:
    """`pattern` compiled with those flags, behind its gate."""
    return Prefiltered(re.compile(pattern, _WORDS))


_ASKED = r"(?!什么|多少|啥|哪|怎么|几)"
"""A question ("我的密码是多少") names a secret without telling it."""
_INTRODUCED = r"\s*(?:is|was|:|=|：|是|为|為)\s*" + _ASKED + r"[\"'“‘(]?\S{2,}"
_TOKEN_LIKE = r"\s+[\"'“‘(]?(?=\S*[\d!@#$%^&*])\S{4,}"
_VALUE = f"(?:{_INTRODUCED}|{_TOKEN_LIKE})"
_PASSWORD = _gated(
    r"(?:\b(?:pass ?(?:word|phrase|code)|pwd|passwd)s?\b|密码(?!学)|口令)"
    r"(?:\s+(?:for|to|of|on|at)(?:\s+[\w.@-]+){1,4}?)?" + _VALUE,
)
_SECRET_VALUE = _gated(
    r"(?:\b(?:secret(?: (?:word|phrase|question|answer|code))?|code ?word|safe ?word|"
    r"security (?:code|answer)|pin(?: code| number)?|cvv|cvc|otp|one-time code|"
    r"verification code|recovery (?:code|phrase)|seed phrase|mnemonic)\b|暗号|验证码|PIN码)"
    + _INTRODUCED,
)
_PIN_DIGITS = _gated(r"\b(?:pin|cvv|cvc)\b\D{0,12}\d{3,8}\b")
_TOKEN_PREFIXES = _gated(
    r"(?:\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
    r"|\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_-]{30,}|\bglpat-[A-Za-z0-9_-]{20,}|\bya29\.[A-Za-z0-9_-]{20,}"
    r"|\bhf_[A-Za-z0-9]{30,}|\bnpm_[A-Za-z0-9]{30,}|\bpypi-[A-Za-z0-9_-]{30,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|\bbearer\s+[A-Za-z0-9._~+/-]{16,})",
)
_TOKEN_WORDS = _gated(
    r"\b(?:api[ _-]?key|access[ _-]?key|secret[ _-]?key|auth(?:entication)?[ _-]?token|"
    r"access[ _-]?token|refresh[ _-]?token|bearer[ _-]?token|token|client[ _-]?secret|"
    r"private[ _-]?token|webhook[ _-]?secret|密钥|令牌)\b"
    r"(?:\s+(?:for|to|of|on|at)(?:\s+[\w.@-]+){1,4}?)?\s*(?:is|was|:|=|是|为)?\s*[\"'“]?"
    r"[A-Za-z0-9._~+/=-]{8,}",
)
_PRIVATE_KEY = _gated(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File|"
    r"\bAGE-SECRET-KEY-1[0-9A-Z]{20,}",
)
_LOGIN_PAIR = _gated(
    r"(?:\b(?:log ?in|sign[ -]?in|credentials?|creds)s?\b|账号|帐号|账户|登录|登陆)"
    r"(?:\s+(?:details|info))?(?:\s+(?:for|to|of|on|at)(?:\s+[\w.@-]+){1,4}?)?"
    r"\s*(?:is|are|was|:|=|：|是|为)\s*[\"'“]?[^\s/|:]{2,}"
    r"(?:\s*[/|]\s*(?!pass|pw|pin\b|密码)(?=[!-~]{4})[^\s/|]{4,}"
    r"|(?::|\s+(?:and\s+)?)(?!pass|pw|pin\b|密码)(?=\S*[\d!@#$%^&*])[!-~]{6,})",
)
"""A user name and a password as a pair: "my bank login is jsmith / P@ssw0rd!77",
"my netflix login is jsmith:P@ssw0rd!77", "… is jsmith and P@ssw0rd!77" (without a
slash, the second must look like a password: a digit or a symbol in it)."""
_FILLER = (
    r"(?!(?:and|or|then|is|are|was|were|the|a|an|my|your|this|that|for|from|to|of|in|on|"
    r"at|by|with|as|if|but|can|must|should|will|please|name|field|fields|required|needed|"
    r"reset|manager)\b)"
)
"""Prose words, which stand where a user name or a password would in a sentence about
logging in ("username and password are required")."""
_USER_THEN_PASSWORD = _gated(
    r"(?:\b(?:user ?(?:name|id)?|log ?in|account)\b|账号|帐号|账户|用户名|登录名)"
    r"\s*(?:is|:|=|：|是|为)?\s*" + _FILLER + r"[\w.@+-]{2,}[\s,，;；、/]*(?:and\s+)?"
    r"(?:(?:my|the)\s+)?(?:\bpass(?:word|wd|code)?\b|\bpwd\b|\bpw\b|密码|口令)"
    r"\s*(?:is|:|=|：|是|为)?\s*" + _FILLER + r"[!-~]{3,}",
)
"""A user name followed by its password: "username jsmith password letmein"."""
_CARD_CANDIDATE = re.compile(r"(?<![\d-])(?:\d[ .-]?){12,18}\d(?![\d-])")
_CN_RIC = re.compile(r"(?<!\d)\d{17}[\dXx](?![\dA-Za-z])")
_IDENTITY_WORDS = _gated(
    r"(?:\b(?:passport|national (?:id|identity|insurance)(?: number| no\.?)?|"
    r"ni (?:number|no\.?)|id (?:card|number|no\.?)|"
    r"identity (?:card|number)|social security|ssn|sin|nino|tax (?:id|number)|tin|nif|nie|"
    r"dni|aadhaar|driver'?s? licen[cs]e(?: number)?|licen[cs]e number)\b|身份证|护照|證件|证件)"
    r"\.?(?:\s+(?:number|no\.?|#))?\s*(?:号码?)?\s*(?:is|was|:|=|是|为)?\s*"
    r"(?=[A-Z0-9 -]*\d)[A-Z0-9][A-Z0-9 -]{4,}",
)
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_+/=.-]{20,}")
ENTROPY_SHARE = 0.75
"""A long token with digits and letters is a generated key when its entropy (bits per
character) reaches this share of the most its length and alphabet allow: random
32-hex keys sit near 3.7 of 4 bits, words and identifiers well below their bound."""

_SECRET_NAME = (
    r"(?:\b(?:pass(?:word|wd|phrase|code)s?|pwd|pw|pins?|pin (?:code|number)|cvv|cvc|2fa|"
    r"mfa|otp|one[- ]time (?:code|password)|verification code|auth(?:entication)? code|"
    r"backup codes?|recovery (?:codes?|phrase|key)|seed phrase|mnemonic|security (?:question|"
    r"answer|code)s?|maiden name|secret(?: (?:word|phrase|answer|code))?|code ?word|"
    r"safe ?word|unlock code|combo|combination|disarm (?:code|number)|key ?code|"
    r"(?:door|gate|alarm|garage|safe|lock|locker|entry|access|"
    r"building|house|keypad|bike lock|front door|login|sms|wifi|wi-fi) codes?)\b"
    r"|密码(?!学)|口令|验证码|暗号|密钥|校验码|动态码|安全问题|PIN码)"
)
_NAME = _gated(_SECRET_NAME)
_NAMED_VALUE_AFTER = _gated(
    _SECRET_NAME
    + r"(?:'s|s)?[^.。\n]{0,40}?(?:\bis\b|\bwas\b|:|=|：|是|为|就是)\s*"
    + _ASKED
    + r"[\"'“‘「]?[^\s\"'”’」。，,]{2,}",
)
_VALUE_BEFORE_NAME = _gated(
    r"(?:\S*\d\S*|[\"'“][^\"'”]+[\"'”])\s+(?:is|was|=|are)\s+(?:my|the|our|his|her)\s+"
    r"(?:[\w-]+\s+){0,3}?" + _SECRET_NAME + r"|(?:use|used|using)\s+\S+\s+(?:as|for)\s+"
    r"(?:my|the|our)\s+(?:[\w-]+\s+){0,3}?" + _SECRET_NAME,
)
_CODE_NEAR_LOCK = _gated(
    r"\bcodes?\b[^.\n]{0,30}\b(?:door|gate|alarm|garage|safe|lock|locker|building|house|"
    r"keypad|phone|wifi|bank|account|vault)\b|\b(?:door|gate|alarm|garage|safe|lock|locker|"
    r"building|keypad|vault)\b[^.\n]{0,20}\bcodes?\b|门禁|保险箱|保险柜|门锁|密码锁"
    r"|\b(?:alarm|locker|keypad|safe|vault|padlock|garage door|front door)\b",
)
_VALUE_TOKEN = re.compile(
    r"(?<![\w-])(?=[\w!@#$%^&*()+=~.-]*\d)[\w!@#$%^&*()+=~.#-]{3,}"
    r"|(?<![\w-])(?=\S*[A-Za-z])(?=\S*[!@#$%^&*])\S{5,}"
)
_NOT_A_VALUE = re.compile(r"^(?:2fa|mfa|\d{1,2}(?:am|pm|st|nd|rd|th|s)|\d{1,2}[:.]\d{2})$", re.I)
_WINDOW = 60


def _named_secret(text: str) -> bool:
    """A value next to a word that names a secret, in either order."""
    names = [m.span() for pattern in (_NAME, _CODE_NEAR_LOCK) for m in pattern.finditer(text)]
    if not names:
        return False  # both patterns below need a name, and the scan of names is cheap
    if _NAMED_VALUE_AFTER.search(text) or _VALUE_BEFORE_NAME.search(text):
        return True
    for start, end in names:
        window = text[max(0, start - _WINDOW) : end + _WINDOW]
        for token in _VALUE_TOKEN.findall(window):
            if not _NOT_A_VALUE.match(token.strip(".,!")):
                return True
    return False


@functools.cache
def _maintained_patterns() -> tuple[Prefiltered, ...]:
    """The key formats of detect-secrets' regex plugins (its public-IP plugin aside),
    each behind its gate: most need a prefix ("ghp_", "xox", "AKIA") no prose holds."""
    found: list[re.Pattern[str]] = []
    plugins: list[type] = list(get_mapping_from_secret_type_to_class().values())
    for plugin in plugins:
        if issubclass(plugin, RegexBasedDetector) and plugin is not IPPublicDetector:
            # each regex plugin keeps its patterns in a class attribute
            found.extend(cast("Iterable[re.Pattern[str]]", vars(plugin).get("denylist", ())))
    return tuple(map(Prefiltered, found))


def _maintained_key(text: str) -> bool:
    return any(pattern.search(text) for pattern in _maintained_patterns())


_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b", _WORDS)
_SSN_SPACED = re.compile(r"(?<!\d)\d{3}([ -])\d{2}\1\d{4}(?!\d)")
_SSN_BARE = _gated(r"\b(?:ssn|social security)\b\D{0,20}(\d{9})\b")
_UK_NINO = re.compile(
    r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b", _WORDS
)


def _bank_account(text: str) -> bool:
    return any(iban.is_valid(m.group()) for m in _IBAN.finditer(text))


def shannon_entropy(text: str) -> float:
    """Bits per character of `text`'s own character distribution."""
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in Counter(text).values())


def _high_entropy_token(text: str) -> bool:
    for match in _LONG_TOKEN.finditer(text):
        token = match.group().strip("./=-")
        if len(token) < 20 or "://" in text[max(0, match.start() - 8) : match.start() + 3]:
            continue  # a URL path is not a key
        if not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
            continue
        alphabet = 16 if re.fullmatch(r"[0-9a-fA-F]+", token) else 64
        bound = math.log2(min(len(token), alphabet))
        if shannon_entropy(token) >= ENTROPY_SHARE * bound:
            return True
    return False


def _card_number(text: str) -> bool:
    for match in _CARD_CANDIDATE.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and luhn.is_valid(digits) and len(set(digits)) > 1:
            return True
    return False


def _identity_number(text: str) -> bool:
    if not any(c.isdigit() for c in text):
        return False  # every identity pattern below needs digits
    return (
        any(ssn.is_valid(m.group().replace(" ", "-")) for m in _SSN_SPACED.finditer(text))
        or any(ssn.is_valid(m.group(1)) for m in _SSN_BARE.finditer(text))
        or bool(_UK_NINO.search(text))
        or any(ric.is_valid(m.group()) for m in _CN_RIC.finditer(text))
        or bool(_IDENTITY_WORDS.search(text))
    )


_CHECKS: tuple[tuple[SecretKind, tuple[Callable[[str], object], ...]], ...] = (
    (SecretKind.PRIVATE_KEY, (_PRIVATE_KEY.search,)),
    (SecretKind.API_KEY, (_TOKEN_PREFIXES.search, _maintained_key, _TOKEN_WORDS.search)),
    (SecretKind.PASSWORD, (_PASSWORD.search, _LOGIN_PAIR.search, _USER_THEN_PASSWORD.search)),
    (SecretKind.SECRET_VALUE, (_named_secret, _SECRET_VALUE.search, _PIN_DIGITS.search)),
    (SecretKind.CARD, (_card_number,)),
    (SecretKind.BANK_ACCOUNT, (_bank_account,)),
    (SecretKind.IDENTITY, (_identity_number,)),
    (SecretKind.API_KEY, (_high_entropy_token,)),
)


@functools.lru_cache(maxsize=8192)
def find_secret(text: str) -> SecretKind | None:
    """What kind of secret `text` discloses, or None when it discloses none. Cached:
    recall checks a session's items on every turn, and most have not changed."""
    text = unicodedata.normalize("NFKC", text)
    for kind, checks in _CHECKS:
        if any(check(text) for check in checks):
            return kind
    return None
