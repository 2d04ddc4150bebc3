"""Redaction at the output boundary: every catalogued shape, in every written form, is
masked with its kind; ordinary text, ids and hashes are left alone."""

from __future__ import annotations

import json
import random
import re
import uuid

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from secret_samples import SAMPLES, generate
from telltale.events.redaction import (
    redact,
    redact_arguments,
    redact_document,
    redact_excerpt,
    value_hash,
)
from telltale.events.secret_shapes import VENDOR_SHAPES, entropy, key_kind

_SAMPLES = generate()
_IDS = [name for name, _kind, _sample in _SAMPLES]
_RNG = random.Random(16)
_V40 = "".join(_RNG.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+") for _ in range(40))
_HEX40 = "".join(_RNG.choice("0123456789abcdef") for _ in range(40))


def _marker_of(kind: str) -> re.Pattern[str]:
    return re.compile(r"\[REDACTED:" + re.escape(kind) + r":[0-9a-f]{16}\]")


def test_every_vendor_shape_has_a_generated_sample() -> None:
    kinds = {kind for _name, kind, _make in SAMPLES}
    assert {shape.kind for shape in VENDOR_SHAPES} <= kinds
    assert len(SAMPLES) >= 60


@pytest.mark.parametrize(("name", "kind", "sample"), _SAMPLES, ids=_IDS)
def test_shape_is_masked_with_its_kind(name: str, kind: str, sample: object) -> None:
    text, secret = sample  # type: ignore[misc]
    out = redact(text)
    assert secret not in out
    assert _marker_of(kind).search(out), out


@pytest.mark.parametrize(("name", "kind", "sample"), _SAMPLES, ids=_IDS)
def test_shape_is_masked_inside_prose_and_lines(name: str, kind: str, sample: object) -> None:
    text, secret = sample  # type: ignore[misc]
    for placed in (f"please use this:\n{text}\nthanks", f"note {text} end", f"# {text}"):
        assert secret not in redact(placed), placed


@pytest.mark.parametrize(("name", "kind", "sample"), _SAMPLES, ids=_IDS)
def test_shape_is_masked_inside_json_arguments(name: str, kind: str, sample: object) -> None:
    """File content written through a tool: JSON-encoded, with ``\\n`` escapes around it."""
    text, secret = sample  # type: ignore[misc]
    arguments = msgspec.json.encode({"file_path": "/w/.env", "content": f"A=1\n{text}\nB=2"}).decode()
    out, cut = redact_arguments(arguments)
    assert not cut
    assert secret not in out and secret not in json.loads(out)["content"]
    assert json.loads(out)["file_path"] == "/w/.env"


@pytest.mark.parametrize(("name", "kind", "sample"), _SAMPLES, ids=_IDS)
def test_shape_is_masked_in_a_json_excerpt(name: str, kind: str, sample: object) -> None:
    """Detection evidence cut out of JSON text: decoded before it is redacted."""
    text, secret = sample  # type: ignore[misc]
    encoded = msgspec.json.encode({"content": f"x\n{text}\n"}).decode()
    out = redact_excerpt(encoded, json_text=True)
    assert secret not in out


def test_escaped_newline_and_escaped_quotes_no_longer_hide_a_secret() -> None:
    value = "0123456789abcdef" * 4
    args = msgspec.json.encode({"content": f"RAILS_ENV=prod\nSECRET_KEY_BASE={value}\n"}).decode()
    assert "\\nSECRET_KEY_BASE" in args
    out, _ = redact_arguments(args)
    assert value not in out and "[REDACTED:secret:" in out
    nested = msgspec.json.encode({"content": json.dumps({"password": "Fq8!xZ2mPq", "user": "bob"})}).decode()
    out, _ = redact_arguments(nested)
    assert "Fq8!xZ2mPq" not in out and json.loads(json.loads(out)["content"])["user"] == "bob"


def test_a_secret_naming_json_key_masks_its_value_whole() -> None:
    out, _ = redact_arguments('{"auth":"YnVpbGRlcjpodW50ZXIy","n":3,"pin":1234,"max_tokens":4096}')
    doc = json.loads(out)
    assert doc["auth"].startswith("[REDACTED:auth:")
    assert doc["n"] == 3 and doc["max_tokens"] == 4096 and doc["pin"] == 1234


def test_arguments_without_a_secret_keep_their_encoding() -> None:
    args = '{"cmd":"rg -n x src","max_output_tokens":12000,"workdir":"/w"}'
    assert redact_arguments(args) == (args, False)


def test_arguments_are_bounded_after_redaction() -> None:
    token = "glpat-" + "Ab1" * 8
    args = msgspec.json.encode({"content": "x" * 3000 + token, "path": "/p"}).decode()
    out, cut = redact_arguments(args, 2048, 512)
    assert cut and len(out) <= 2048 and "glpat" not in out
    near = msgspec.json.encode({"content": "x" * 2030 + token}).decode()
    out, cut = redact_arguments(near, 2048, 512)
    assert cut and token[:10] not in out


def test_free_form_arguments_are_redacted_as_text() -> None:
    patch = "*** Begin Patch\n*** Add File: .env\n+GITLAB_TOKEN=glpat-" + "Zz9" * 8 + "\n*** End Patch"
    out, _ = redact_arguments(patch)
    assert "Zz9Zz9" not in out and "[REDACTED:gitlab_token:" in out


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        # The value after the secret-naming key is masked, never the next key name.
        ("credentials:\n  aws_secret_access_key: " + _V40, _V40, "secret"),
        ("password:\n  value: Hq2!vv8Lkk", None, None),
        ("DD_APP_KEY=" + _HEX40, _HEX40, "key"),
        ("mysql --password Pz7!nQ2w app", "Pz7!nQ2w", "password"),
        ("mysql --password=Pz7!nQ2w app", "Pz7!nQ2w", "password"),
        ("curl -u admin:Pz7!nQ2w https://x.test", "Pz7!nQ2w", "basic_auth_password"),
        ("curl --user admin:Pz7!nQ2w https://x.test", "Pz7!nQ2w", "basic_auth_password"),
        ('curl -H "Authorization: Bearer abcDEF123ghiJKL456"', "abcDEF123ghiJKL456", "http_authorization"),
        ("GITLAB_TOKEN=glpat-" + "Qw9" * 8, "glpat-" + "Qw9" * 8, "gitlab_token"),
        ("machine h\n  login u\n  password Pz7!nQ2w\n", "Pz7!nQ2w", "netrc_password"),
        ('api_key = "Pz7!nQ2wPz7!nQ2w"', "Pz7!nQ2wPz7!nQ2w", "api_key"),
        ("[db]\npassword=Pz7!nQ2w\n", "Pz7!nQ2w", "password"),
    ],
)
def test_context_rules(text: str, secret: str | None, kind: str | None) -> None:
    out = redact(text)
    if secret is None:
        assert "Hq2!vv8Lkk" in out or "[REDACTED:" in out
        return
    assert secret not in out, out
    assert f"[REDACTED:{kind}:" in out, out


