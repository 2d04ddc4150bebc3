"""Required-literal extraction from RE2 patterns, for the engine's prefilter.

For a pattern ``p`` we compute a small set ``F`` of strings such that every text that
``p`` matches contains at least one member of ``F`` (compared case-insensitively). The
engine puts ``F`` into one RE2 Set per field, so an observation only reaches ``p`` when
one of its literals occurs. The analysis is conservative: whatever it does not
understand counts as "any text", which can only make ``F`` weaker (or absent), never
wrong. No Python ``re`` is involved; this is a small hand-written scanner.
"""

from __future__ import annotations

from functools import lru_cache

import msgspec

from telltale.detect import cache

#: Largest literal set kept while expanding classes and concatenations.
MAX_SET = 64
#: Largest set of alternative literals (one per alternation branch) kept as a factor.
MAX_UNION = 256
#: Widest class with ASCII members expanded into literals.
MAX_CLASS = 16
#: Weakest literal accepted as a prefilter, in UTF-8 bytes (shorter ones hit too often).
MIN_BYTES = 3
#: Most factors kept per pattern by :func:`required_factors`.
MAX_FACTORS = 8

_ZERO_WIDTH_ESCAPES = frozenset("bBAzZ")
_CLASS_ESCAPES = frozenset("dDwWsSpPC")
_CONTROL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}


class _Atom(msgspec.Struct, frozen=True):
    """One parsed item: ``exact`` is the finite set of strings it matches, if known;
    ``required`` is a factor that every match of it contains, if known; ``factors`` are
    more such factors (every match contains a member of each one)."""

    exact: frozenset[str] | None
    required: frozenset[str] | None
    zero_width: bool = False
    factors: tuple[frozenset[str], ...] = ()


class _Unsupported(Exception):
    """The scanner met syntax it does not model; the caller gives up on a prefilter."""


