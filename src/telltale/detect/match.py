"""Compiled rules and the exact per-observation match path.

Each rule field has one RE2 Set of *atoms* (:class:`_FieldIndex`): the literal values of
literal matchers and the literals each regex requires (:mod:`telltale.detect.literals`).
A selection registers its most selective matcher's atoms as its trigger and its
matchers on that field as its gate; only rules whose gate opens become candidates, and
only their regexes run (:class:`MatchMixin`). Only RE2 looks at transcript text.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import msgspec
import re2

from telltale import utf8
from telltale.detect import literal_scan
from telltale.detect.fields import FIELD_GETTERS, FIELD_INDEX, KIND_FIELDS, MULTI_FIELDS, PROSE_FIELDS, field_kind
from telltale.detect.guards import regex_guards
from telltale.detect.literal_scan import Literal
from telltale.detect.literals import required_factors, required_literals
from telltale.detect.loader import MatcherDef, Rule, compile_rule_regex
from telltale.model import Observation

#: Bytes (UTF-8) of one field value that rules look at (transcripts are untrusted input).
FIELD_LIMIT = 65_536

_NO_HITS: frozenset[int] = frozenset()
#: Hit sets whose opened rules a field remembers (see ``_FieldIndex._open_rules``).
OPEN_MEMO = 4_096
# Line anchors: in values joined by "\n" they hold wherever \A and \z held in one value.
_LINE_START = "(?m:^)"
_LINE_END = "(?m:$)"

Span = tuple[int, int]
Searcher = Callable[[bytes], "Span | None"]
SetMatch = Callable[[bytes], "list[int] | None"]
#: One eager field of an observation kind: value getter, its position among the kind's
#: probes, Set match (``None``: no atoms), the atoms that make a rule a candidate
#: (``None``: every value does), the field's gate check (``_FieldIndex.opens``) and id.
_Probe = tuple[
    Callable[[Observation], "str | None"],
    int,
    "SetMatch | None",
    "frozenset[int] | None",
    Callable[[list[int]], bool],
    int,
]
#: The first eager field that makes a rule a candidate: its index among the kind's
#: probes, its bytes and its Set result.
_Known = tuple[int, bytes, "list[int] | None"]


def _public_searcher(rx: Any) -> Searcher:
    def search(data: bytes) -> Span | None:
        found = rx.search(data)
        return None if found is None else (int(found.start()), int(found.end()))

    return search


def _searcher(rx: Any) -> Searcher:
    """``data -> span | None`` for a compiled RE2 regex, searching bytes.

    The google-re2 wrapper builds a generator and a Match object per search; calling
    its extension object directly is several times cheaper on the hot path. The direct
    path is verified once against the public API and skipped if the wrapper changes.
    """
    raw = getattr(rx, "_regexp", None)
    anchor = getattr(re2, "_Anchor", None)
    if raw is None or anchor is None or not _FAST_RE2:
        return _public_searcher(rx)
    match = raw.Match
    unanchored = anchor.UNANCHORED

    def search(data: bytes) -> Span | None:
        span: Span = match(unanchored, data, 0, len(data))[0]
        return None if span[0] < 0 else span

    return search


def _lazy_searcher(pattern: str, cased: bool) -> Searcher:
    """A searcher that compiles its regex on its first search. A scan runs few of the
    pack's regexes (only those of candidate rules), and compiling all of them up front was
    a third of building the engine from the rule-pack cache. The pattern was validated
    when its rule was loaded (or when the cached rule set was built)."""
    compiled: list[Searcher] = []

    def search(data: bytes) -> Span | None:
        if not compiled:
            compiled.append(_searcher(compile_rule_regex(pattern, cased)))
        return compiled[0](data)

    return search


def _set_matcher(rset: Any) -> Callable[[bytes], list[int] | None]:
    """``data -> atom indices`` for a compiled RE2 Set (direct extension call when verified)."""
    raw = getattr(rset, "_set", None)
    if raw is not None and _FAST_RE2:
        return raw.Match  # type: ignore[no-any-return]
    return rset.Match  # type: ignore[no-any-return]


def _check_fast_re2() -> bool:
    try:
        rx = re2.compile("b+")
        rset = re2.Set.SearchSet()
        rset.Add("c")
        rset.Compile()
        probe = b"aabbbc"
        fast = rx._regexp.Match(re2._Anchor.UNANCHORED, probe, 0, len(probe))[0]
        return (
            tuple(fast) == tuple(rx.search(probe).span())
            and rx._regexp.Match(re2._Anchor.UNANCHORED, b"xx", 0, 2)[0][0] == -1
            and list(rset._set.Match(probe)) == [0]
            and not rset._set.Match(b"xx")
        )
    except Exception:  # any drift in the wrapper's internals: use the public API
        return False


_FAST_RE2 = _check_fast_re2()


class _Matcher:
    """A compiled ``field|op: values`` test against one field's atoms or regexes."""

    __slots__ = (
        "all", "atom_set", "atoms", "cased", "checks", "field", "is_regex", "key", "patterns", "regex_atoms",
        "regex_factors", "searchers",
    )

    def __init__(self, field: int, key: str) -> None:
        self.field = field
        self.key = key
        self.all = False
        self.is_regex = False
        self.cased = False
        self.atoms: tuple[int, ...] = ()
        self.atom_set: frozenset[int] = frozenset()
        #: The regexes as compiled (``(?m)`` added on a list field).
        self.patterns: tuple[str, ...] = ()
        #: Per regex: ``data -> span | None``, compiled on its first search (see :func:`_lazy_searcher`).
        self.searchers: tuple[Searcher, ...] = ()
        # Per regex: the atoms one of which must hit for it to possibly match (or () = none).
        self.regex_atoms: tuple[tuple[int, ...], ...] = ()
        # Per regex: atom sets of which each must have a hit for it to possibly match: its
        # guards (guards.regex_guards, one atom each), or else literals.required_factors.
        self.regex_factors: tuple[tuple[frozenset[int], ...], ...] = ()
        #: Per regex: (searcher, its factors); see :meth:`seal`.
        self.checks: tuple[tuple[Searcher, tuple[frozenset[int], ...]], ...] = ()

    @property
    def regexes(self) -> tuple[Any, ...]:
        """The compiled RE2 objects (compiled now if not yet: introspection and tests)."""
        return tuple(compile_rule_regex(p, self.cased) for p in self.patterns)

    def seal(self) -> None:
        """Precompute the set forms :meth:`test` uses (C-level set tests, no generators)."""
        self.atom_set = frozenset(self.atoms)
        self.checks = tuple(zip(self.searchers, self.regex_factors, strict=True))

    def possible(self, hits: frozenset[int]) -> bool:
        """Whether the Set hits allow a match: exact for literals, necessary for regexes."""
        if not self.is_regex:
            if self.all:
                return self.atom_set <= hits
            return not hits.isdisjoint(self.atom_set)
        for _search, factors in self.checks:
            for factor in factors:
                if hits.isdisjoint(factor):
                    break
            else:
                if not self.all:
                    return True
                continue
            if self.all:
                return False
        return self.all

    def test(self, data: bytes, hits: frozenset[int]) -> bool:
        if not self.is_regex:
            if self.all:
                return self.atom_set <= hits
            return not hits.isdisjoint(self.atom_set)
        # A regex runs only when each of its factors had a hit.
        for search, factors in self.checks:
            for factor in factors:
                if hits.isdisjoint(factor):
                    matched = False
                    break
            else:
                matched = search(data) is not None
            if matched != self.all:
                return matched
        return self.all


