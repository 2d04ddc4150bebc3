"""Redaction: the single output boundary where secrets are removed.

Everything that leaves Telltale (event documents, detection evidence) passes through
:func:`redact`. Nothing upstream redacts, so there is exactly one place to audit.

A secret is replaced by ``[REDACTED:<kind>:<hash>]``. The hash is a keyed SHA-256 of the
secret (key from ``TELLTALE_REDACTION_KEY``, else a fixed default), so analysts can tell
two occurrences of one secret apart from two different secrets without the value being
recoverable by anyone who lacks the key. Fleets should set their own key.

The same keyed hash names message text, tool arguments and results in activity events
(~100 MB of text per 200 MB of transcript): SHA-256 runs on the CPU's SHA extensions
through OpenSSL, about twice BLAKE2b's speed here. The key is a full first block
(``SHA-256(key)`` twice), so each value costs a copy of an already keyed state; the
output is cut to 64 bits, which also leaves no digest to extend.
"""

from __future__ import annotations

import functools
import hashlib
import os
from typing import Any

import re2

_DEFAULT_KEY = b"telltale-redaction-v1"


def _key() -> bytes:
    env = os.environ.get("TELLTALE_REDACTION_KEY")
    return env.encode("utf-8") if env else _DEFAULT_KEY


_KEY = _key()
# The key fills SHA-256's first 64-byte block: copying this state costs no compression.
_KEYED = hashlib.sha256(hashlib.sha256(_KEY).digest() * 2)


def value_hash(value: str) -> str:
    """Short keyed hash of a value (16 hex digits), stable for one redaction key."""
    return size_and_hash(value)[1]


def size_and_hash(value: str) -> tuple[int, str]:
    """UTF-8 size and :func:`value_hash` of a value, encoding it once (long texts)."""
    data = value.encode("utf-8", "surrogatepass")
    digest = _KEYED.copy()
    digest.update(data)
    return len(data), digest.hexdigest()[:16]


def _marker(kind: str, secret: str) -> str:
    return f"[REDACTED:{kind}:{value_hash(secret)}]"


# Each entry: (kind, pattern, group holding the secret). Order matters: private keys and
# specific token shapes first, generic assignments last. Patterns avoid nested
# quantifiers; RE2 keeps matching linear on hostile input whatever the pattern.
_KEYWORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?key"
    r"|client[_-]?secret|private[_-]?key|credentials?|session[_-]?key|signing[_-]?key"
    r"|aws_secret_access_key"
)
#: ``token`` keys are the exception: ``max_output_tokens``, ``input_tokens`` or
#: ``max_tokens`` (keys ending in ``tokens``) carry counts; every Codex shell call has
#: ``"max_output_tokens":12000``. Their unquoted value is a secret unless it is a bare
#: number of up to 15 digits; a marker there would hide a useful number (and cost a
#: substitution per event). Any other token key (``API_TOKEN``, ``X-Auth-Token``), a quoted
#: or longer number, and any number assigned to a password-like key are still redacted.
_TOKEN_KEYWORD = r"token"
_OPERATOR = r"[\"']?\s{0,5}(?::|=|:=|=>)\s{0,5}"
_ASSIGN = r"[A-Za-z0-9_.-]{0,40}" + _OPERATOR
_QUOTED = r"\"[^\"\n]{3,}\"|'[^'\n]{3,}'"
_VALUE_CHAR = r"[^\s\"',;}{)(\]\[]"
_VALUE_NON_DIGIT = r"[^\s\"',;}{)(\]\[0-9]"
_NOT_A_COUNT = (  # three or more value characters, unless all of them are (up to 15) digits
    _VALUE_NON_DIGIT + _VALUE_CHAR + "{2,}"
    + "|[0-9]{1,15}" + _VALUE_NON_DIGIT + _VALUE_CHAR + "*"
    + "|[0-9]{16,}" + _VALUE_CHAR + "*"
)
_PATTERNS: tuple[tuple[str, str, int], ...] = (
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)",
        0,
    ),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{16,}", 0),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", 0),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", 0),
    ("aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b", 0),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
    ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{10,}", 0),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}\b", 0),
    ("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", 0),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
    ("bearer", r"(?i)\b(?:bearer|basic|token)\s+(?P<{S}>[A-Za-z0-9._~+/=-]{12,})", 1),
    ("url_credentials", r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@\"']{1,256}:(?P<{S}>[^\s@/\"']{1,256})@", 1),
    (
        "query_credential",
        r"(?i)[?&](?:access_token|token|api_key|apikey|key|secret|password|passwd|sig|signature"
        r"|client_secret|auth|x-amz-signature|x-amz-credential|x-amz-security-token)=(?P<{S}>[^&\s\"'#]{4,})",
        1,
    ),
    (
        "assignment",
        r"(?i)(?:\b|_)(?:" + _KEYWORDS + ")" + _ASSIGN + r"(?P<{S}>" + _QUOTED + r"|" + _VALUE_CHAR + "{3,})",
        1,
    ),
    (
        # ``...tokens`` keys (plural) carry counts: a bare number there is not a secret.
        "assignment",
        r"(?i)(?:\b|_)" + _TOKEN_KEYWORD + "s" + _OPERATOR + r"(?P<{S}>" + _QUOTED + "|" + _NOT_A_COUNT + ")",
        1,
    ),
    (
        # Every other token key (``API_TOKEN``, ``X-Auth-Token``, ``tokenSecret``): any value.
        # The key may not be exactly ``tokens``, so a count the alternative above let pass
        # is not taken here instead.
        "assignment",
        r"(?i)(?:\b|_)" + _TOKEN_KEYWORD + r"(?:[0-9_.a-rt-zA-RT-Z-][A-Za-z0-9_.-]{0,39}|s[A-Za-z0-9_.-]{1,39})?"
        + _OPERATOR + r"(?P<{S}>" + _QUOTED + r"|" + _VALUE_CHAR + "{3,})",
        1,
    ),
)