def _bytes(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _encodable(factor: frozenset[str]) -> bool:
    """No lone surrogate (``\\x{D800}``): such a literal cannot be put in a Set pattern,
    so it is no prefilter (the regex then runs without one)."""
    try:
        for s in factor:
            s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strength(factor: frozenset[str]) -> tuple[int, int]:
    return (min(_bytes(s) for s in factor), -len(factor))


def _usable(factor: frozenset[str] | None) -> bool:
    return bool(factor) and "" not in factor  # type: ignore[operator]


def _all_factors(atom: _Atom) -> list[frozenset[str]]:
    """Every factor known for ``atom``, strongest first, without duplicates."""
    found = [*atom.factors, atom.required, atom.exact]
    out: list[frozenset[str]] = []
    for factor in found:
        if factor is not None and _usable(factor) and factor not in out:
            out.append(factor)
    out.sort(key=_strength, reverse=True)
    return out


def _better(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    if a is None or not a:
        return b
    if b is None or not b:
        return a
    return b if _strength(b) > _strength(a) else a


#: Characters with a meaning of their own in a pattern (everything else is itself).
_SPECIAL = frozenset("\\[]()|^$.*+?{}")


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def peek(self) -> str:
        return self.p[self.i] if self.i < len(self.p) else ""

    def parse_alternation(self) -> _Atom:
        branches = [self.parse_sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.parse_sequence())
        if len(branches) == 1:
            return branches[0]
        exact: frozenset[str] | None = frozenset()
        required: frozenset[str] | None = frozenset()
        for br in branches:
            if exact is not None and br.exact is not None and len(exact | br.exact) <= MAX_SET:
                exact = exact | br.exact
            else:
                exact = None
            br_req = br.required if br.required else br.exact
            if required is not None and br_req and "" not in br_req and len(required | br_req) <= MAX_UNION:
                required = required | br_req
            else:
                required = None
        if exact is not None:
            required = _better(required, exact if "" not in exact else None)
        # Every match matches some branch, so one factor of each branch, united, is a
        # factor of the alternation: the k-th strongest of each (or its last), for each k.
        per_branch = [_all_factors(br) for br in branches]
        factors: list[frozenset[str]] = []
        if all(per_branch):
            for k in range(min(max(len(f) for f in per_branch), MAX_FACTORS)):
                united = frozenset().union(*(f[min(k, len(f) - 1)] for f in per_branch))
                if len(united) <= MAX_UNION and united not in factors:
                    factors.append(united)
        return _Atom(exact, required or None, factors=tuple(factors))

    def parse_sequence(self) -> _Atom:
        run: frozenset[str] | None = frozenset({""})
        best: frozenset[str] | None = None
        all_exact = True
        # Every item that must occur contributes its factors: a match of the sequence
        # contains a match of each such item.
        factors: list[frozenset[str]] = []
        p, n = self.p, len(self.p)
        while self.i < n and p[self.i] not in "|)":
            # A run of ordinary characters is taken at once (its last character is left
            # to the general path when a quantifier follows): the same as one at a time.
            end = self.i
            while end < n and p[end] not in _SPECIAL:
                end += 1
            if end < n and p[end] in "*+?{":
                end -= 1
            if end - self.i >= 2:
                text = p[self.i : end]
                self.i = end
                if run is not None and len(run) <= MAX_SET:
                    run = frozenset(a + text for a in run)
                else:
                    best = _better(best, _nonempty(run))
                    _add(factors, _nonempty(run))
                    run = frozenset({text})
                    all_exact = False
                continue
            atom = self.parse_atom()
            lo, hi = self.parse_quantifier()
            if atom.zero_width:
                # Anchors, word boundaries and flag groups consume nothing: the text
                # on both sides is adjacent, so the literal run continues.
                continue
            if lo == 1 and hi == 1 and atom.exact is not None:
                if run is not None and len(run) * len(atom.exact) <= MAX_SET:
                    run = frozenset(a + b for a in run for b in atom.exact)
                else:
                    best = _better(best, _nonempty(run))
                    _add(factors, _nonempty(run))
                    run = atom.exact
                    all_exact = False
                continue
            all_exact = False
            best = _better(best, _nonempty(run))
            _add(factors, _nonempty(run))
            run = frozenset({""})
            if lo >= 1:
                factor = atom.exact if atom.exact is not None and "" not in atom.exact else atom.required
                best = _better(best, factor)
                for known in _all_factors(atom):
                    _add(factors, known)
                if atom.exact is not None:
                    # The last repetition is followed by what comes next.
                    run = atom.exact
        best = _better(best, _nonempty(run))
        _add(factors, _nonempty(run))
        return _Atom(run if all_exact else None, best, factors=tuple(factors))

    def parse_quantifier(self) -> tuple[int, int]:
        c = self.peek()
        lo, hi = 1, 1
        if c == "*":
            self.i += 1
            lo, hi = 0, -1
        elif c == "+":
            self.i += 1
            lo, hi = 1, -1
        elif c == "?":
            self.i += 1
            lo, hi = 0, 1
        elif c == "{":
            end = self.p.find("}", self.i)
            body = self.p[self.i + 1 : end] if end > 0 else ""
            parts = body.split(",")
            if end > 0 and 1 <= len(parts) <= 2 and parts[0].isdigit() and all(x.isdigit() or x == "" for x in parts):
                self.i = end + 1
                lo = int(parts[0])
                hi = -1 if len(parts) == 2 else lo
                if len(parts) == 2 and parts[1]:
                    hi = int(parts[1])
            else:
                return 1, 1  # a literal brace
        else:
            return 1, 1
        if self.peek() == "?":  # non-greedy marker
            self.i += 1
        if (lo, hi) != (1, 1):
            # A repeated exact atom is still "at least once", but not "exactly once".
            hi = -1 if hi != 1 or lo != 1 else 1
        return lo, hi

    def parse_atom(self) -> _Atom:
        c = self.peek()
        self.i += 1
        if c == "\\":
            return self.parse_escape()
        if c == "[":
            return self.parse_class()
        if c == "(":
            return self.parse_group()
        if c in "^$":
            return _Atom(None, None, zero_width=True)
        if c == ".":
            return _Atom(None, None)
        if c in "*+?":
            raise _Unsupported
        return _Atom(frozenset({c}), None)

    def parse_escape(self) -> _Atom:
        c = self.peek()
        self.i += 1
        if not c:
            raise _Unsupported
        if c in _ZERO_WIDTH_ESCAPES:
            return _Atom(None, None, zero_width=True)
        if c in _CLASS_ESCAPES:
            if c in "pP" and self.peek() == "{":
                end = self.p.find("}", self.i)
                if end < 0:
                    raise _Unsupported
                self.i = end + 1
            elif c in "pP":
                self.i += 1
            return _Atom(None, None)
        if c in _CONTROL_ESCAPES:
            return _Atom(frozenset({_CONTROL_ESCAPES[c]}), None)
        if c == "x":
            return _Atom(frozenset({self.parse_hex()}), None)
        if c == "Q":
            end = self.p.find("\\E", self.i)
            text = self.p[self.i : end if end >= 0 else len(self.p)]
            self.i = end + 2 if end >= 0 else len(self.p)
            return _Atom(frozenset({text}), None)
        if c.isalnum():
            raise _Unsupported  # octal, backreferences and other specials
        return _Atom(frozenset({c}), None)

    def parse_hex(self) -> str:
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            if end < 0:
                raise _Unsupported
            digits = self.p[self.i + 1 : end]
            self.i = end + 1
        else:
            digits = self.p[self.i : self.i + 2]
            self.i += 2
        try:
            return chr(int(digits, 16))
        except (ValueError, OverflowError) as exc:
            raise _Unsupported from exc

    def parse_class(self) -> _Atom:
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        chars: set[str] = set()
        known = not negated
        first = True
        while True:
            c = self.peek()
            if not c:
                raise _Unsupported
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[" and self.p.startswith("[:", self.i):
                end = self.p.find(":]", self.i)
                if end < 0:
                    raise _Unsupported
                self.i = end + 2
                known = False
                continue
            self.i += 1
            if c == "\\":
                e = self.peek()
                self.i += 1
                if e in _CLASS_ESCAPES:
                    if e in "pP" and self.peek() == "{":
                        self.i = self.p.find("}", self.i) + 1 or len(self.p)
                    known = False
                    continue
                if e == "x":
                    c = self.parse_hex()
                elif e in _CONTROL_ESCAPES:
                    c = _CONTROL_ESCAPES[e]
                elif e.isalnum():
                    raise _Unsupported
                else:
                    c = e
            if self.peek() == "-" and self.i + 1 < len(self.p) and self.p[self.i + 1] != "]":
                self.i += 1
                hi = self.peek()
                self.i += 1
                if hi == "\\":
                    e = self.peek()
                    self.i += 1
                    if e == "x":
                        hi = self.parse_hex()
                    elif e.isalnum():
                        raise _Unsupported
                    else:
                        hi = e
                if ord(hi) < ord(c):
                    raise _Unsupported
                if ord(hi) - ord(c) >= 2 * MAX_SET:
                    known = False
                    continue
                chars.update(chr(x) for x in range(ord(c), ord(hi) + 1))
            else:
                chars.add(c)
        if not known or not chars or len(chars) > 2 * MAX_SET:
            return _Atom(None, None)
        if len(chars) > MAX_CLASS and any(ord(c) < 0x80 for c in chars):
            # Wide ASCII classes only multiply runs into sets of useless one-byte strings.
            return _Atom(None, None)
        return _Atom(frozenset(chars), None)

    def parse_group(self) -> _Atom:
        if self.peek() == "?":
            self.i += 1
            c = self.peek()
            if c == "P" or c == "<":
                end = self.p.find(">", self.i)
                if end < 0:
                    raise _Unsupported
                self.i = end + 1
            elif c in "=!":
                raise _Unsupported  # lookaround: RE2 rejects it anyway
            else:
                # Flag group: ``(?flags)`` or ``(?flags:...)``. Case flags are harmless
                # because prefilter literals are compared case-insensitively.
                while self.peek() and self.peek() not in ":)":
                    self.i += 1
                if self.peek() == ")":
                    self.i += 1
                    return _Atom(None, None, zero_width=True)
                self.i += 1
        inner = self.parse_alternation()
        if self.peek() != ")":
            raise _Unsupported
        self.i += 1
        return inner


def _add(factors: list[frozenset[str]], factor: frozenset[str] | None) -> None:
    if factor is not None and _usable(factor) and factor not in factors:
        factors.append(factor)


def _nonempty(run: frozenset[str] | None) -> frozenset[str] | None:
    if run is None or "" in run:
        return None
    return run


@lru_cache(maxsize=512)
def _parsed(pattern: str) -> _Atom | None:
    """``pattern`` parsed once for both analyses below (``None``: not understood)."""
    parser = _Parser(pattern)
    try:
        atom = parser.parse_alternation()
    except (_Unsupported, IndexError, ValueError):
        return None
    return atom if parser.i == len(pattern) else None


def _set(raw: bytes) -> frozenset[str] | None:
    value = _list_decoder.decode(raw)
    return None if value is None else frozenset(value)


def _sets(raw: bytes) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(v) for v in _lists_decoder.decode(raw))


_list_decoder = msgspec.msgpack.Decoder(list[str] | None)
_lists_decoder = msgspec.msgpack.Decoder(list[list[str]])


def _sorted(value: frozenset[str] | None) -> bytes:
    return cache.encode(None if value is None else sorted(value))


@lru_cache(maxsize=4096)
def required_literals(pattern: str) -> frozenset[str] | None:
    """A set of strings one of which every match of ``pattern`` contains, or ``None``.

    ``None`` means no useful prefilter exists (every member must be at least
    :data:`MIN_BYTES` UTF-8 bytes long). Kept in the rule-pack cache when one is active.
    """
    key = pattern.encode("utf-8", "surrogatepass")
    return cache.cached("literals", key, lambda: _required_literals(pattern), _sorted, _set)


def _required_literals(pattern: str) -> frozenset[str] | None:
    atom = _parsed(pattern)
    if atom is None:
        return None
    factor = atom.required
    if atom.exact is not None and "" not in atom.exact:
        factor = _better(factor, atom.exact)
    if not factor or "" in factor:
        return None
    if min(_bytes(s) for s in factor) < MIN_BYTES or not _encodable(factor):
        return None
    return factor


@lru_cache(maxsize=4096)
def required_factors(pattern: str) -> tuple[frozenset[str], ...]:
    """Sets of strings such that every match of ``pattern`` contains a member of *each*.

    A conjunction of :func:`required_literals`-style factors (which is one of them when it
    exists), strongest first, at most :data:`MAX_FACTORS`; every member is at least
    :data:`MIN_BYTES` UTF-8 bytes long. ``()`` means none is known. The engine uses them
    to skip a regex whose factors did not all occur.
    """
    key = pattern.encode("utf-8", "surrogatepass")
    encode = lambda value: cache.encode([sorted(f) for f in value])  # noqa: E731
    return cache.cached("factors", key, lambda: _required_factors(pattern), encode, _sets)


def _required_factors(pattern: str) -> tuple[frozenset[str], ...]:
    atom = _parsed(pattern)
    if atom is None:
        return ()
    out = [f for f in _all_factors(atom) if min(_bytes(s) for s in f) >= MIN_BYTES and _encodable(f)]
    first = required_literals(pattern)
    if first is not None:
        out = [first, *(f for f in out if f != first)]
    return tuple(out[:MAX_FACTORS])
