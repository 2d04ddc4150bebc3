"""Per-record decode guards shared by every JSON adapter.

One hostile record must cost that record only. msgspec raises ``RecursionError`` for
JSON nested deeper than the interpreter's stack allows (~1,000 levels), which no adapter
expects; a lone UTF-16 surrogate escape (``"\\ud800"``, written by JavaScript's
``JSON.stringify`` for a string cut inside a pair) makes the whole line undecodable
although only one character is bad. These helpers turn the first into an ordinary
:class:`msgspec.DecodeError` subclass the adapters already quarantine on, and repair the
second by replacing the character with U+FFFD and decoding again (the rest of the record
is sound, so it is kept).

The guards only act on the failure path: a line that decodes is never inspected twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

#: Quarantine reasons these guards add to the adapters' own vocabulary.
NESTING_TOO_DEEP = "nesting_too_deep"
NUMBER_OUT_OF_RANGE = "number_out_of_range"

#: A UTF-8 byte order mark; stripped from the first line of a file (see the JSONL reader).
BOM = b"\xef\xbb\xbf"


class NestingTooDeep(msgspec.DecodeError):
    """JSON nested deeper than the decoder can follow; the record is quarantined."""


#: Every escape sequence, left to right: a backslash always starts one in valid JSON, so
#: scanning escapes in order never mistakes an escaped backslash followed by ``u`` for a
#: ``\\u`` escape.
_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_REPLACEMENT = b"\\ufffd"


def _code(match: re.Match[bytes] | None) -> int:
    if match is None:
        return -1
    digits = match.group(1)
    return int(digits, 16) if digits is not None else -1


def repair_surrogates(data: bytes | msgspec.Raw) -> bytes | None:
    """``data`` with every unpaired surrogate escape replaced by ``\\ufffd``.

    ``None`` when there is nothing to repair (no lone surrogate escape). Paired escapes
    (a high surrogate directly followed by a low one) are left alone.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    if b"\\u" not in data and b"\\U" not in data:
        return None
    pieces: list[bytes] = []
    last = 0
    matches = _ESCAPE.finditer(data)
    current = next(matches, None)
    while current is not None:
        following = next(matches, None)
        code = _code(current)
        if 0xD800 <= code <= 0xDBFF:
            low = _code(following)
            if following is not None and following.start() == current.end() and 0xDC00 <= low <= 0xDFFF:
                current = next(matches, None)  # a valid pair: skip both halves
                continue
            pieces += (data[last : current.start()], _REPLACEMENT)
            last = current.end()
        elif 0xDC00 <= code <= 0xDFFF:
            pieces += (data[last : current.start()], _REPLACEMENT)
            last = current.end()
        current = following
    if not pieces:
        return None
    pieces.append(data[last:])
    return b"".join(pieces)


def decode_guarded(decode: Callable[[Any], T], data: bytes | msgspec.Raw) -> T:
    """``decode(data)``, with deep nesting as :class:`NestingTooDeep` and lone surrogates repaired."""
    try:
        return decode(data)
    except RecursionError:
        raise NestingTooDeep("JSON nests deeper than the decoder's bound") from None
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError as exc:
        return retry_repaired(decode, data, exc)


def retry_repaired(decode: Callable[[Any], T], data: bytes | msgspec.Raw, exc: msgspec.DecodeError) -> T:
    """Second chance for a line that failed to decode: repair lone surrogates, else re-raise.

    For hot paths that catch the first failure themselves (no extra frame per line).
    """
    if isinstance(exc, msgspec.ValidationError):
        raise exc
    repaired = repair_surrogates(data)
    if repaired is None:
        raise exc
    try:
        return decode(repaired)
    except RecursionError:
        raise NestingTooDeep("JSON nests deeper than the decoder's bound") from None


def failure_reason(data: bytes | msgspec.Raw, exc: BaseException) -> str:
    """A content-free quarantine reason for a record that did not decode."""
    if isinstance(exc, (NestingTooDeep, RecursionError)):
        return NESTING_TOO_DEEP
    if isinstance(exc, msgspec.ValidationError):
        text = str(exc)
        if text.startswith(("Number out of range", "Integer value out of range")):
            return NUMBER_OUT_OF_RANGE
        return "schema_mismatch"
    try:
        bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return "invalid_utf8"
    return "malformed_json"