def _strip_groups(pattern: str) -> str:
    """Turn every ``(?P<name>`` into ``(?:`` (names here are ``p<n>``/``s<n>``)."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("(?P<", i):
            close = pattern.index(">", i)
            out.append("(?:")
            i = close + 1
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def _combined() -> Any:
    parts = []
    for index, (_kind, pattern, group) in enumerate(_PATTERNS):
        body = pattern.replace("{S}", f"s{index}") if group else pattern
        # Inline flags must lead the whole expression: scope them to the alternative.
        if body.startswith("(?i)"):
            body = "(?i:" + body[4:] + ")"
        parts.append(f"(?P<p{index}>{body})")
    return re2.compile("|".join(parts))


# One alternation, one pass: a region is redacted once, by the first shape that matches.
# RE2 runs it in linear time (transcripts are hostile input) and ~40x faster than ``re``
# on this many alternatives.
_COMBINED = _combined()
# The same alternation without capture groups: RE2's Python wrapper materialises every
# group's span on each match, so the yes/no pre-check uses a group-free twin.
_DETECT = re2.compile(_strip_groups(_COMBINED.pattern))
# The wrapper's ``search`` adds ~1.5 µs of Python per call; the compiled object's own
# ``Match`` is used when this google-re2 build exposes it (same result, group 0 span).
_RAW = getattr(_DETECT, "_regexp", None)
_UNANCHORED = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)


def _may_hold_secret(value: str) -> bool:
    if _RAW is not None and _UNANCHORED is not None:
        encoded = value.encode("utf-8", "surrogatepass")
        return bool(_RAW.Match(_UNANCHORED, encoded, 0, len(encoded))[0][0] >= 0)
    return _DETECT.search(value) is not None
# (kind, index of the secret's group or 0 for the whole match), by alternative.
_KINDS = tuple(
    (kind, _COMBINED.groupindex[f"s{i}"] if group else 0) for i, (kind, _pattern, group) in enumerate(_PATTERNS)
)

def _repl(match: Any) -> str:
    name = match.lastgroup or ""
    index = int(name[1:])
    kind, group = _KINDS[index]
    if not group:
        return _marker(kind, match.group(0))
    secret: str = match.group(group)
    base = match.start(0)
    start, end = match.span(group)
    whole: str = match.group(0)
    marker = _marker(kind, secret)
    if len(secret) >= 2 and secret[0] in "\"'" and secret[-1] == secret[0]:
        # Keep the quotes so redacted JSON/YAML stays well-formed.
        marker = secret[0] + _marker(kind, secret[1:-1]) + secret[0]
    return whole[: start - base] + marker + whole[end - base :]


def _redact_wrapper(value: str) -> str:
    out: str = _COMBINED.sub(_repl, value)
    return out


_RAW_COMBINED = getattr(_COMBINED, "_regexp", None)
# The group index of each alternative, to tell from a match's spans which one matched.
_ALTERNATIVES = tuple(_COMBINED.groupindex[f"p{i}"] for i in range(len(_PATTERNS)))


def _redact_raw(value: str) -> str:
    """The same substitution as the wrapper's ``sub``, driven on UTF-8 bytes directly.

    The wrapper maps every group's byte span back to characters in Python on each match;
    secrets are ASCII, so working on bytes and decoding once is equivalent and ~10x faster.
    """
    assert _RAW_COMBINED is not None
    data = value.encode("utf-8", "surrogatepass")
    size = len(data)
    pieces: list[bytes] = []
    pos = 0
    while pos <= size:
        spans = _RAW_COMBINED.Match(_UNANCHORED, data, pos, size)
        start, end = spans[0]
        if start < 0:
            break
        index = next(i for i, g in enumerate(_ALTERNATIVES) if spans[g][0] >= 0)
        kind, group = _KINDS[index]
        pieces.append(data[pos:start])
        if not group:
            pieces.append(_marker(kind, data[start:end].decode("utf-8", "surrogatepass")).encode())
        else:
            s0, s1 = spans[group]
            secret = data[s0:s1].decode("utf-8", "surrogatepass")
            marker = _marker(kind, secret)
            if len(secret) >= 2 and secret[0] in "\"'" and secret[-1] == secret[0]:
                marker = secret[0] + _marker(kind, secret[1:-1]) + secret[0]
            pieces.append(data[start:s0] + marker.encode() + data[s1:end])
        if end == start:  # never loop on an empty match
            pieces.append(data[end : end + 1])
            end += 1
        pos = end
    pieces.append(data[pos:])
    return b"".join(pieces).decode("utf-8", "surrogatepass")


def redact(value: str) -> str:
    """Return ``value`` with every recognised secret replaced by a marker."""
    # The group-free pre-check is one C call; most values hold no secret at all.
    if not value or not _may_hold_secret(value):
        return value
    if _RAW_COMBINED is not None and _UNANCHORED is not None:
        return _redact_raw(value)
    return _redact_wrapper(value)


#: ``redact`` with a small memo, for short values that repeat (cwd, paths, versions, names).
redact_cached = functools.lru_cache(maxsize=4_096)(redact)


def bounded(value: str, limit: int) -> tuple[str, bool]:
    """Cut ``value`` to at most ``limit`` characters; say whether it was cut."""
    if len(value) <= limit:
        return value, False
    return value[:limit], True