def test_the_http_scheme_stays_readable() -> None:
    out = redact("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==")
    assert out.startswith("Authorization: Basic [REDACTED:http_authorization:")


@pytest.mark.parametrize(
    "text",
    [
        "cat README.md && pytest -q",
        "git push origin main",
        "grep -rn keyword src",
        f"session {uuid.uuid4()} resumed",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "sha256:" + "a3" * 32,
        "path_hash 9f2c4e1a0b3d5f67",
        "/home/dev/project/src/telltale/events/redaction.py",
        "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO",
        "token_type: bearer",
        "password_file: /run/secrets/db",
        "key: hello",
        "the token authentication flow uses Bearer authentication",
        "max_tokens: 4096",
        "password=$DB_PASSWORD",
        'token: "${{ secrets.GH_TOKEN }}"',
        "docker run -u 1000:1000 image",
        "primary_key: user_id",
    ],
)
def test_ordinary_text_ids_and_hashes_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_entropy_fallback_only_in_secret_named_positions() -> None:
    rng = random.Random(7)
    rnd = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(24))
    assert entropy(rnd) >= 3.5
    assert rnd in redact(f"value {rnd} here")  # a bare random string is not a secret
    assert rnd not in redact(f"key: {rnd}")  # a lone ``key`` with a random value is
    assert "hello-world" in redact("key: hello-world")
    assert key_kind("key") == ("key", False)
    assert key_kind("DD_APP_KEY") == ("key", True)
    assert key_kind("client-key-data") == ("key", True)
    assert key_kind("sort_key") is None and key_kind("keyboard") is None


def test_marker_hash_is_stable_and_keyed_per_value() -> None:
    a = redact("DB_PASSWORD=FakeOne1")
    b = redact("DB_PASSWORD=FakeOne1")
    c = redact("DB_PASSWORD=FakeTwo2")
    assert a == b and a != c
    assert value_hash("x") == value_hash("x") and len(value_hash("x")) == 16


def test_redaction_keeps_json_well_formed() -> None:
    out = redact('{"api_key": "FakeKeyValue123", "n": 1}')
    assert json.loads(out)["n"] == 1


def test_excerpt_edges_cut_through_a_secret_are_masked() -> None:
    half = "Zq8vN2kLm4Pw7Rt1Xy5Bc9Df"
    assert half not in redact_excerpt(f"{half} rest of the evidence")
    assert half not in redact_excerpt(f"evidence ends {half}")
    assert redact_excerpt("rm -rf /home/dev/project") == "rm -rf /home/dev/project"


def test_documents_are_redacted_string_by_string() -> None:
    token = "glpat-" + "Ab2" * 8
    doc = {"a": [f"x {token}"], "b": {"c": token}, "n": 1}
    out = redact_document(doc)
    assert token not in json.dumps(out) and out["n"] == 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_property_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from([s.text for _n, _k, s in _SAMPLES])
        | st.sampled_from(["é", " token ", "=", "password", "\n", "'", '"', "\\n", ": ", "🔑", "://u:p@h"])
        | st.text(max_size=12),
        min_size=1,
        max_size=6,
    ),
)
def test_property_no_sample_survives_any_surrounding(parts: list[str]) -> None:
    secrets = [s.secret for _n, _k, s in _SAMPLES if s.text in parts]
    out = redact(" ".join(parts))
    for secret in secrets:
        assert secret not in out
    args, _ = redact_arguments(msgspec.json.encode({"content": "\n".join(parts)}).decode())
    for secret in secrets:
        assert secret not in args


@pytest.mark.parametrize(
    "text",
    [
        '{"cmd":"rg -n x src","max_output_tokens":12000,"workdir":"/w"}',  # every Codex shell call
        "usage: input_tokens=1234 output_tokens: 99",
        "max_tokens: 4096",
        "max_output_tokens_limit=4000",  # a limit, not a secret
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
        ("tokenSecret=123456", "123456"),
        ("TOKENPASSWORD=123456", "123456"),
    ],
)
def test_numeric_secrets_outside_counts_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text)
