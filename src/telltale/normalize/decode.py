"""Static decoders: what a shell word or a decoding command turns literal text into.

Each function is a pure function of its input and of byte bounds (never of time), so a
re-read gives the same normalised command. They decode the encodings attackers use to
hide a command from a reader — ANSI-C escapes, ``printf``/``echo -e`` escapes, base64,
hex (``xxd -r -p``), ``rev``, ``tr`` rotations, gzip — and return ``None`` when the
input is not what the decoder expects, so the caller keeps the command as written.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib

from telltale import lazyre

#: Characters a decoder may produce at most (one decoded payload).
MAX_DECODED = 65_536

_B64_CLEAN = lazyre.compile(r"[\s]+")
_B64_SHAPE = lazyre.compile(r"\A[A-Za-z0-9+/_-]+={0,2}\Z")
_HEX_CLEAN = lazyre.compile(r"[\s:]+|\\x|0x")
_HEX_SHAPE = lazyre.compile(r"\A(?:[0-9A-Fa-f]{2})+\Z")
_SIMPLE_ESCAPES = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}


def _chr(code: int) -> str:
    try:
        return chr(code)
    except (ValueError, OverflowError):
        return "\ufffd"


def c_escapes(text: str, *, octal_zero: bool = False) -> str:
    """Decode backslash escapes as bash's ``$'…'`` does (and ``printf``/``echo -e``).

    ``\\xHH``, ``\\uHHHH``, ``\\UHHHHHHHH``, octal ``\\NNN`` (``\\0NNN`` when
    ``octal_zero``, the ``echo -e`` form), ``\\cX`` and the single-letter escapes.
    An unknown escape keeps its backslash, as bash does.
    """
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            j = i + 2
            while j < n and j - (i + 2) < width and text[j] in "0123456789abcdefABCDEF":
                j += 1
            if j == i + 2:
                out.append("\\" + nxt)
                i += 2
            else:
                out.append(_chr(int(text[i + 2 : j], 16)))
                i = j
        elif nxt in "01234567":
            start = i + 1
            if octal_zero and nxt == "0":
                start = i + 2
            j = start
            while j < n and j - start < 3 and text[j] in "01234567":
                j += 1
            out.append(_chr(int(text[start:j], 8) & 0xFF) if j > start else "\0")
            i = j
        elif nxt == "c" and i + 2 < n:
            out.append(_chr(ord(text[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def printable(text: str) -> bool:
    """Whether decoded text reads as text (a command or script), not binary data."""
    if not text:
        return False
    bad = sum(1 for ch in text if (ord(ch) < 32 and ch not in "\t\n\r") or ch == "\ufffd")
    return bad * 20 <= len(text)


def _utf8(data: bytes) -> str | None:
    if b"\0" in data[:64] and len(data) >= 4 and data[1:2] == b"\0":
        # UTF-16LE, as PowerShell's -EncodedCommand and [Text.Encoding]::Unicode.
        try:
            text = data.decode("utf-16-le")
        except UnicodeDecodeError:
            return None
    else:
        text = data.decode("utf-8", "replace")
    text = text[:MAX_DECODED]
    return text if printable(text) else None


def b64(text: str) -> str | None:
    """Base64 (standard or URL-safe, padding optional) to text, or ``None``."""
    clean = _B64_CLEAN.sub("", text)
    if len(clean) < 4 or len(clean) > MAX_DECODED * 2 or not _B64_SHAPE.match(clean):
        return None
    clean = clean.rstrip("=")
    clean += "=" * (-len(clean) % 4)
    try:
        data = base64.urlsafe_b64decode(clean) if "-" in clean or "_" in clean else base64.b64decode(clean)
    except (binascii.Error, ValueError):
        return None
    if data[:2] == b"\x1f\x8b":
        return gunzip(data)
    return _utf8(data)


def b64_bytes(text: str) -> bytes | None:
    """Base64 to bytes (for a decode that feeds another one, such as gunzip)."""
    clean = _B64_CLEAN.sub("", text)
    if not _B64_SHAPE.match(clean or "!"):
        return None
    clean = clean.rstrip("=")
    clean += "=" * (-len(clean) % 4)
    try:
        return base64.b64decode(clean, altchars=b"-_" if ("-" in clean or "_" in clean) else None)
    except (binascii.Error, ValueError):
        return None


def unhex(text: str) -> str | None:
    """Plain hex (``xxd -p`` form, ``\\x`` or ``0x`` prefixes, spaces) to text, or ``None``."""
    clean = _HEX_CLEAN.sub("", text)
    if len(clean) > MAX_DECODED * 2 or not _HEX_SHAPE.match(clean):
        return None
    return _utf8(bytes.fromhex(clean))


def gunzip(data: bytes) -> str | None:
    """Gzip or zlib data to text, never more than :data:`MAX_DECODED` bytes out."""
    for wbits in (47, -15):
        try:
            inflater = zlib.decompressobj(wbits)
            out = inflater.decompress(data, MAX_DECODED)
        except zlib.error:
            continue
        return _utf8(out)
    return None


def rev(text: str) -> str:
    """``rev``: each line reversed."""
    return "\n".join(line[::-1] for line in text.split("\n"))


def _tr_set(spec: str) -> str:
    spec = c_escapes(spec)
    out: list[str] = []
    i = 0
    while i < len(spec) and len(out) < 1024:
        if i + 2 < len(spec) and spec[i + 1] == "-" and spec[i] <= spec[i + 2]:
            out.extend(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(out[:1024])


def tr(text: str, set1: str, set2: str) -> str | None:
    """``tr SET1 SET2`` with ranges (``a-zA-Z`` → ``n-za-mN-ZA-M`` is rot13)."""
    if set1.startswith("[:") or set2.startswith("[:"):
        return None
    a, b = _tr_set(set1), _tr_set(set2)
    if not a or not b:
        return None
    if len(b) < len(a):
        b += b[-1] * (len(a) - len(b))
    return text.translate(str.maketrans(a, b[: len(a)]))


_PRINTF_SPEC = lazyre.compile(r"%(?:%|[-+ #0]*\d*(?:\.\d+)?([sbdicxXouq]))")


def printf(fmt: str, args: list[str]) -> str:
    """``printf FORMAT ARGS…`` for the conversions a decoding trick uses (%s %b %c %d %x).

    Like printf(1), the format is reused while arguments remain.
    """
    fmt = c_escapes(fmt)
    consuming = sum(1 for m in _PRINTF_SPEC.finditer(fmt) if m.group(1) is not None)
    rest = list(args)

    def conv(m: re.Match[str]) -> str:
        kind = m.group(1)
        if kind is None:
            return "%"
        arg = rest.pop(0) if rest else ""
        if kind == "b":
            return c_escapes(arg, octal_zero=True)
        if kind == "c":
            return arg[:1]
        if kind in "dixXou":
            try:
                value = int(arg, 0) if arg else 0
            except ValueError:
                return arg
            return format(value, {"x": "x", "X": "X", "o": "o"}.get(kind, "d"))
        return arg

    pieces = [_PRINTF_SPEC.sub(conv, fmt)]
    size = len(pieces[0])
    while consuming and rest and size <= MAX_DECODED and len(pieces) < 4096:
        pieces.append(_PRINTF_SPEC.sub(conv, fmt))
        size += len(pieces[-1])
    return "".join(pieces)[:MAX_DECODED]


# Literals handed to a decoding call inside a script or one-liner.
_CALL_B64 = lazyre.compile(
    r"(?i)(?:b64decode|b32decode|decodebytes|urlsafe_b64decode|atob|frombase64string|decode64|decode_base64|"
    r"unpack1?|base64[._]decode|buffer\.from)\s*\(?\s*\(?\s*[bu]?['\"]([A-Za-z0-9+/=_\-\s]{8,})['\"]"
)
_CALL_HEX = lazyre.compile(
    r"(?i)(?:fromhex|unhexlify|hex2bin|pack\(\s*['\"]H\*['\"]\s*,)\s*\(?\s*[bu]?['\"]([0-9a-fA-F\s]{8,})['\"]"
)
_CHAR_CODES = lazyre.compile(
    r"(?i)(?:fromcharcode\s*\(|\[char\[\]\]\s*\(?|chr\s*\(\s*\d+\s*\)\s*(?:\.|\+|,)|bytes\s*\(\s*\[|join\s*\(\s*map\s*\(\s*chr\s*,\s*\[)"
    r"\s*((?:\d{2,3}\s*,\s*){3,}\d{2,3})"
)
_CHR_RUN = lazyre.compile(r"(?i)(?:(?:\[char\]\s*|chr\s*\(\s*)(\d{2,3})\s*\)?\s*[+.,]?\s*){4,}")
_CHR_ONE = lazyre.compile(r"(?i)(?:\[char\]\s*|chr\s*\(\s*)(\d{2,3})")


def embedded_payloads(text: str, limit: int = 8) -> list[str]:
    """Text literals inside ``text`` that a decoding call turns into code.

    ``base64.b64decode('…')``, ``atob("…")``, ``Buffer.from('…','base64')``,
    ``[Convert]::FromBase64String('…')``, ``bytes.fromhex('…')``, character-code lists
    (``String.fromCharCode(99,117,…)``, ``[char]99+[char]117…``, ``chr(99).chr(117)``).
    """
    out: list[str] = []
    for m in _CALL_B64.finditer(text):
        decoded = b64(m.group(1))
        if decoded is not None:
            out.append(decoded)
        if len(out) >= limit:
            return out
    for m in _CALL_HEX.finditer(text):
        decoded = unhex(m.group(1))
        if decoded is not None:
            out.append(decoded)
        if len(out) >= limit:
            return out
    for m in _CHAR_CODES.finditer(text):
        chars = "".join(_chr(int(c)) for c in re.findall(r"\d+", m.group(1)))
        if printable(chars):
            out.append(chars)
        if len(out) >= limit:
            return out
    for m in _CHR_RUN.finditer(text):
        chars = "".join(_chr(int(c)) for c in _CHR_ONE.findall(m.group(0)))
        if printable(chars):
            out.append(chars)
        if len(out) >= limit:
            return out
    return out