def bare_matcher(m: MatcherDef) -> _Matcher:
    """A matcher as its definition makes it, before its atoms are known (not sealed)."""
    out = _Matcher(FIELD_INDEX[m.field], m.key)
    out.all = m.all
    if m.op == "re":
        # On a list field ``^``/``$`` are line anchors: a regex holds for one item.
        values = [f"(?m){v}" for v in m.values] if out.field in MULTI_FIELDS else list(m.values)
        out.is_regex = True
        out.cased = m.cased
        out.patterns = tuple(values)
        out.searchers = tuple(_lazy_searcher(v, m.cased) for v in values)
    return out


class _Rule(msgspec.Struct):
    index: int
    rule: Rule
    selections: tuple[tuple[_Matcher, ...], ...]
    filters: tuple[tuple[_Matcher, ...], ...]
    #: ``rule.spec.id`` (read for every hit).
    id: str = ""

    def __post_init__(self) -> None:
        self.id = self.rule.spec.id


class _FieldIndex:
    """All atoms of one rule field in one RE2 Set, and which rules each atom triggers."""

    def __init__(self) -> None:
        self.patterns: list[str] = []
        self.chunk_patterns: list[str] = []
        #: Each atom as a literal (``None``: not one), for :func:`literal_scan.scanner`.
        self.literals: list[Literal | None] = []
        self.by_pattern: dict[str, int] = {}
        self.triggers: dict[int, list[int]] = {}
        self.residual: list[int] = []
        self._set: Any = None
        self.match: Callable[[bytes], list[int] | None] | None = None
        #: The Set of ``chunk_patterns`` (same atom indices); ``match`` when they are equal
        #: (``prepare_screen`` builds it, and the three below).
        self.chunk_match: Callable[[bytes], list[int] | None] | None = None
        #: What scans the joined values of the screen (see ``compile``): ASCII chunks, and
        #: the others (given through ``literal_scan.fold`` when ``fold_wide``).
        self.ascii_chunk_match: Callable[[bytes], list[int] | None] | None = None
        self.wide_chunk_match: Callable[[bytes], list[int] | None] | None = None
        self.fold_wide = False
        #: The Hyperscan literal scanner of the atoms (``None``: not all literals, no
        #: Hyperscan, or a field the screen never reads).
        self.scanner: literal_scan.Scanner | None = None
        #: Scanned for every observation (it can make rules candidates); else only on demand.
        self.eager = False
        #: The keys of ``triggers``, as a set (set after ``compile``).
        self.trigger_set: frozenset[int] = frozenset()
        #: Trigger atom -> (rule index, selection index, positions of the selection's matchers
        #: on this field) of each selection it triggers: what compiling records, and what the
        #: rule-pack cache keeps (:mod:`telltale.detect.snapshot`).
        self.gate_refs: dict[int, list[tuple[int, int, tuple[int, ...]]]] = {}
        #: The same as (rule index, gate matchers), built from ``gate_refs`` and the rules by
        #: ``snapshot`` (see :meth:`opened`).
        self.gated: dict[int, list[tuple[int, tuple[_Matcher, ...]]]] = {}
        self._single: dict[int, Searcher] = {}
        self._chunk_set: Any = None
        self._use_scanner = False
        self._screen_ready = False
        self._open_memo: dict[frozenset[int], frozenset[int]] = {}
        self._caseless: dict[str, int] = {}
        #: Worked out from the atoms on first use, or kept with the compiled rules (snapshot).
        self._scan_plan: literal_scan.ScanPlan | None = None
        self._planned = False
        self._anchored: frozenset[int] | None = None

    def atom(self, pattern: str, chunk_pattern: str | None = None, literal: Literal | None = None) -> int:
        """Index of ``pattern`` in this field's Set (added if new).

        ``chunk_pattern`` is its form for :meth:`DetectionEngine._screen`, which scans many
        values joined by newlines: it must match wherever ``pattern`` matches in one of
        them (the ``\\A``/``\\z`` anchors become line anchors). Default: ``pattern``.
        ``literal`` is the atom as a plain literal, when it is one (anchors aside).
        """
        index = self.by_pattern.get(pattern)
        if index is None:
            index = len(self.patterns)
            self.patterns.append(pattern)
            self.chunk_patterns.append(pattern if chunk_pattern is None else chunk_pattern)
            self.literals.append(literal)
            self.by_pattern[pattern] = index
        return index

    def caseless_atom(self, literal: str) -> int:
        """The atom of a literal a regex requires, in any case (memoised per field: building
        the default pack's engine asks 7,575 times for 2,938 atoms)."""
        index = self._caseless.get(literal)
        if index is None:
            index = self._caseless[literal] = self.atom(_caseless(literal), None, Literal(literal, True))
        return index

    def guard_atom(self, guard: str, caseless: bool) -> int:
        """The atom of a guard expression (:mod:`telltale.detect.guards`): its Set pattern is
        the expression multi-line, in any case unless cased, the scanner's the same."""
        pattern = f"(?m{'i' if caseless else ''}:{guard})"
        return self.atom(pattern, None, Literal(guard, caseless, expression=True))

    def compile(self) -> None:
        # A field whose only selections are residual has no atoms but must still be
        # looked at: eagerness does not depend on having a Set.
        self.eager = bool(self.triggers or self.residual)
        if not self.patterns:
            return
        self.match = self._lazy_set_match()
        self.chunk_match = self.match
        self.trigger_set = frozenset(self.triggers)
        # Whether the screen may use Hyperscan is settled now (TELLTALE_HYPERSCAN at build time).
        self._use_scanner = self.eager and literal_scan.enabled()

    @property
    def rset(self) -> Any:
        """The RE2 Set of the atoms (``None``: no atoms), compiled on first use: with the
        literal scanners doing the per-value path, a scan rarely needs one, and compiling
        the default pack's 13 Sets (2,938 atoms) took ~40 ms of building the engine."""
        if self._set is None and self.patterns:
            rset = re2.Set.SearchSet()
            for pattern in self.patterns:
                rset.Add(pattern)
            rset.Compile()
            self._set = rset
        return self._set

    def _lazy_set_match(self) -> SetMatch:
        """``match`` through the Set, which is compiled on the first value matched."""
        compiled: list[SetMatch] = []

        def match(data: bytes) -> list[int] | None:
            if not compiled:
                compiled.append(_set_matcher(self.rset))
            return compiled[0](data)

        return match

    def prepare_screen(self) -> None:
        """The literal scanners and the screen's matchers, built on the engine's first batch
        (any size): the chunk Set when the chunk patterns differ, and the Hyperscan scanner,
        which stands in for the chunk Set on ASCII chunks, and on the others too when it is
        exact there (``Scanner.unicode``), and answers each value's per-value match
        (:meth:`_exact_scan`); only eager fields get one."""
        if self._screen_ready or not self.patterns:
            return
        self._screen_ready = True
        if self.chunk_patterns != self.patterns:
            chunk_set = re2.Set.SearchSet()
            for pattern in self.chunk_patterns:
                chunk_set.Add(pattern)
            chunk_set.Compile()
            self._chunk_set = chunk_set
            self.chunk_match = _set_matcher(chunk_set)
        scanner = self.scanner = literal_scan.scanner_of(self.scan_plan()) if self._use_scanner else None
        self.ascii_chunk_match = scanner or self.chunk_match
        self.fold_wide = scanner is not None and scanner.unicode
        self.wide_chunk_match = scanner if self.fold_wide else self.chunk_match
        if scanner is not None and self.match is not None:
            self.match = self._exact_scan(scanner, self.match)

    def scan_plan(self) -> literal_scan.ScanPlan | None:
        """What this field's literal scanner is compiled from (:func:`literal_scan.plan`)."""
        if not self._planned:
            self._scan_plan, self._planned = literal_scan.plan(self.literals), True
        return self._scan_plan

    def anchored(self) -> frozenset[int]:
        """The atoms the literal scanner finds anywhere but whose pattern is anchored (or is
        no literal): a hit of one is confirmed by its own pattern (:meth:`_exact_scan`)."""
        if self._anchored is None:
            self._anchored = frozenset(
                i for i, (pattern, lit) in enumerate(zip(self.patterns, self.literals, strict=True))
                if lit is None
                or (not lit.expression and pattern != (_caseless(lit.text) if lit.caseless else _escape(lit.text)))
            )
        return self._anchored

    def _exact_scan(self, scanner: literal_scan.Scanner, set_match: SetMatch) -> SetMatch:
        """The per-value match through the literal scanner, with the Set's exact result.

        Hyperscan reads a long value ~3x faster than the Set's DFA; on short values its
        per-call cost (~2-3 us) is about the Set's on warm DFA states and less than the
        Set's on text its DFA has not seen yet (~11 us a call on the Claude tree's
        arguments, ``bench/bench_detect.py --scan-home``). Its hits are
        the Set's where the scanner is exact: a value with a long s or a Kelvin sign (RE2
        folds them to ``s``/``k``), or a non-ASCII value when a caseless atom has other
        non-ASCII cases (:attr:`literal_scan.Scanner.unicode`), goes to the Set; an
        anchored atom (``equals``, ``startswith``, ``endswith``) the scanner finds anywhere
        is confirmed by its own pattern.
        """
        anchored = self.anchored()
        exact = scanner.exact(set_match)
        if not anchored:
            return exact
        single = self.single

        def match(data: bytes) -> list[int] | None:
            found = exact(data)
            if found and not anchored.isdisjoint(found):
                found = [i for i in found if i not in anchored or single(i)(data) is not None]
            return found or None

        return match

    def opens(self, found: list[int]) -> bool:
        """Whether this field's Set result lets a selection it triggers match.

        A selection can only match when its trigger atom hit and every matcher of it on
        this field is :meth:`_Matcher.possible` with these hits (matchers on other fields
        are not looked at): when no triggered selection passes, the field makes no rule
        a candidate that could match.
        """
        return bool(self._open_rules(found))

    def opened(self, found: list[int], candidates: set[int]) -> None:
        """Add to ``candidates`` the rules with a selection whose gate these hits open."""
        candidates.update(self._open_rules(found))

    def _open_rules(self, found: list[int]) -> frozenset[int]:
        """The rules with a selection whose gate these hits open, memoised by the hit set:
        real text hits the same few common atoms again and again (``api``, ``http``), and
        walking the gates in Python was a fifth of the exact path. The memo holds at most
        :data:`OPEN_MEMO` hit sets (emptied when full)."""
        hits = frozenset(found)
        memo = self._open_memo
        rules = memo.get(hits)
        if rules is None:
            out: set[int] = set()
            gated = self.gated
            for atom in hits:
                for index, gate in gated.get(atom, ()):
                    if index in out:
                        continue
                    for m in gate:
                        if not m.possible(hits):
                            break
                    else:
                        out.add(index)
            rules = frozenset(out)
            if len(memo) >= OPEN_MEMO:
                memo.clear()
            memo[hits] = rules
        return rules

    def single(self, atom: int) -> Searcher:
        """The atom alone, compiled (only for evidence spans, after a match)."""
        rx = self._single.get(atom)
        if rx is None:
            rx = self._single[atom] = _searcher(re2.compile(self.patterns[atom]))
        return rx


