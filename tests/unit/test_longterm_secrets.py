"""Secret detection: every kind is refused, and ordinary statements are not."""

from __future__ import annotations

import random

import pytest

from memory.analysis import redact_secrets
from memory.longterm import SecretKind, find_secret
from memory.longterm.secrets import shannon_entropy

FOUND_BY_KIND = [
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
    ("我的身份证号码是 E48213975", SecretKind.IDENTITY),
    ("我的身份证号码是11010519491231002X", SecretKind.IDENTITY),
]
"""Statements of every kind of secret, with the kind each discloses."""


@pytest.mark.parametrize(("text", "kind"), FOUND_BY_KIND)
def test_each_secret_kind_is_found(text: str, kind: SecretKind) -> None:
    assert find_secret(text) is kind


ORDINARY = [
    "I prefer short answers",
    "I am vegetarian",
    "I was born in 1987 and live at 221B Baker Street",
    "call me at extension 4411",
    "I don't share passwords",
    "my order number 1234567890123 is late",  # not Luhn-valid
    "see https://example.com/docs/getting-started-with-langgraph",
    "I like the internationalization guidelines",
    "pin the decision to use PostgreSQL",
    "my login is at 9am",
    "密码学是一门学科",
    "我的密码是多少来着？",
    "Username and password are required on that form.",
    "Use your user name and password from the onboarding email.",
    "The login page is broken / slow today",
    "My login is via Google / Apple ID.",
    "用户名或者密码错误，怎么办？",
    "账户是个人/企业账户两种",
    "Login is slow, took 30s",
    "the login for the portal is at 9am",
    "my sign-in is via Google SSO and 2FA",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_statements_are_not_secrets(text: str) -> None:
    assert find_secret(text) is None


def test_entropy_separates_keys_from_words() -> None:
    assert shannon_entropy("internationalization") < 3.6 < shannon_entropy("x9Qz7LmP2vR8tK4wN6yB")


PHRASINGS = [
    "My password's Tr0ub4dor&3",
    "Tr0ub4dor&3 is my email password",
    "The password I use everywhere is Summer2019!",
    "My pw is hunter22",
    "Remember my bank password, I always use Pa55word!",
    "我的邮箱密码就是qwe12345",
    "我的密码：Shanghai88",
    "my card is 4111.1111.1111.1111",
    "卡号４１１１１１１１１１１１１１１１",
    "My IBAN is DE89 3704 0044 0532 0130 00.",
    "IBAN: FR1420041010050500013M02606",
    "My SSN is 123 45 6789.",
    "SSN 123456789",
    "My national insurance number is AB 12 34 56 C.",
    "4821 is my PIN",
    "The PIN for my debit card is 4821",
    "My phone unlock code is 739201.",
    "The garage door code is 2580.",
    "My 2FA code is 448812.",
    "Backup codes: 1234-5678 9876-5432",
    "My security question answer is Fluffy.",
    "验证码是392018",
    "门禁密码1357，帮我记住。",
    "口令是“天王盖地虎”",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]
"""Secrets said in the many ways people say them."""

PASSWORDS_BESIDE_CHINESE_OR_A_USER_NAME = [
    "password是abc123XYZq",
    "我的pin是4821",
    "我的passcode是778899",
    "公司VPN的password是 秘密花园",
    "my bank login is jsmith / P@ssw0rd!77",
    "credentials: admin / letmein",
    "Netflix login: jane@example.com / Summer2024",
    "username jsmith password letmein",
    "user: alice  pass: wonderland",
    "用户名admin，密码qwerty",
    "我的账号是 lihua88 / 登录密码 hua2024",
    "my netflix login is jsmith:P@ssw0rd!77",
    "my bank login is jsmith P@ssw0rd!77",
    "My login for the bank is jsmith and P@ssw0rd!77",
]
"""An English secret word written against Chinese, and a user name given with its
password ("login is user / password", "username X password Y")."""


@pytest.mark.parametrize("text", PASSWORDS_BESIDE_CHINESE_OR_A_USER_NAME)
def test_passwords_beside_chinese_or_a_user_name_are_found(text: str) -> None:
    assert find_secret(text) in (SecretKind.PASSWORD, SecretKind.SECRET_VALUE)


@pytest.mark.parametrize("text", PHRASINGS)
def test_secrets_in_any_phrasing_are_found(text: str) -> None:
    assert find_secret(text) is not None


def test_random_hex_keys_are_found_without_a_keyword() -> None:
    draw = random.Random(19)
    keys = [f"{draw.getrandbits(128):032x}" for _ in range(400)]
    assert all(find_secret(key) is not None for key in keys)
    assert all(find_secret(f"use {key} for the build") is not None for key in keys)


PROFILE_STATEMENTS = [
    "Never put calls before 10am.",
    "I take the 7:45 train to work",
    "My zip code is in Denver",
    "Write code examples in Rust.",
    "我每天坐地铁通勤。",
    "The app I'm building is written in Go 1.22",
    "I'm 34 and have two kids",
]
"""What a profile holds that has digits and is no secret."""


@pytest.mark.parametrize("text", PROFILE_STATEMENTS)
def test_profile_statements_with_numbers_are_not_secrets(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "I am allergic to peanuts. My wifi password is sunflower2024.",
            "I am allergic to peanuts. [redacted]",
        ),
        (
            "I live in Porto.\nmy pin is 4821\nI like tea",
            "I live in Porto.\n[redacted]\nI like tea",
        ),
        # the secret's name in one sentence, its value in the next: nothing is kept
        ("Remember my bank password. It's hunter2!", "[redacted]"),
        ("I like tea.", "I like tea."),
        ("I bank online. my bank login is jsmith / P@ssw0rd!77", "I bank online. [redacted]"),
    ],
)
def test_what_is_kept_of_a_text_leaves_out_each_sentence_with_a_secret(
    text: str, kept: str
) -> None:
    assert redact_secrets(text) == kept
