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
import os
import re
from typing import Any

import msgspec
import re2

from telltale import utf8
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
#: SHA-256 with the key in its first 64-byte block (copying this state costs no
#: compression); made when a value is first hashed (``hashlib`` loads OpenSSL's binding:
#: a run that hashes nothing, such as a no-change scan, never imports it).
_keyed: Any = None


def _keyed_state() -> Any:
    global _keyed
    import hashlib

    _keyed = hashlib.sha256(hashlib.sha256(_KEY).digest() * 2)
    return _keyed


def value_hash(value: str) -> str:
    """Short keyed hash of a value (16 hex digits), stable for one redaction key."""
    return size_and_hash(value)[1]


def size_and_hash(value: str) -> tuple[int, str]:
    """UTF-8 size and :func:`value_hash` of a value, encoding it once (long texts; detection
    scans the same bytes, see :mod:`telltale.utf8`)."""
    data = utf8.encode(value)
    digest = (_keyed or _keyed_state()).copy()
    digest.update(data)
    return len(data), digest.hexdigest()[:16]


def marker(kind: str, secret: str) -> str:
    """The text that stands for ``secret``: its kind and keyed hash."""
    return f"[REDACTED:{kind}:{value_hash(secret)}]"


# -- the compiled catalogue -----------------------------------------------------------

_SHAPES: tuple[Shape, ...] = VENDOR_SHAPES + CONTEXT_SHAPES


#: Room for the lazily built DFAs (RE2's default 8 MB would make them thrash and fall
#: back to the NFA).
_OPTIONS = re2.Options()
_OPTIONS.max_mem = 64 << 20
_UNANCHORED = re2._Anchor.UNANCHORED
_ANCHOR_START = re2._Anchor.ANCHOR_START


class _Alternative:
    """One shape compiled on its own: its groups, and how to judge what it matched."""

    __slots__ = ("context", "key", "kind", "match", "secrets")

    def __init__(self, shape: Shape) -> None:
        body, names, key = _body(shape)
        regex = re2.compile(body, _OPTIONS)
        self.kind = shape.kind
        self.context = shape.context
        self.match = regex._regexp.Match
        self.secrets = tuple(regex.groupindex[n] for n in names)  # none: the whole match
        self.key = regex.groupindex[key] if key else -1


#: Word boundaries, as a character consumed outside the secret: one ``\b`` in the
#: alternation keeps every search off RE2's DFA (~15x slower).
_BEFORE = "(?:^|[^A-Za-z0-9_])"
_AFTER = "(?:$|[^A-Za-z0-9_])"


def _body(shape: Shape) -> tuple[str, list[str], str | None]:
    """A shape's pattern with its placeholders filled in: boundaries, secret and key groups."""
    pattern = shape.pattern
    if "{S}" not in pattern and ("{B}" in pattern or "{E}" in pattern):
        # The secret is the match without its boundary characters.
        head = "{B}" if pattern.startswith("{B}") else ""
        tail = "{E}" if pattern.endswith("{E}") else ""
        pattern = head + "(?P<{S}>" + pattern[len(head) : len(pattern) - len(tail)] + ")" + tail
    body = pattern.replace("{B}", _BEFORE).replace("{E}", _AFTER)
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


def _plain(shape: Shape) -> str:
    """A shape's pattern without groups (for alternations and sets)."""
    return _strip_groups(_body(shape)[0])


_GROUP = re.compile(r"\(\?P<[A-Za-z0-9_]+>")


def _strip_groups(pattern: str) -> str:
    """Turn every ``(?P<name>`` into ``(?:`` (our own patterns: ``re`` is fine here)."""
    return _GROUP.sub("(?:", pattern)


#: A counted repetition (our own shapes: ``re`` is fine, and its ``sub`` is ~5x faster than
#: the RE2 binding's Python-level one, which was ~4 ms of every run's import).
_COUNT = re.compile(r"\{([0-9]+)(?:,([0-9]*))?\}")


def _relaxed(pattern: str) -> str:
    """``pattern`` with every counted repetition over 3 turned into ``+`` (or ``*``).

    A superset, for finding candidates: RE2's DFA holds one state per combination of
    live counters, and ~60 shapes counting ``{20,}``, ``{32}`` or ``{40,}`` over
    overlapping alphabets multiply into millions of states (seconds of DFA building per
    MB of text, and a cache that thrashes). Without counters the alternation stays small.
    """

    def loosen(match: Any) -> str:
        low = int(match.group(1))
        high = match.group(2)
        top = low if high is None else (int(high) if high else low + 4)
        if top <= 3:
            return str(match.group(0))
        return "+" if low >= 1 else "*"

    return str(_COUNT.sub(loosen, pattern))


def _alternation(shapes: tuple[Shape, ...]) -> Any:
    return re2.compile("|".join(f"(?:{_relaxed(_plain(shape))})" for shape in shapes), _OPTIONS)


def _set(shapes: tuple[Shape, ...], anchor: Any) -> Any:
    compiled = re2._re2.Set(anchor, _OPTIONS)
    for shape in shapes:
        compiled.Add(_plain(shape).encode())
    compiled.Compile()
    return compiled