def _literal_pattern(value: str, op: str, cased: bool, multi: bool = False) -> tuple[str, str, Literal]:
    """The Set pattern of a literal matcher value, its form for joined values, and the literal.

    On a list field (``multi``) the anchors are line anchors: the value holds for one item.
    """
    body = _escape(value)
    literal = Literal(value, not cased)
    if not cased:
        body = f"(?i:{body})"
    if multi:
        chunk = _literal_pattern(value, op, cased)[1]
        return chunk, chunk, literal
    if op == "equals":
        return rf"\A{body}\z", f"{_LINE_START}{body}{_LINE_END}", literal
    if op == "startswith":
        return rf"\A{body}", f"{_LINE_START}{body}", literal
    if op == "endswith":
        return rf"{body}\z", f"{body}{_LINE_END}", literal
    return body, body, literal


@functools.lru_cache(maxsize=8192)
def _escape(value: str) -> str:
    """``re2.escape`` (a Python-level wrapper), once per literal: the pack's factors repeat
    the same few hundred literals thousands of times."""
    escaped: str = re2.escape(value)
    return escaped


def _caseless(literal: str) -> str:
    return "(?i:" + _escape(literal) + ")"


def _prefilter_atoms(index: _FieldIndex, pattern: str) -> tuple[int, ...]:
    literals = required_literals(pattern)
    if literals is None:
        return ()
    atom = index.caseless_atom
    return tuple(atom(lit) for lit in sorted(literals))


