"""Multi-literal scanning of ASCII text with Hyperscan: the batch screen's fast path.

The screen (``DetectionEngine._screen``) scans ~100 MB of message, argument and result
text per 200 MB of transcript for the atoms of each field. Every atom is a literal (a
rule value, or a literal a regex requires), so a SIMD literal matcher can do RE2 Set's
job there: Hyperscan reads the joined values at ~1.4 GB/s where the Set's DFA does
~0.5 GB/s on the same chunks (``bench/bench_detect.py``).

It is used for ASCII text only, where it is exact:

* a caseless atom (``(?i:...)`` in RE2) is matched with ASCII case folding. On ASCII
  text that is what RE2's Unicode folding does too: the only non-ASCII code points that
  fold to an ASCII letter are U+017F (long s) and U+212A (Kelvin sign), which the
  literal takes in their ASCII form; any other non-ASCII literal cannot match ASCII
  text and is left out;
* a cased atom is matched byte for byte (a non-ASCII one cannot match and is left out);
* an atom anchored at a line's start or end (``equals``, ``startswith``, ``endswith``)
  is matched anywhere: a superset of its hits. The screen tolerates a superset (a
  chunk it wrongly thinks may hold a match only makes suspects, which are checked one
  by one on the exact per-value path); it must never miss one, and it does not.

Non-ASCII chunks, and every field when Hyperscan is missing or disabled
(``TELLTALE_HYPERSCAN=0``), keep the RE2 Set. Matching is linear in the input either way.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

_hs: Any
try:  # an accelerator, not a requirement: without it the RE2 Set does the same job
    import hyperscan as _hs
except ImportError:  # pragma: no cover - depends on the platform's wheels
    _hs = None

#: Non-ASCII code points whose case fold is an ASCII letter (RE2's case-fold orbits).
_ASCII_FOLDS = {"\u017f": "s", "\u212a": "k"}


class Literal(NamedTuple):
    """One atom as a literal: its text and whether it matches in any case."""

    text: str
    caseless: bool


def enabled() -> bool:
    """Whether Hyperscan is importable and not turned off by ``TELLTALE_HYPERSCAN=0``."""
    return _hs is not None and os.environ.get("TELLTALE_HYPERSCAN", "1") != "0"


def ascii_form(literal: Literal) -> bytes | None:
    """The bytes that find ``literal`` in ASCII text, or ``None`` when it cannot occur there."""
    text = literal.text
    if not text.isascii():
        if not literal.caseless:
            return None
        text = "".join(_ASCII_FOLDS.get(c, c) for c in text)
        if not text.isascii():
            return None
    return text.encode("ascii")


def ascii_scanner(literals: Sequence[Literal | None]) -> Callable[[bytes], list[int]] | None:
    """``data -> indices of the literals found in it`` for ASCII ``data``, each index once.

    ``None`` when Hyperscan is not available, or when an atom is not a literal (``None``
    in ``literals``) or is empty: the caller keeps its RE2 Set then.
    """
    if not enabled() or not literals:
        return None
    expressions: list[bytes] = []
    ids: list[int] = []
    flags: list[int] = []
    for index, literal in enumerate(literals):
        if literal is None or not literal.text:
            return None
        form = ascii_form(literal)
        if form is None:
            continue
        expressions.append(form)
        ids.append(index)
        flags.append(_hs.HS_FLAG_SINGLEMATCH | (_hs.HS_FLAG_CASELESS if literal.caseless else 0))
    if not expressions:
        return _nothing
    database = _hs.Database(mode=_hs.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=ids, elements=len(ids), flags=flags, literal=True)
    return _Scanner(database)


def _nothing(_data: bytes) -> list[int]:
    return []


class _Scanner:
    """A compiled literal database, with a scratch space per thread (Hyperscan refuses
    one scratch in two scans at once)."""

    __slots__ = ("_database", "_local")

    def __init__(self, database: Any) -> None:
        self._database = database
        self._local = threading.local()

    def __call__(self, data: bytes) -> list[int]:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = _hs.Scratch(self._database)
        found: list[int] = []
        # SINGLEMATCH: each literal is reported once per call, however often it occurs.
        self._database.scan(data, match_event_handler=_collector(found), scratch=scratch)
        return found


def _collector(found: list[int]) -> Callable[[int, int, int, int, object], None]:
    append = found.append

    def on_match(index: int, _start: int, _end: int, _flags: int, _context: object) -> None:
        append(index)

    return on_match
