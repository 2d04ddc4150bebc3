"""Redaction: the single output boundary where secrets are removed.

Everything that leaves Telltale (event documents, detection evidence, health events,
summaries, ``--json`` output, outbox rows) passes through this module. Rules and
adapters work on raw values in memory; nothing upstream redacts, so there is exactly one
place to audit. Redaction applies to *decoded* text: tool arguments are decoded, their
values redacted (with the key each one sits under), and encoded again
(:func:`redact_arguments`), never matched as encoded JSON where escapes hide boundaries.

A secret is replaced by ``[REDACTED:<kind>:<hash>]``. The hash is a keyed SHA-256 of the
secret (key from ``TELLTALE_REDACTION_KEY``, else a fixed default), so analysts can tell
two occurrences of one secret apart from two different secrets without the value being
recoverable by anyone who lacks the key. Fleets should set their own key.

What counts as a secret is the catalogue in :mod:`telltale.events.secret_shapes`: vendor
token shapes (always masked) and context rules (a key, flag or header that names a
secret; its value is judged, then masked). All of them run as one RE2 alternation, one
linear pass per value; the matches never overlap, and the mask covers the value only.

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

import msgspec
import re2

from telltale.events.secret_shapes import (
    CONTEXT_SHAPES,
    VENDOR_SHAPES,
    Shape,
    is_reference,
    judge_key_value,
    looks_random,
)

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


def marker(kind: str, secret: str) -> str:
    """The text that stands for ``secret``: its kind and keyed hash."""
    return f"[REDACTED:{kind}:{value_hash(secret)}]"


# -- the compiled catalogue -----------------------------------------------------------

_SHAPES: tuple[Shape, ...] = VENDOR_SHAPES + CONTEXT_SHAPES


#: Room for the lazily built DFA of ~90 alternatives (RE2's default 8 MB is too small for
#: it and would fall back to the slower NFA on every search).
_OPTIONS = re2.Options()
_OPTIONS.max_mem = 64 << 20
_UNANCHORED = re2._Anchor.UNANCHORED
_ANCHOR_BOTH = re2._Anchor.ANCHOR_BOTH


class _Alternative:
    """One shape compiled on its own: its groups, and how to judge what it matched."""

    __slots__ = ("context", "key", "kind", "match", "secrets")

    def __init__(self, shape: Shape) -> None:
        body, names, key = _body(shape, r"\b")
        regex = re2.compile(body, _OPTIONS)
        self.kind = shape.kind
        self.context = shape.context
        self.match = regex._regexp.Match
        self.secrets = tuple(regex.groupindex[n] for n in names)  # none: the whole match
        self.key = regex.groupindex[key] if key else -1


def _body(shape: Shape, boundary: str) -> tuple[str, list[str], str | None]:
    """A shape's pattern with its placeholders filled in: boundary, secret and key groups."""
    body = shape.pattern.replace("{B}", boundary)
    names: list[str] = []
    while "{S}" in body:
        name = f"s{len(names)}"
        names.append(name)
        body = body.replace("{S}", name, 1)
    key = None
    if "{K}" in body:
        key = "k"
        body = body.replace("{K}", key)
    return body, names, key


def _plain(shape: Shape, boundary: str) -> str:
    """A shape's pattern without groups (for alternations and sets)."""
    return _strip_groups(_body(shape, boundary)[0])


