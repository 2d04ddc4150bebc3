"""Redaction at the output boundary: a table of secret shapes, none may survive."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.events.redaction import redact, value_hash

# (input, the secret substring that must disappear, marker kind expected)
CASES = [
    ("export OPENAI_API_KEY=sk-proj-FAKEfakeFAKEfake0123456789", "sk-proj-FAKEfakeFAKEfake0123456789", None),
    ("ANTHROPIC_API_KEY=sk-ant-api03-FAKEfakeFAKEfake012345", "sk-ant-api03-FAKEfakeFAKEfake012345", None),
    ("push with ghp_FAKEfakeFAKEfakeFAKEfake01234", "ghp_FAKEfakeFAKEfakeFAKEfake01234", "github_token"),
    ("github_pat_11FAKEFAKE0123456789_abcdefghijklmnop", "github_pat_11FAKEFAKE0123456789_abcdefghijklmnop", None),
    ("aws AKIAFAKEFAKEFAKE1234 here", "AKIAFAKEFAKEFAKE1234", "aws_access_key"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiFAKEFAKEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiFAKEFAKEKEY",
        None,
    ),
    ("slack xoxb-0000000000-FAKEfakeFAKE", "xoxb-0000000000-FAKEfakeFAKE", "slack_token"),
    (
        "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmYWtlIn0.ZmFrZXNpZ25hdHVyZQ",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "jwt",
    ),
    ('curl -H "Authorization: Bearer FAKEbearer0123456789"', "FAKEbearer0123456789", "bearer"),
    ("curl -u x https://bob:FakePassw0rd@example.com/r", "FakePassw0rd", "url_credentials"),
    ("https://example.com/cb?access_token=FAKEtoken987&x=1", "FAKEtoken987", "query_credential"),
    ('{"password": "FakeHunter2!", "user": "bob"}', "FakeHunter2!", "assignment"),
    ("db:\n  password: FakeYamlSecret\n", "FakeYamlSecret", "assignment"),
    ("DB_PASSWORD=FakeEnvSecret99", "FakeEnvSecret99", "assignment"),
    ("client_secret: 'FakeClientSecret'", "FakeClientSecret", "assignment"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEFAKEFAKEFAKE\nFAKEFAKE\n-----END RSA PRIVATE KEY-----",
        "MIIEFAKEFAKEFAKE",
        "private_key",
    ),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaFAKE (cut off", "b3BlbnNzaFAKE", "private_key"),
    ("stripe sk_live_FAKEfakeFAKEfake0123", "sk_live_FAKEfakeFAKEfake0123", None),
    ("key AIzaFAKEfakeFAKEfakeFAKEfakeFAKEfake012", "AIzaFAKEfakeFAKEfakeFAKEfakeFAKEfake012", "google_api_key"),
    ("npm_FAKEfakeFAKEfakeFAKEfakeFAKEfake0123", "npm_FAKEfakeFAKEfakeFAKEfakeFAKEfake0123", "npm_token"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), CASES)
def test_secret_shapes_never_survive(text: str, secret: str, kind: str | None) -> None:
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    if kind:
        assert f"[REDACTED:{kind}:" in out


@pytest.mark.parametrize(
    "text",
    ["cat README.md && pytest -q", "git push origin main", "ls -la src/", "npm test", "grep -rn keyword src"],
)
def test_ordinary_commands_unchanged(text: str) -> None:
    assert redact(text) == text


def test_marker_hash_is_stable_and_keyed_per_value() -> None:
    a = redact("DB_PASSWORD=FakeOne1")
    b = redact("DB_PASSWORD=FakeOne1")
    c = redact("DB_PASSWORD=FakeTwo2")
    assert a == b and a != c
    assert value_hash("x") == value_hash("x") and len(value_hash("x")) == 16


def test_redaction_keeps_json_well_formed() -> None:
    import json

    out = redact('{"api_key": "FakeKeyValue123", "n": 1}')
    assert json.loads(out)["n"] == 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_property_redaction_is_idempotent_and_total(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [text for text, _secret, _kind in CASES]
            + ["é", "naïve ", " token ", "=", "password", "\n", "'", '"', "x" * 40, "🔑", "://u:p@h"]
        )
        | st.text(max_size=20),
        max_size=8,
    ).map("".join)
)
def test_property_byte_level_substitution_matches_the_reference(text: str) -> None:
    """The fast byte-level path gives exactly what RE2's own ``sub`` gives."""
    from telltale.events import redaction as r

    assert r._RAW_COMBINED is not None, "this google-re2 build exposes no raw Match"
    assert r._redact_raw(text) == r._redact_wrapper(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"cmd":"rg -n x src","max_output_tokens":12000,"workdir":"/w"}',  # every Codex shell call
        "usage: input_tokens=1234 output_tokens: 99",
        "max_tokens: 4096",
    ],
)
def test_token_counts_are_not_secrets(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("password: 12345678", "12345678"),  # a numeric password is still a password
        ('token: "12345"', "12345"),  # quoted: a string value, not a count
        ("token=12345678901234567890", "12345678901234567890"),  # too long for a count
        ("GH_TOKEN=12ab34cd56", "12ab34cd56"),
        ("API_TOKEN: 123456789012", "123456789012"),  # only ``...tokens`` keys hold counts
        ("X-Auth-Token: 834729", "834729"),
        ("tokenSecret=123456", "123456"),  # a password-like word after ``token`` in the key
        ("TOKENPASSWORD=123456", "123456"),
        ("max_output_tokens_limit=4000", "4000"),
    ],
)
def test_numeric_secrets_outside_counts_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text)
