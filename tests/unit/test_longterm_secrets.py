"""Secret detection: every kind is refused, and ordinary statements are not."""

from __future__ import annotations

import pytest

from memory.longterm import SecretKind, find_secret
from memory.longterm.secrets import shannon_entropy


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("my password is hunter2", SecretKind.PASSWORD),
        ("Remember my wifi passphrase: correct horse battery staple", SecretKind.PASSWORD),
        ("password for gmail = Tr0ub4dor&3", SecretKind.PASSWORD),
        ("我的密码是abc12345", SecretKind.PASSWORD),
        ("the code word is bluebird", SecretKind.SECRET_VALUE),
        ("My PIN is 4821", SecretKind.SECRET_VALUE),
        ("my bank pin 0937", SecretKind.SECRET_VALUE),
        ("the secret is that I hide the key under the mat", SecretKind.SECRET_VALUE),
        ("My API key is sk-proj-abcdefghijklmnopqrstu12345", SecretKind.API_KEY),
        ("use ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 for github", SecretKind.API_KEY),
        ("aws key AKIAIOSFODNN7EXAMPLE", SecretKind.API_KEY),
        ("my token: 9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c", SecretKind.API_KEY),
        ("remember x9Qz7LmP2vR8tK4wN6yB3cF5hJ1dS0aG", SecretKind.API_KEY),
        (
            "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA",
            SecretKind.PRIVATE_KEY,
        ),
        ("my card is 4111 1111 1111 1111", SecretKind.CARD),
        ("card 5500-0000-0000-0004 exp 12/29", SecretKind.CARD),
        ("my SSN is 123-45-6789", SecretKind.IDENTITY),
        ("passport number X12345678", SecretKind.IDENTITY),
        ("我的身份证号码是11010519491231002X", SecretKind.IDENTITY),
    ],
)
def test_each_secret_kind_is_found(text: str, kind: SecretKind) -> None:
    assert find_secret(text) is kind


@pytest.mark.parametrize(
    "text",
    [
        "I prefer short answers",
        "I am vegetarian",
        "I was born in 1987 and live at 221B Baker Street",
        "call me at extension 4411",
        "I don't share passwords",
        "my order number 1234567890123 is late",  # not Luhn-valid
        "see https://example.com/docs/getting-started-with-langgraph",
        "I like the internationalization guidelines",
        "pin the decision to use PostgreSQL",
    ],
)
def test_ordinary_statements_are_not_secrets(text: str) -> None:
    assert find_secret(text) is None


def test_entropy_separates_keys_from_words() -> None:
    assert shannon_entropy("internationalization") < 3.6 < shannon_entropy("x9Qz7LmP2vR8tK4wN6yB")