def _strip_groups(pattern: str) -> str:
    """Turn every ``(?P<name>`` into ``(?:``."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("(?P<", i):
            out.append("(?:")
            i = pattern.index(">", i) + 1
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def _alternation(shapes: tuple[Shape, ...], boundary: str) -> Any:
    return re2.compile("|".join(f"(?:{_plain(shape, boundary)})" for shape in shapes), _OPTIONS)


def _set(shapes: tuple[Shape, ...], anchor: Any) -> Any:
    compiled = re2._re2.Set(anchor, _OPTIONS)
    for shape in shapes:
        compiled.Add(_plain(shape, r"\b").encode())
    compiled.Compile()
    return compiled


# How a value is scanned, all in RE2 (linear time: transcripts are hostile input):
# 1. one group-free alternation of every shape finds where the next match is (a DFA pass;
#    leftmost-first: at one position, the first listed shape wins);
# 2. a set of the same shapes, anchored at both ends of that match, tells which shape it
#    was (the lowest index that matches the extent exactly);
# 3. that shape alone, with its groups, says where the secret is inside the match.
# (One alternation with groups would do all three, but RE2 then runs an NFA over a
# program of every shape on each match: ~60 µs instead of ~2 µs.)
_DETECT = _alternation(_SHAPES, r"\b")
#: A looser twin without word boundaries: a pre-check that also holds for JSON text,
#: where ``\nAKIA...`` glues the key to an ``n``.
_LOOSE = _alternation(_SHAPES, "")
_WHICH = _set(_SHAPES, _ANCHOR_BOTH)
_ALTERNATIVES = tuple(_Alternative(shape) for shape in _SHAPES)
#: Vendor shapes alone: the kind of a value a context rule masks (``TOKEN=glpat-...``).
_VENDOR = _set(VENDOR_SHAPES, _UNANCHORED)


def _may_match(compiled: Any, value: str) -> bool:
    data = value.encode("utf-8", "surrogatepass")
    return bool(compiled._regexp.Match(_UNANCHORED, data, 0, len(data))[0][0] >= 0)


def _vendor_kind(value: str) -> str | None:
    """The vendor kind of the first-listed shape found in ``value``, if any."""
    found = _VENDOR.Match(value.encode("utf-8", "surrogatepass"))
    return VENDOR_SHAPES[min(found)].kind if found else None


_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey", "aws4-hmac-sha256"})


def _judge(alt: _Alternative, data: bytes, spans: list[tuple[int, int]], s0: int, s1: int) -> tuple[str, int] | None:
    """The kind to mask a context match's value as and where the mask starts; ``None``
    keeps the value."""
    value = data[s0:s1].decode("utf-8", "surrogatepass")
    context = alt.context
    kind: str | None
    if context == "key":
        k0, k1 = spans[alt.key]
        key = data[k0:k1].decode("utf-8", "surrogatepass")
        quoted = s0 > 0 and data[s0 - 1 : s0] in (b'"', b"'")
        kind = judge_key_value(key, value.rstrip(), quoted)
        if kind in ("http_authorization", "auth"):
            scheme, _, rest = value.partition(" ")
            if rest.strip() and scheme.lower() in _SCHEMES:
                s0 += len(scheme.encode()) + 1  # keep ``Bearer``/``Basic`` readable
    elif context == "entropy":
        kind = alt.kind if looks_random(value) else None
    elif context == "curl_user":
        k0, k1 = spans[alt.key]
        user = data[k0:k1].decode("utf-8", "surrogatepass")
        numeric = value.isdigit() and (user.isdigit() or not user)  # ``-u 1000:1000`` is uid:gid
        kind = None if numeric or is_reference(value) else "basic_auth_password"
    else:  # netrc
        kind = None if is_reference(value) else alt.kind
    if kind is None:
        return None
    return (_vendor_kind(value) or kind), s0


def _redact_bytes(data: bytes) -> bytes:
    """Replace every secret in ``data`` (UTF-8) by its marker, in one left-to-right pass."""
    size = len(data)
    find = _DETECT._regexp.Match
    pieces: list[bytes] = []
    pos = 0
    while pos < size:
        found = find(_UNANCHORED, data, pos, size)[0]
        start, end = found
        if start < 0:
            break
        alt: _Alternative | None = None
        spans: list[tuple[int, int]] = []
        for index in sorted(_WHICH.Match(data[start:end])):
            # The set sees the extent alone; the shape itself runs in the real context
            # (a word boundary at its edges), and the first that matches there is it.
            spans = _ALTERNATIVES[index].match(_ANCHOR_BOTH, data, start, end)
            if spans[0][0] >= 0:
                alt = _ALTERNATIVES[index]
                break
        if alt is None:  # cannot happen: the alternation matched this extent
            pieces.append(data[pos:end])
            pos = end
            continue
        s0, s1 = start, end
        for group in alt.secrets:
            if spans[group][0] >= 0:
                s0, s1 = spans[group]
                break
        kind = alt.kind
        if alt.context is not None:
            judged = _judge(alt, data, spans, s0, s1)
            if judged is None:
                # Not a secret after all: keep it, and look again from the value on (a
                # shape inside it, or a key of its own, is still found).
                pieces.append(data[pos:s0])
                pos = s0
                continue
            kind, s0 = judged
        secret = data[s0:s1].decode("utf-8", "surrogatepass")
        pieces.append(data[pos:s0])
        pieces.append(marker(kind, secret).encode())
        pos = s1
    pieces.append(data[pos:])
    return b"".join(pieces)


def redact(value: str) -> str:
    """Return ``value`` with every recognised secret replaced by a marker."""
    # The group-free pre-check is one C call; most values hold no secret at all.
    if not value:
        return value
    data = value.encode("utf-8", "surrogatepass")
    if _DETECT._regexp.Match(_UNANCHORED, data, 0, len(data))[0][0] < 0:
        return value
    return _redact_bytes(data).decode("utf-8", "surrogatepass")


#: ``redact`` with a small memo, for short values that repeat (cwd, paths, versions, names).
redact_cached = functools.lru_cache(maxsize=4_096)(redact)


# -- structured values ------------------------------------------------------------------

#: Nesting followed when redacting a decoded document; deeper parts are redacted as text.
MAX_DEPTH = 64

_json_decode = msgspec.json.decode
_json_encode = msgspec.json.Encoder().encode


def _mask_keyed(key: str, value: str, quoted: bool) -> str | None:
    kind = judge_key_value(key, value, quoted)
    if kind is None:
        return None
    return marker(_vendor_kind(value) or kind, value)


class _Budget:
    """Characters of decoded text still worth redacting (``None``: all of them).

    Output is cut to a bound after redaction; text past the bound plus a margin would be
    cut anyway, so it is dropped before it costs a scan. Escaping only lengthens JSON, so
    a character past the budget in decoded text is past the bound in encoded text too.
    """

    __slots__ = ("cut", "left", "margin")

    def __init__(self, limit: int, margin: int) -> None:
        self.left = limit
        self.margin = margin
        self.cut = False

    def take(self, text: str) -> str:
        left = self.left
        if left <= 0:
            self.cut = self.cut or bool(text)
            return ""
        if len(text) > left + self.margin:
            text = text[: left + self.margin]
            self.cut = True
        self.left = left - len(text) - 3
        return text


def redact_value(value: Any, depth: int = 0, budget: _Budget | None = None) -> Any:
    """A decoded JSON value with every string redacted; a value under a key that names a
    secret is masked whole (``{"password": "..."}``, ``{"auth": "<base64>"}``)."""
    cls = value.__class__
    if cls is str:
        return redact(value if budget is None else budget.take(value))
    if cls is dict:
        if depth >= MAX_DEPTH:
            return redact_value(_json_encode(value).decode(), depth, budget)
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = key
            masked = None
            if key.__class__ is str:
                new_key = redact(key if budget is None else budget.take(key))
                if item.__class__ is str:
                    masked = _mask_keyed(key, item, True)
                elif item.__class__ in (int, float):
                    masked = _mask_keyed(key, str(item), False)
            if masked is not None:
                if budget is not None:
                    budget.left -= len(masked) + 3
                out[new_key] = masked
            else:
                out[new_key] = redact_value(item, depth + 1, budget)
        return out
    if cls is list:
        if depth >= MAX_DEPTH:
            return redact_value(_json_encode(value).decode(), depth, budget)
        return [redact_value(item, depth + 1, budget) for item in value]
    if budget is not None:
        budget.left -= 8
    return value


def redact_arguments(text: str, limit: int | None = None, margin: int = 512) -> tuple[str, bool]:
    """Tool arguments (JSON text) with their decoded values redacted, encoded again, and
    cut to ``limit`` characters; says whether anything was cut.

    Redaction runs on decoded values, never on the encoded text, where escapes hide word
    boundaries (``\\nSECRET_KEY=``) and keys (``\\"password\\"``). Text that is not JSON
    (a free-form tool input) is redacted as text. Arguments that cannot hold a secret,
    by a pre-check that holds for escaped text too, keep the vendor's own encoding.
    """
    if not text:
        return text, False
    cut = False
    if "\\u" in text or "\\/" in text or _may_match(_LOOSE, text):
        value: Any
        try:
            value = _json_decode(text)
        except (msgspec.DecodeError, ValueError, RecursionError):
            value = _NOT_JSON
        budget = _Budget(limit, margin) if limit is not None else None
        if value is _NOT_JSON or value.__class__ is str:
            plain: str = text if value is _NOT_JSON else str(value)
            if budget is not None:
                plain = budget.take(plain)
            text = redact(plain)
        else:
            redacted = redact_value(value, 0, budget)
            if redacted != value:
                text = _json_encode(redacted).decode("utf-8")
        cut = budget is not None and budget.cut
    if limit is not None and len(text) > limit:
        return text[:limit], True
    return text, cut


_NOT_JSON = object()


def redact_document(doc: Any, depth: int = 0) -> Any:
    """Every string of a document (health events, summaries, ``--json`` rows) redacted."""
    cls = doc.__class__
    if cls is str:
        return redact(doc)
    if depth >= MAX_DEPTH:
        return doc
    if cls is dict:
        return {k: redact_document(v, depth + 1) for k, v in doc.items()}
    if cls in (list, tuple):
        return [redact_document(v, depth + 1) for v in doc]
    return doc


# -- evidence excerpts -------------------------------------------------------------------

_ESCAPE = re2.compile(r"\\(?:u[0-9a-fA-F]{4}|[nrtbf\"\\/])")
_UNESCAPE = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}
#: A run of token characters at an excerpt's edge that may be a cut secret.
_EDGE = re2.compile(r"^[A-Za-z0-9+=_-]{20,}|[A-Za-z0-9+=_-]{20,}$")


def _unescape(match: Any) -> str:
    text: str = match.group(0)
    if text[1] == "u":
        code = int(text[2:], 16)
        return chr(code) if not 0xD800 <= code <= 0xDFFF else "\ufffd"
    return _UNESCAPE[text[1]]


def redact_excerpt(value: str, *, json_text: bool = False) -> str:
    """An evidence excerpt, redacted: decoded first when it is a piece of JSON text, and
    its edges masked when they are a run of random token characters (the excerpt may
    have cut a secret in two, and half a secret matches no shape)."""
    if json_text and "\\" in value:
        value = _ESCAPE.sub(_unescape, value)
    text = redact(value)
    if len(text) >= 20:
        text = _EDGE.sub(_edge, text)
    return text


def _edge(match: Any) -> str:
    run: str = match.group(0)
    return marker("partial", run) if looks_random(run) else run


def bounded(value: str, limit: int) -> tuple[str, bool]:
    """Cut ``value`` to at most ``limit`` characters; say whether it was cut."""
    if len(value) <= limit:
        return value, False
    return value[:limit], True
