"""Secret detection for the long-term write gate: code decides, never a model.

A text that discloses a secret is never stored, whoever proposed it. The checks look
for what people actually type in a chat, not for source-code syntax (`password = "…"`,
the shape tools such as detect-secrets are built for): a value introduced as a
password, pass phrase, secret, code word or PIN; API keys and tokens (well-known
prefixes, or long high-entropy strings); private keys; card numbers (Luhn); national
identity and passport numbers (checksums from python-stdnum where a format has one).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from enum import StrEnum

from stdnum import luhn
from stdnum.cn import ric
from stdnum.us import ssn


class SecretKind(StrEnum):
    """What a refused text looked like it disclosed (said to the user, never the value)."""

    PASSWORD = "a password or pass phrase"
    SECRET_VALUE = "a secret, code word or PIN"
    API_KEY = "an API key or access token"
    PRIVATE_KEY = "a private key"
    CARD = "a payment card number"
    IDENTITY = "an identity document number"


_INTRODUCED = r"\s*(?:is|was|:|=|：|是|为|為)\s*[\"'“‘(]?\S{2,}"
_TOKEN_LIKE = r"\s+[\"'“‘(]?(?=\S*[\d!@#$%^&*])\S{4,}"
_VALUE = f"(?:{_INTRODUCED}|{_TOKEN_LIKE})"
_PASSWORD = re.compile(
    r"(?:\b(?:pass ?(?:word|phrase|code)|pwd|passwd)s?\b|密码|口令)"
    r"(?:\s+(?:for|to|of|on|at)(?:\s+[\w.@-]+){1,4}?)?" + _VALUE,
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"(?:\b(?:secret(?: (?:word|phrase|question|answer|code))?|code ?word|safe ?word|"
    r"security (?:code|answer)|pin(?: code| number)?|cvv|cvc|otp|one-time code|"
    r"verification code|recovery (?:code|phrase)|seed phrase|mnemonic)\b|暗号|验证码|PIN码)"
    + _INTRODUCED,
    re.IGNORECASE,
)
_PIN_DIGITS = re.compile(r"\b(?:pin|cvv|cvc)\b\D{0,12}\d{3,8}\b", re.IGNORECASE)
_TOKEN_PREFIXES = re.compile(
    r"(?:\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
    r"|\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_-]{30,}|\bglpat-[A-Za-z0-9_-]{20,}|\bya29\.[A-Za-z0-9_-]{20,}"
    r"|\bhf_[A-Za-z0-9]{30,}|\bnpm_[A-Za-z0-9]{30,}|\bpypi-[A-Za-z0-9_-]{30,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|\bbearer\s+[A-Za-z0-9._~+/-]{16,})",
    re.IGNORECASE,
)
_TOKEN_WORDS = re.compile(
    r"\b(?:api[ _-]?key|access[ _-]?key|secret[ _-]?key|auth(?:entication)?[ _-]?token|"
    r"access[ _-]?token|refresh[ _-]?token|bearer[ _-]?token|token|client[ _-]?secret|"
    r"private[ _-]?token|webhook[ _-]?secret|密钥|令牌)\b"
    r"(?:\s+(?:for|to|of|on|at)(?:\s+[\w.@-]+){1,4}?)?\s*(?:is|was|:|=|是|为)?\s*[\"'“]?"
    r"[A-Za-z0-9._~+/=-]{8,}",
    re.IGNORECASE,
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File|"
    r"\bAGE-SECRET-KEY-1[0-9A-Z]{20,}",
    re.IGNORECASE,
)
_CARD_CANDIDATE = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_CN_RIC = re.compile(r"(?<!\d)\d{17}[\dXx](?![\dA-Za-z])")
_IDENTITY_WORDS = re.compile(
    r"(?:\b(?:passport|national (?:id|identity|insurance)|id (?:card|number|no\.?)|"
    r"identity (?:card|number)|social security|ssn|sin|nino|tax (?:id|number)|tin|nif|nie|"
    r"dni|aadhaar|driver'?s? licen[cs]e(?: number)?|licen[cs]e number)\b|身份证|护照|證件|证件)"
    r"(?:\s+(?:number|no\.?|#))?\s*(?:is|was|:|=|是|为|号码?)?\s*(?=[A-Z0-9-]*\d)[A-Z0-9-]{5,}",
    re.IGNORECASE,
)
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_+/=.-]{24,}")
ENTROPY_BITS_PER_CHAR = 3.6
"""Shannon entropy above which a long mixed token reads as a generated key, not a word
(English words and identifiers stay well below; base64 and hex keys sit above)."""


def shannon_entropy(text: str) -> float:
    """Bits per character of `text`'s own character distribution."""
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _high_entropy_token(text: str) -> bool:
    for match in _LONG_TOKEN.finditer(text):
        token = match.group().strip("./=-")
        if "://" in text[max(0, match.start() - 8) : match.start() + 3]:
            continue  # a URL path is not a key
        has_digit = any(c.isdigit() for c in token)
        has_alpha = any(c.isalpha() for c in token)
        if has_digit and has_alpha and shannon_entropy(token) >= ENTROPY_BITS_PER_CHAR:
            return True
    return False


def _card_number(text: str) -> bool:
    for match in _CARD_CANDIDATE.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and luhn.is_valid(digits) and len(set(digits)) > 1:
            return True
    return False


def _identity_number(text: str) -> bool:
    if any(ssn.is_valid(m.group()) for m in _SSN.finditer(text)):
        return True
    if any(ric.is_valid(m.group()) for m in _CN_RIC.finditer(text)):
        return True
    return bool(_IDENTITY_WORDS.search(text))


_CHECKS: tuple[tuple[SecretKind, Callable[[str], bool]], ...] = (
    (SecretKind.PRIVATE_KEY, lambda text: bool(_PRIVATE_KEY.search(text))),
    (SecretKind.API_KEY, lambda text: bool(_TOKEN_PREFIXES.search(text))),
    (SecretKind.API_KEY, lambda text: bool(_TOKEN_WORDS.search(text))),
    (SecretKind.PASSWORD, lambda text: bool(_PASSWORD.search(text))),
    (SecretKind.SECRET_VALUE, lambda text: bool(_SECRET_VALUE.search(text))),
    (SecretKind.SECRET_VALUE, lambda text: bool(_PIN_DIGITS.search(text))),
    (SecretKind.CARD, _card_number),
    (SecretKind.IDENTITY, _identity_number),
    (SecretKind.API_KEY, _high_entropy_token),
)


def find_secret(text: str) -> SecretKind | None:
    """What kind of secret `text` discloses, or None when it discloses none."""
    for kind, check in _CHECKS:
        if check(text):
            return kind
    return None
