"""Multi-literal scanning with Hyperscan: the batch screen's fast path.

The screen (``DetectionEngine._screen``) scans ~100 MB of message, argument and result
text per 200 MB of transcript for the atoms of each field. Every atom is a literal (a
rule value, or a literal a regex requires), so a SIMD literal matcher can do RE2 Set's
job there: Hyperscan reads the joined values at ~1.4 GB/s where the Set's DFA does
~0.5 GB/s on the same chunks (``bench/bench_detect.py``).

What it finds must include everything the RE2 Set finds (the screen may over-report:
a chunk wrongly thought to hold a match only makes suspects, which are checked one by
one on the exact per-value path; it must never under-report):

* a caseless atom (``(?i:...)`` in RE2) is matched with ASCII case folding, which is
  RE2's Unicode folding as far as ASCII letters go, but for two code points that fold to
  ASCII letters: U+017F (long s) and U+212A (Kelvin sign). The literal takes them in
  their ASCII form, and text that is not ASCII is given to :func:`fold` first, which
  does the same to the text;
* a non-ASCII character is matched byte for byte (UTF-8 is self-synchronising, so a
  byte match is a character match). A caseless atom with a non-ASCII character that has
  other cases (``café``) would need Unicode folding: such a field is scanned this way on
  ASCII text only, where that atom cannot occur for RE2 either (:attr:`Scanner.unicode`);
* an atom anchored at a line's start or end (``equals``, ``startswith``, ``endswith``)
  is matched anywhere: a superset of its hits.

Without Hyperscan, or with ``TELLTALE_HYPERSCAN=0``, the RE2 Set does it all. Matching
is linear in the input either way.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import msgspec

from telltale.detect import cache

_hs: Any
try:  # an accelerator, not a requirement: without it the RE2 Set does the same job
    import hyperscan as _hs
except ImportError:  # pragma: no cover - depends on the platform's wheels
    _hs = None

#: Non-ASCII code points whose case fold is an ASCII letter (RE2's case-fold orbits).
_ASCII_FOLDS = (("\u017f", "s"), ("\u212a", "k"))
#: Their UTF-8, looked for in the same pass as the atoms (see :meth:`Scanner.exact`).
_FOLD_BYTES = tuple(code_point.encode() for code_point, _letter in _ASCII_FOLDS)


class Literal(NamedTuple):
    """One atom as a literal: its text and whether it matches in any case; or, with
    ``expression``, a guard expression (:mod:`telltale.detect.guards`), matched multi-line."""

    text: str
    caseless: bool
    expression: bool = False


def enabled() -> bool:
    """Whether Hyperscan is importable and not turned off by ``TELLTALE_HYPERSCAN=0``."""
    return _hs is not None and os.environ.get("TELLTALE_HYPERSCAN", "1") != "0"


def literal_bytes(literal: Literal) -> bytes:
    """The bytes Hyperscan looks for (a caseless literal with its ASCII-folding code points
    in ASCII form, as :func:`fold` leaves the text)."""
    text = fold(literal.text) if literal.caseless and not literal.expression else literal.text
    return text.encode("utf-8", "surrogatepass")


def _expression(literal: Literal) -> bytes:
    """The atom as a Hyperscan regex: a guard as it is, a literal byte by byte."""
    data = literal_bytes(literal)
    return data if literal.expression else _escaped(data)


def _escaped(data: bytes) -> bytes:
    """``data`` as a Hyperscan regex that matches exactly it (``\\xHH`` each byte)."""
    return b"".join(b"\\x%02x" % byte for byte in data)


def _exact_beyond_ascii(literal: Literal) -> bool:
    """Whether ASCII folding finds this literal wherever RE2 does, in any (folded) text
    (a guard is ASCII, with no class that reads beyond it: :mod:`telltale.detect.guards`)."""
    if literal.text.isascii():
        return True
    if not literal.caseless:  # folded text has no long s or Kelvin sign left to match
        return fold(literal.text) == literal.text
    return all(c.isascii() or c.lower() == c.upper() == c.casefold() == c for c in fold(literal.text))


def fold(text: str) -> str:
    """Non-ASCII text as the scanner must see it (see the module docstring).

    A ``replace`` per code point, each after a fast ``in``: ``str.translate`` maps
    non-ASCII text one character at a time through a dict, ~40x slower on a large result.
    """
    for code_point, letter in _ASCII_FOLDS:
        if code_point in text:
            text = text.replace(code_point, letter)
    return text


class ScanPlan(msgspec.Struct, array_like=True, frozen=True):
    """What a field's scanner is compiled from: its expressions and flags (the literals,
    then the fold sentinels), whether they are regexes, whether the scanner is
    :attr:`Scanner.unicode`, and the SHA-256 of the expressions and flags that names the
    database in the rule-pack cache. Kept with the compiled rules (``detect/snapshot.py``):
    working them out from ~2,500 literals again took ~8 ms a scan."""

    expressions: list[bytes]
    flags: list[int]
    regexes: bool
    unicode: bool
    folds: int
    key: bytes


def plan(literals: Sequence[Literal | None]) -> ScanPlan | None:
    """The scan plan of these literals (``found`` are their indices, each once per call).

    The database also holds the UTF-8 of the code points RE2 folds to ASCII letters (after
    the literals, as :attr:`Scanner.folds` and up): :meth:`Scanner.exact` learns whether a
    value holds one in the same pass, not in two more ``in`` searches of it (~30 ms a
    cold scan of the Claude tree, whose 13 MB of tool results are mostly not ASCII).

    ``None`` when Hyperscan is not installed, or when an atom is not a literal (``None``
    in ``literals``), is empty or holds a NUL: the caller keeps its RE2 Set then.
    """
    if _hs is None or not literals:
        return None
    expressions: list[bytes] = []
    flags: list[int] = []
    unicode = True
    # With a guard expression the database is compiled as regexes, each literal escaped.
    regexes = any(literal is not None and literal.expression for literal in literals)
    for literal in literals:
        if literal is None or not literal.text:
            return None
        data = _expression(literal) if regexes else literal_bytes(literal)
        if b"\x00" in data:  # the binding passes literals as C strings: a NUL would end it
            return None
        expressions.append(data)
        flags.append(_hs.HS_FLAG_SINGLEMATCH | (_hs.HS_FLAG_CASELESS if literal.caseless else 0)
                     | (_hs.HS_FLAG_MULTILINE if literal.expression else 0))
        unicode = unicode and _exact_beyond_ascii(literal)
    folds = len(expressions)
    for code_point in _FOLD_BYTES:
        expressions.append(_escaped(code_point) if regexes else code_point)
        flags.append(_hs.HS_FLAG_SINGLEMATCH)
    key = hashlib.sha256(cache.encode([expressions, flags])).digest()
    return ScanPlan(expressions, flags, regexes, unicode, folds, key)


def scanner(literals: Sequence[Literal | None]) -> Scanner | None:
    """A scanner of these literals (see :func:`plan`); ``None`` without Hyperscan, with
    ``TELLTALE_HYPERSCAN=0`` or where there is no plan."""
    return scanner_of(plan(literals)) if enabled() else None


def scanner_of(scan_plan: ScanPlan | None) -> Scanner | None:
    """The scanner of a plan: its database from the rule-pack cache (Hyperscan's own
    serialisation), compiled when missing there."""
    if scan_plan is None or not enabled():
        return None
    expressions, flags, regexes = scan_plan.expressions, scan_plan.flags, scan_plan.regexes

    def build() -> Any:
        database = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        ids = list(range(len(expressions)))
        database.compile(expressions=expressions, ids=ids, elements=len(ids), flags=flags, literal=not regexes)
        return database

    try:  # a database is serialised by Hyperscan itself into the rule-pack cache
        database = cache.cached("hyperscan", scan_plan.key, build, _hs.dumpb, _load)
    except _hs.error:  # a database Hyperscan will not build (size limits): the Set still works
        return None
    return Scanner(database, scan_plan.unicode, scan_plan.folds)


def _load(data: bytes) -> Any:
    return _hs.loadb(data, _hs.HS_MODE_BLOCK)


class Scanner:
    """A compiled literal database, with a scratch space per thread (Hyperscan refuses
    one scratch in two scans at once)."""

    __slots__ = ("_database", "_local", "folds", "unicode")

    def __init__(self, database: Any, unicode: bool, folds: int) -> None:
        self._database = database
        self._local = threading.local()
        #: Exact on any text given through :func:`fold`, not only on ASCII text.
        self.unicode = unicode
        #: The id of the first fold sentinel: ids from here on are not atoms.
        self.folds = folds

    def _scan(self, data: bytes) -> list[int]:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = _hs.Scratch(self._database)
        found: list[int] = []
        # SINGLEMATCH: each literal is reported once per call, however often it occurs.
        if _positional():
            self._database.scan(data, _on_match, 0, found, scratch)
        else:
            self._database.scan(data, match_event_handler=_on_match, context=found, scratch=scratch)
        return found

    def __call__(self, data: bytes) -> list[int]:
        """The atoms in ``data`` (ASCII or given through :func:`fold`)."""
        found = self._scan(data)
        if found and max(found) >= self.folds:  # text not folded: the sentinels are not atoms
            found = [i for i in found if i < self.folds]
        return found

    def exact(self, fallback: Callable[[bytes], list[int] | None]) -> Callable[[bytes], list[int] | None]:
        """The atoms in one value as it is (not folded), ``None`` for none; ``fallback``'s
        answer (the RE2 Set's) where only it is exact: the value holds a code point RE2
        folds to an ASCII letter, or it is not ASCII and the scanner is not :attr:`unicode`.
        One function (one Python frame): the per-value path calls it ~20,000 times in a
        cold scan of the Claude tree."""
        if not _positional():
            scan_one = self._scan

            def match_slowly(data: bytes) -> list[int] | None:
                if not self.unicode and not data.isascii():
                    return fallback(data)
                found = scan_one(data)
                return fallback(data) if found and max(found) >= self.folds else found or None

            return match_slowly
        database, local, scan = self._database, self._local, self._database.scan
        unicode, folds = self.unicode, self.folds

        def match(data: bytes) -> list[int] | None:
            if not unicode and not data.isascii():
                return fallback(data)
            scratch = getattr(local, "scratch", None)
            if scratch is None:
                scratch = local.scratch = _hs.Scratch(database)
            found: list[int] = []
            scan(data, _on_match, 0, found, scratch)
            if found and max(found) >= folds:
                return fallback(data)
            return found or None

        return match


@functools.cache
def _positional() -> bool:
    """Whether the binding's ``Database.scan`` takes ``(data, match_event_handler, flags,
    context, scratch)`` by position, as hyperscan 0.7 does: parsing them as keywords cost
    ~1 us a call (84 M of 1,236 M instructions evaluating the Claude tree's batches).
    Checked once on a database of one literal; any other answer keeps the keywords."""
    try:
        database = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        database.compile(expressions=[b"ab"], ids=[7], elements=1, flags=[_hs.HS_FLAG_SINGLEMATCH], literal=True)
        found: list[int] = []
        database.scan(b"xaby", _on_match, 0, found, _hs.Scratch(database))
    except Exception:  # a binding with another order or signature
        return False
    return found == [7]


def _on_match(index: int, _start: int, _end: int, _flags: int, found: list[int]) -> None:
    found.append(index)
