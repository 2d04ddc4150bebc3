"""Guards for rule regexes: parts of a regex that the literal scanner can find itself.

A rule regex of the shape ``(A).{0,300}(B)`` ("A, then B within 300 characters") is the
costliest kind on long fields: its literal factors come from B's words (``api``, ``send``,
``never``), which open it for most tool results, and RE2 then reads the whole value.
Every match of the regex holds a match of ``A`` and of ``B``, so each side is a necessary
condition, like a required literal: the engine adds it to the field's atoms as a *guard
expression* and makes it one more factor of the regex (:mod:`telltale.detect.match`).
A regex without a gap is its own guard: ``ignore (all )?(the )?previous instructions|…``
is opened by the word ``ignore`` alone, in a tenth of the tool results, and matches in
none. The engine asks for guards on prose fields only (tool results, messages:
``fields.PROSE_FIELDS``): on the short ones (commands, paths, arguments) they cost the
scanner more than RE2's few bytes there (docs/performance.md, session 10).

A guard must be found by the literal scanner (Hyperscan, byte mode, ASCII case folding)
wherever the field's RE2 Set finds it; the engine's per-value answers are the Set's
(``tests/test_detect_literal_scan.py``). So a part becomes a guard only when it is ASCII
and has nothing whose meaning differs between the two engines:

* no ``.`` and no negated class (RE2 reads a code point, Hyperscan in byte mode a byte);
* ``\\d``, ``\\w``, ``\\b`` are ASCII in both; ``\\s`` is written out as RE2's own
  ``[\\t\\n\\f\\r ]`` (Hyperscan's also holds ``\\v``); ``\\S``, ``\\D``, ``\\W``, ``\\p``,
  ``\\A``, ``\\z``, hex and octal escapes, flag groups and counted repeats over
  :data:`MAX_REPEAT` make the part no guard;
* ``^`` and ``$`` are line anchors in the guard (both engines, multi-line): a superset of
  the regex's own anchors, which only makes the guard hold more often, never less;
* case folding beyond ASCII (U+017F, U+212A) is the scanner's existing fold check.

A part that can match the empty text is no guard (it would always hold).
"""

from __future__ import annotations

from functools import lru_cache

import msgspec

from telltale.detect import cache
from telltale.detect.loader import compile_rule_regex

#: A gap: ``.`` repeated at least this many times at most (``.{0,N}``, ``.*``, ``.+``).
GAP_MIN = 16
#: Largest counted repeat kept in a guard (Hyperscan unrolls them).
MAX_REPEAT = 64
#: Leading global flags a pattern may carry for its parts to be guards.
_FLAGS = frozenset("ims")
#: RE2's ``\s`` (Hyperscan's adds ``\v``), inside a class.
_SPACE = r"\t\n\f\r "
_ESCAPES_KEPT = frozenset("bBdwntrfv")
_QUANTIFIERS = frozenset("*+?{")


class _NoGuard(Exception):
    """The text uses something a guard cannot hold."""


@lru_cache(maxsize=1024)
def regex_guards(pattern: str, cased: bool) -> tuple[str, ...]:
    """The guard expressions of ``pattern``, written for both engines (see the module
    docstring): its top-level groups around a gap, or without a gap the whole pattern;
    ``()`` when no part qualifies. Each one is to be matched multi-line, in any case
    unless ``cased``. Kept in the rule-pack cache when one is active (the emptiness check
    compiles each)."""
    key = cache.encode([pattern, cased])
    return cache.cached("guards", key, lambda: _guards(pattern, cased), cache.encode, _decode)


def _decode(data: bytes) -> tuple[str, ...]:
    return tuple(_guards_decoder.decode(data))


_guards_decoder = msgspec.msgpack.Decoder(list[str])


def _guards(pattern: str, cased: bool) -> tuple[str, ...]:
    body, flags = _leading_flags(pattern)
    if flags is None:
        return ()
    caseless = not cased or "i" in flags
    try:
        items: list[str] | None = _top_level(body)
    except _NoGuard:
        items = None  # a top-level alternation: no sides to split
    if items is None or not any(_is_gap(item) for item in items):
        return _guard(body, caseless)
    out: list[str] = []
    for item in items:
        if not item.startswith("(") or item.endswith(("?", "*", "}")):
            continue  # a group that may be absent (or repeated from zero) is no condition
        for guard in _guard(item[:-1] if item.endswith("+") else item, caseless):
            if guard not in out:
                out.append(guard)
    return tuple(out)