# How a value is scanned, all in RE2 (linear time: transcripts are hostile input):
# 1. one group-free alternation of every shape, its counts relaxed (``_relaxed``), finds
#    where the next candidate starts (one DFA pass);
# 2. a set of the exact shapes, anchored there, tells which shapes match from there;
# 3. the first of them in catalogue order (leftmost-first: at one position, the first
#    listed shape wins) runs alone, with its groups, and says where the secret is.
# A candidate no exact shape matches is stepped over. (One alternation with groups would
# do all three, but RE2 then runs an NFA over a program of every shape on each match.)
# Only the alternation is compiled at import (every value is pre-checked with it); the
# set and the single shapes when a first candidate is met (a CLI run without one, such as
# ``telltale sources``, never pays for them).
_FIND = _alternation(_SHAPES)


@functools.cache
def _which() -> Any:
    return _set(_SHAPES, _ANCHOR_START)


@functools.cache
def _alternatives() -> tuple[_Alternative, ...]:
    return tuple(_Alternative(shape) for shape in _SHAPES)


@functools.cache
def _vendor() -> Any:
    """Vendor shapes alone: the kind of a value a context rule masks (``TOKEN=glpat-...``)."""
    return _set(VENDOR_SHAPES, _UNANCHORED)
#: Bytes after a candidate's start that the set looks at to tell which shapes match
#: there (every shape is decided within it; the chosen shape then runs on all the text).
_WHICH_WINDOW = 4_096


def _vendor_kind(value: str) -> str | None:
    """The vendor kind of the first-listed shape found in ``value``, if any."""
    found = _vendor().Match(value.encode("utf-8", "surrogatepass"))
    return VENDOR_SHAPES[min(found)].kind if found else None


_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey", "aws4-hmac-sha256"})


#: Multi-line shapes a context value must stop before (they are masked whole, on their own).
_BLOCK_STARTS = (b"-----BEGIN", b"PuTTY-User-Key-File-")


def _judge(
    alt: _Alternative, data: bytes, spans: list[tuple[int, int]], s0: int, s1: int
) -> tuple[str, int, int] | None:
    """The kind to mask a context match's value as and the span to mask; ``None`` keeps
    the value."""
    for block in _BLOCK_STARTS:
        at = data.find(block, s0, s1)
        if at >= 0:  # ``key: x -----BEGIN ...``: the block's first line is not the value's
            s1 = len(data[s0:at].rstrip()) + s0
    if s1 <= s0:
        return None
    value = data[s0:s1].decode("utf-8", "surrogatepass")
    context = alt.context
    kind: str | None
    if context == "key":
        k0, k1 = spans[alt.key]
        key = data[max(k0, k1 - 128) : k1].decode("utf-8", "surrogatepass")  # its last words
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
    return (_vendor_kind(value) or kind), s0, s1


def _redact_bytes(data: bytes) -> bytes:
    """Replace every secret in ``data`` (UTF-8) by its marker, in one left-to-right pass."""
    size = len(data)
    find = _FIND._regexp.Match
    which = _which().Match
    alternatives = _alternatives()
    pieces: list[bytes] = []
    pos = 0  # bytes before ``pos`` are in ``pieces``
    look = 0  # where the next candidate is looked for
    while look < size:
        start = find(_UNANCHORED, data, look, size)[0][0]
        if start < 0:
            break
        alt: _Alternative | None = None
        spans: list[tuple[int, int]] = []
        for index in sorted(which(data[start : start + _WHICH_WINDOW])):
            # The set sees a window alone; the shape itself runs in the real context
            # (boundaries at its edges), and the first that matches there is it.
            spans = alternatives[index].match(_ANCHOR_START, data, start, size)
            if spans[0][0] >= 0:
                alt = alternatives[index]
                break
        if alt is None:  # a candidate of the relaxed shapes only
            look = start + 1
            continue
        end = spans[0][1]
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
                look = max(s0, start + 1)
                continue
            kind, s0, s1 = judged
        secret = data[s0:s1].decode("utf-8", "surrogatepass")
        pieces.append(data[pos:s0])
        pieces.append(marker(kind, secret).encode())
        pos = look = max(s1, start + 1)
    pieces.append(data[pos:])
    return b"".join(pieces)


def redact(value: str) -> str:
    """Return ``value`` with every recognised secret replaced by a marker."""
    # The group-free pre-check is one C call; most values hold no secret at all.
    if not value:
        return value
    data = value.encode("utf-8", "surrogatepass")
    if _FIND._regexp.Match(_UNANCHORED, data, 0, len(data))[0][0] < 0:
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
    (a free-form tool input) is redacted as text. Arguments without a secret keep the
    vendor's own encoding (decoding is cheap next to what a pre-check on encoded text
    would have to allow for: every escape can hide a boundary).
    """
    if not text:
        return text, False
    value: Any
    try:
        value = _json_decode(text)
    except (msgspec.DecodeError, ValueError, RecursionError):
        value = _NOT_JSON
    budget = _Budget(limit, margin) if limit is not None else None
    if value is _NOT_JSON:  # free-form text: redacted as it is
        text = redact(text if budget is None else budget.take(text))
    elif value.__class__ is str:  # a JSON string: its decoded text
        text = redact(value if budget is None else budget.take(value))
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