def _factor_atoms(index: _FieldIndex, pattern: str) -> tuple[frozenset[int], ...]:
    atom = index.caseless_atom
    return tuple(frozenset(atom(lit) for lit in sorted(factor)) for factor in required_factors(pattern))


def _cut(value: str) -> bytes:
    """The bytes of a field value that rules look at: at most FIELD_LIMIT, UTF-8 (the
    event stage's encoding of the same string when it kept one: :mod:`telltale.utf8`).

    The UTF-8 of the first FIELD_LIMIT characters is a prefix of the whole value's, at
    least FIELD_LIMIT bytes long: both ways give the same bytes.
    """
    kept = utf8.encoded(value) if len(value) >= utf8.MIN_CHARS else None
    if kept is not None:
        return kept if len(kept) <= FIELD_LIMIT else kept[:FIELD_LIMIT]
    if len(value) > FIELD_LIMIT:
        value = value[:FIELD_LIMIT]
    data = value.encode("utf-8", "surrogatepass")
    if len(data) > FIELD_LIMIT:
        data = data[:FIELD_LIMIT]  # a cut UTF-8 sequence at the end is harmless to RE2
    return data


class _Datas(dict[int, "bytes | None"]):
    """One observation's field bytes (``None``: absent or empty), each cut on first use.

    Built empty, then ``obs``, ``kind_fields`` and ``fields`` are set (no Python-level
    ``__init__`` on the candidate path).
    """

    __slots__ = ("fields", "kind_fields", "obs")
    obs: Observation
    kind_fields: tuple[int, ...]
    fields: list[_FieldIndex | None]

    def __missing__(self, fid: int) -> bytes | None:
        data = None
        if fid in self.kind_fields and self.fields[fid] is not None:
            value: str | None = FIELD_GETTERS[fid](self.obs)
            if value:
                data = _cut(value)
        self[fid] = data
        return data