def _guard(text: str, caseless: bool) -> tuple[str, ...]:
    """``text`` as a guard, or ``()``: not one both engines read alike, or it may match the
    empty text. A part that is not a group is wrapped in one (its alternation stays its own)."""
    try:
        guard = _written(text)
    except _NoGuard:
        return ()
    if not text.startswith("(") or _group_end(text, 0) != len(text):
        guard = f"(?:{guard})"
    return (guard,) if compile_rule_regex(guard, not caseless).search("") is None else ()


def _leading_flags(pattern: str) -> tuple[str, str | None]:
    """The pattern without its leading ``(?flags)`` groups, and those flags (``None``:
    flags a guard cannot follow)."""
    flags = ""
    while pattern.startswith("(?"):
        end = pattern.find(")")
        group = pattern[2:end]
        if end < 0 or not group or not set(group) <= _FLAGS:
            break  # a group, not a flag setting (or one with "-" or "x")
        flags += group
        pattern = pattern[end + 1:]
    if pattern.startswith("(?") and not pattern.startswith(("(?:", "(?P<")):
        return pattern, None
    return pattern, flags


def _top_level(body: str) -> list[str]:
    """The items of a pattern's top-level sequence, each with its quantifier; raises
    :class:`_NoGuard` for a top-level alternation (no sequence to split)."""
    items: list[str] = []
    i = 0
    while i < len(body):
        start = i
        c = body[i]
        if c == "|":
            raise _NoGuard
        if c == "(":
            i = _group_end(body, i)
        elif c == "[":
            i = _class_end(body, i)
        elif c == "\\":
            i += 2
        else:
            i += 1
        i = _quantifier_end(body, i)
        items.append(body[start:i])
    return items


def _group_end(text: str, i: int) -> int:
    depth = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(text, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise _NoGuard


def _class_end(text: str, i: int) -> int:
    i += 1
    if i < len(text) and text[i] == "^":
        i += 1
    if i < len(text) and text[i] == "]":
        i += 1  # a leading "]" is a member
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "]":
            return i + 1
        i += 1
    raise _NoGuard


def _quantifier_end(text: str, i: int) -> int:
    if i < len(text) and text[i] in _QUANTIFIERS:
        if text[i] == "{":
            end = text.find("}", i)
            if end < 0:
                raise _NoGuard
            i = end + 1
        else:
            i += 1
        if i < len(text) and text[i] == "?":
            i += 1  # lazy: the same texts match
    return i


def _is_gap(item: str) -> bool:
    if not item.startswith(".") or len(item) == 1:
        return False
    quantifier = item[1:].rstrip("?") or item[1:]
    if quantifier in ("*", "+"):
        return True
    if quantifier.startswith("{") and quantifier.endswith("}"):
        bounds = quantifier[1:-1].split(",")
        if len(bounds) == 2:
            return not bounds[1] or (bounds[1].isdigit() and int(bounds[1]) >= GAP_MIN)
    return False


def _written(text: str) -> str:
    """``text`` (a group) written for both engines, or :class:`_NoGuard`."""
    if not text.isascii():
        raise _NoGuard
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            out.append(_escape(text[i + 1:i + 2], in_class=False))
            i += 2
        elif c == "[":
            end = _class_end(text, i)
            out.append(_class(text[i:end]))
            i = end
        elif c == "(":
            if text.startswith("(?", i) and not text.startswith("(?:", i):
                raise _NoGuard  # flags, names: not worth modelling
            out.append(c)
            i += 1
        elif c == ".":
            raise _NoGuard
        elif c == "{":
            end = text.find("}", i)
            bounds = text[i + 1:end].split(",")
            if (end < 0 or not bounds[0] or not all(b.isdigit() for b in bounds if b) or not bounds[-1]
                    or int(bounds[-1]) > MAX_REPEAT):
                raise _NoGuard  # "{,n}" is a literal to RE2; an open or long repeat is unrolled
            out.append(text[i:end + 1])
            i = end + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _escape(letter: str, *, in_class: bool) -> str:
    if letter == "s":
        return _SPACE if in_class else f"[{_SPACE}]"
    if letter in _ESCAPES_KEPT and not (in_class and letter in "bB"):
        return "\\" + letter
    if letter and not letter.isalnum():
        return "\\" + letter  # an escaped punctuation character is itself
    raise _NoGuard


def _class(text: str) -> str:
    """An ASCII class written for both engines (``\\s`` spelled out); no negation."""
    if text.startswith("[^"):
        raise _NoGuard
    body = text[1:-1]
    if "[:" in body:
        raise _NoGuard  # POSIX classes
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\":
            out.append(_escape(body[i + 1:i + 2], in_class=True))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "[" + "".join(out) + "]"