class _Hits(dict[int, frozenset[int]]):
    """One observation's Set results per field, each scanned on first use (built like _Datas)."""

    __slots__ = ("datas", "fields")
    datas: _Datas
    fields: list[_FieldIndex | None]

    def __missing__(self, fid: int) -> frozenset[int]:
        fx = self.fields[fid]
        data = self.datas[fid]
        found = None if fx is None or fx.match is None or data is None else fx.match(data)
        hits = frozenset(found) if found else _NO_HITS
        self[fid] = hits
        return hits


class _Hit(msgspec.Struct):
    rule: _Rule
    selection: tuple[_Matcher, ...]


class MatchMixin:
    """The engine's rule compilation and exact match path (one observation at a time)."""

    _fields: list[_FieldIndex | None]
    _rules: list[_Rule]
    _probes: tuple[tuple[_Probe, ...], ...]

    def _index(self, field: str) -> _FieldIndex:
        fid = FIELD_INDEX[field]
        fx = self._fields[fid]
        if fx is None:
            fx = self._fields[fid] = _FieldIndex()
        return fx

    def _compile_matcher(self, m: MatcherDef) -> _Matcher:
        fx = self._index(m.field)
        out = bare_matcher(m)
        if out.is_regex:
            # Guards only on prose fields: on the short ones the scanner paid more for them
            # than RE2 saved (docs/performance.md, session 10). A guarded regex is triggered
            # by its first guard and its factors are its guards: its required literals (the
            # weak words the guards stand in for) are not even looked for.
            prose = out.field in PROSE_FIELDS
            guarded = [
                (v, tuple(fx.guard_atom(g, not m.cased) for g in (regex_guards(v, m.cased) if prose else ())))
                for v in out.patterns
            ]
            out.regex_atoms = tuple(g[:1] if g else _prefilter_atoms(fx, v) for v, g in guarded)
            out.regex_factors = tuple(
                tuple(frozenset((a,)) for a in g) if g else _factor_atoms(fx, v) for v, g in guarded
            )
        else:
            multi = out.field in MULTI_FIELDS
            out.atoms = tuple(fx.atom(*_literal_pattern(v, m.op, m.cased, multi)) for v in m.values)
        out.seal()
        return out

    def _compile_rule(self, index: int, rule: Rule) -> _Rule:
        selections = tuple(tuple(self._compile_matcher(m) for m in sel) for sel in rule.selections)
        filters = tuple(tuple(self._compile_matcher(m) for m in sel) for sel in rule.filters)
        for position, sel in enumerate(selections):
            trigger = self._trigger(sel)
            if trigger is None:
                fx = self._fields[sel[0].field]
                assert fx is not None
                if index not in fx.residual:
                    fx.residual.append(index)
                continue
            fid, atoms = trigger
            fx = self._fields[fid]
            assert fx is not None
            on_field = tuple(i for i, m in enumerate(sel) if m.field == fid)
            for atom in atoms:
                bucket = fx.triggers.setdefault(atom, [])
                if index not in bucket:
                    bucket.append(index)
                fx.gate_refs.setdefault(atom, []).append((index, position, on_field))
        return _Rule(index, rule, selections, filters)

    def _trigger(self, sel: tuple[_Matcher, ...]) -> tuple[int, tuple[int, ...]] | None:
        """The atoms that must hit for a selection to possibly match: of each matcher's, those
        least likely to hit (:meth:`_hit_odds`), so that a selection on a written path and on
        the arguments is opened by the path's ``mcp.json``, not by the arguments' ``url``."""
        best: tuple[int, tuple[int, ...]] | None = None
        best_odds = 0.0
        for m in sel:
            if not m.is_regex:
                atoms = m.atoms[:1] if m.all else m.atoms
            elif m.all:
                with_pre = [pre for pre in m.regex_atoms if pre]
                if not with_pre:
                    continue
                atoms = min(with_pre, key=len)
            else:
                if not all(m.regex_atoms):
                    continue
                atoms = tuple(a for pre in m.regex_atoms for a in pre)
            odds = self._hit_odds(m.field, atoms)
            if best is None or odds < best_odds:
                best, best_odds = (m.field, atoms), odds
        return best

    def _hit_odds(self, field: int, atoms: tuple[int, ...]) -> float:
        """A rough weight of how often one of ``atoms`` hits: each literal counts
        ``2 ** -length`` (a three-letter word is in most long values, a twelve-letter one in
        few); a guard or an atom that is no literal counts as a literal of eight."""
        fx = self._fields[field]
        assert fx is not None
        odds = 0.0
        for atom in atoms:
            literal = fx.literals[atom]
            length = 8 if literal is None or literal.expression else min(len(literal.text), 16)
            odds += 2.0 ** -length
        return odds

    # ------------------------------------------------------------------ matching

    def _kind_probes(self, fids: tuple[int, ...]) -> tuple[_Probe, ...]:
        """The eager fields of one observation kind, in order, as :data:`_Probe` tuples."""
        out: list[_Probe] = []
        for fid in fids:
            fx = self._fields[fid]
            if fx is None or not fx.eager:
                continue
            trigger = None if fx.residual else fx.trigger_set
            out.append((FIELD_GETTERS[fid], len(out), fx.match, trigger, fx.opens, fid))
        return tuple(out)

    def _probe(self, obs: Observation, kind: int) -> _Known | None:
        """The quiet check of :meth:`evaluate`, for one observation (``None``: no candidate)."""
        for get, index, match, trigger, opens, _fid in self._probes[kind]:
            value = get(obs)
            if not value:
                continue
            data = _cut(value)
            found = None if match is None else match(data)
            if trigger is None or (found and not trigger.isdisjoint(found) and opens(found)):
                return index, data, found
        return None

    def _match(self, obs: Observation, kind: int, known: _Known) -> tuple[list[_Hit], _Datas] | None:
        """Candidates, then rules, for one observation whose quiet check failed.

        ``known`` is the first eager field (index into the kind's probes) that makes a rule
        a candidate, already cut, encoded and scanned. The eager fields before it made no
        rule a candidate, so only it and the ones after it are scanned for candidates;
        every other field value and Set result is computed when a candidate reads it.
        """
        fields = self._fields
        probes = self._probes[kind]
        datas = _Datas()
        datas.obs = obs
        datas.kind_fields = KIND_FIELDS[kind]
        datas.fields = fields
        hits = _Hits()
        hits.datas = datas
        hits.fields = fields
        # Only rules with a selection whose gate opens can match (see _FieldIndex.opens).
        candidates: set[int] = set()
        start, data, found = known
        for index in range(start, len(probes)):
            fid = probes[index][5]
            if index != start:
                later = datas[fid]
                if later is None:
                    continue
                match = probes[index][2]
                found = None if match is None else match(later)
            else:
                datas[fid] = data
            hits[fid] = frozenset(found) if found else _NO_HITS
            fx = fields[fid]
            assert fx is not None
            if fx.residual:
                candidates.update(fx.residual)
            if found:
                fx.opened(found, candidates)
        if not candidates:
            return None
        out: list[_Hit] = []
        for index in sorted(candidates):
            rule = self._rules[index]
            selection = self._first_selection(rule.selections, datas, hits)
            if selection is None:
                continue
            if rule.filters and self._first_selection(rule.filters, datas, hits) is not None:
                continue
            out.append(_Hit(rule, selection))
        return (out, datas) if out else None

    @staticmethod
    def _first_selection(
        selections: tuple[tuple[_Matcher, ...], ...], datas: _Datas, hits: _Hits
    ) -> tuple[_Matcher, ...] | None:
        for sel in selections:
            for m in sel:
                data = datas[m.field]
                if data is None or not m.test(data, hits[m.field]):
                    break
            else:
                return sel
        return None

    def match_ids(self, obs: Observation) -> list[str]:
        """Ids of every enabled rule (signals included) that matches ``obs`` on its own."""
        kind = field_kind(obs)
        known = self._probe(obs, kind)
        found = None if known is None else self._match(obs, kind, known)
        return [h.rule.id for h in found[0]] if found else []

    def _single(self, field: int, atom: int) -> Searcher:
        fx = self._fields[field]
        assert fx is not None
        return fx.single(atom)
