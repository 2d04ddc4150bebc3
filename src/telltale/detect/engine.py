"""Rule evaluation over canonical observations: prefilter, match, sequences, scoring.

Matching path, per observation:

1. each present rule field (see :mod:`telltale.detect.fields`) is cut to
   :data:`FIELD_LIMIT` characters and encoded once;
2. one RE2 Set per field reports which literal atoms occur: the literal values of
   ``contains``/``startswith``/``endswith``/equality matchers, and the required
   literals extracted from each regex (:mod:`telltale.detect.literals`);
3. only rules with a triggered atom are evaluated; their regexes run on RE2.

Only RE2 is used to look at transcript text (linear time on hostile input). Sequences
and co-occurrence modifiers use a per-session :class:`SessionWindow` that the pipeline
persists between scans.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from bisect import bisect_right
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress
from operator import attrgetter, not_
from typing import Any, cast

import re2

from telltale.detect import literal_scan
from telltale.detect.allowlist import Allowlist, load_allowlists
from telltale.detect.fields import FIELD_GETTERS, FIELD_INDEX, FIELD_NAMES, KIND_FIELDS, MULTI_FIELDS, field_kind
from telltale.detect.literal_scan import Literal
from telltale.detect.literals import required_factors, required_literals
from telltale.detect.loader import (
    DEFAULT_WITHIN_STEPS,
    MatcherDef,
    Rule,
    RuleSet,
    compile_rule_regex,
    load_rule_files,
    resolve_selector,
)
from telltale.detect.model import (
    WINDOW_MAX_ENTRIES,
    WINDOW_MAX_FIRED,
    Detection,
    Evidence,
    SessionWindow,
    WindowEntry,
    severity_for,
)
from telltale.model import Observation

__all__ = ["FIELD_LIMIT", "Detection", "DetectionEngine", "Evidence", "SessionWindow"]

#: Bytes (UTF-8) of one field value that rules look at (transcripts are untrusted input).
FIELD_LIMIT = 65_536
#: Bytes of context kept on each side of a match in an evidence excerpt.
EVIDENCE_CONTEXT = 160
#: Bytes of the match itself kept in an evidence excerpt.
EVIDENCE_MATCH = 512
#: Field values up to this many bytes are kept whole as evidence.
EVIDENCE_WHOLE = 512
#: Step evidence kept per ``evaluate`` call for sequence detections.
EVIDENCE_CACHE = 4_096

#: Values up to this many characters are screened joined (never over FIELD_LIMIT bytes).
CHUNK_VALUE_CHARS = FIELD_LIMIT // 4
#: Characters of joined values scanned in one Set match at most.
CHUNK_CHARS = 262_144
#: Values joined in one Set match at most, and at first.
CHUNK_MAX_VALUES = 256
CHUNK_FIRST_VALUES = 16

_NO_HITS: frozenset[int] = frozenset()
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
        "all", "atom_set", "atoms", "checks", "field", "is_regex", "key", "regex_atoms", "regex_factors", "regexes",
        "searchers",
    )

    def __init__(self, field: int, key: str) -> None:
        self.field = field
        self.key = key
        self.all = False
        self.is_regex = False
        self.atoms: tuple[int, ...] = ()
        self.atom_set: frozenset[int] = frozenset()
        self.regexes: tuple[Any, ...] = ()
        self.searchers: tuple[Searcher, ...] = ()
        # Per regex: the atoms one of which must hit for it to possibly match (or () = none).
        self.regex_atoms: tuple[tuple[int, ...], ...] = ()
        # Per regex: atom sets of which each must have a hit for it to possibly match
        # (literals.required_factors; the first is regex_atoms' set when there is one).
        self.regex_factors: tuple[tuple[frozenset[int], ...], ...] = ()
        #: Per regex: (searcher, its factors); see :meth:`seal`.
        self.checks: tuple[tuple[Searcher, tuple[frozenset[int], ...]], ...] = ()

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


@dataclass(slots=True)
class _Rule:
    index: int
    rule: Rule
    selections: tuple[tuple[_Matcher, ...], ...]
    filters: tuple[tuple[_Matcher, ...], ...]
    #: ``rule.spec.id`` (read for every hit).
    id: str = ""

    def __post_init__(self) -> None:
        self.id = self.rule.spec.id


@dataclass(frozen=True, slots=True)
class _Sequence:
    id: str
    steps: tuple[frozenset[str], ...]
    max_steps: int
    max_seconds: float | None
    spec: Any
    #: ``steps[:-1]``: what must already be in the window when the last step matches.
    earlier: tuple[frozenset[str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "earlier", self.steps[:-1])


@dataclass(frozen=True, slots=True)
class _Modifier:
    id: str
    when: frozenset[str]
    with_: frozenset[str]
    scope: str
    max_steps: int
    max_seconds: float | None
    score: int


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
        self.set: Any = None
        self.match: Callable[[bytes], list[int] | None] | None = None
        #: The Set of ``chunk_patterns`` (same atom indices); ``match`` when they are equal.
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
        #: Trigger atom -> this field's matchers of each selection it triggers (see :meth:`opens`).
        self.gates: dict[int, list[tuple[_Matcher, ...]]] = {}
        #: The keys of ``triggers``, as a set (set after ``compile``).
        self.trigger_set: frozenset[int] = frozenset()
        #: Trigger atom -> (rule index, gate) of each selection it triggers (see :meth:`opened`).
        self.gated: dict[int, list[tuple[int, tuple[_Matcher, ...]]]] = {}
        self._single: dict[int, Searcher] = {}
        self._chunk_set: Any = None

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

    def compile(self) -> None:
        # A field whose only selections are residual has no atoms but must still be
        # looked at: eagerness does not depend on having a Set.
        self.eager = bool(self.triggers or self.residual)
        if not self.patterns:
            return
        rset = re2.Set.SearchSet()
        for pattern in self.patterns:
            rset.Add(pattern)
        rset.Compile()
        self.set = rset
        self.match = _set_matcher(rset)
        self.chunk_match = self.match
        self.trigger_set = frozenset(self.triggers)
        if self.chunk_patterns != self.patterns:
            chunk_set = re2.Set.SearchSet()
            for pattern in self.chunk_patterns:
                chunk_set.Add(pattern)
            chunk_set.Compile()
            self._chunk_set = chunk_set
            self.chunk_match = _set_matcher(chunk_set)
        # The Hyperscan scanner stands in for the chunk Set on ASCII chunks, and on the
        # others too when it is exact there (``Scanner.unicode``); only eager fields are screened.
        scanner = self.scanner = literal_scan.scanner(self.literals) if self.eager else None
        self.ascii_chunk_match = scanner or self.chunk_match
        self.fold_wide = scanner is not None and scanner.unicode
        self.wide_chunk_match = scanner if self.fold_wide else self.chunk_match

    def opens(self, found: list[int]) -> bool:
        """Whether this field's Set result lets a selection it triggers match.

        A selection can only match when its trigger atom hit and every matcher of it on
        this field is :meth:`_Matcher.possible` with these hits (matchers on other fields
        are not looked at): when no triggered selection passes, the field makes no rule
        a candidate that could match.
        """
        hits = frozenset(found)
        gates = self.gates
        for atom in found:
            for gate in gates.get(atom, ()):
                for m in gate:
                    if not m.possible(hits):
                        break
                else:
                    return True
        return False

    def opened(self, found: list[int], candidates: set[int]) -> None:
        """Add to ``candidates`` the rules with a selection whose gate these hits open."""
        hits = frozenset(found)
        gated = self.gated
        for atom in found:
            for index, gate in gated.get(atom, ()):
                if index in candidates:
                    continue
                for m in gate:
                    if not m.possible(hits):
                        break
                else:
                    candidates.add(index)

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
    body: str = re2.escape(value)
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


def _prefilter_atoms(index: _FieldIndex, pattern: str) -> tuple[int, ...]:
    literals = required_literals(pattern)
    if literals is None:
        return ()
    return tuple(index.atom("(?i:" + re2.escape(lit) + ")", None, Literal(lit, True)) for lit in sorted(literals))


def _factor_atoms(index: _FieldIndex, pattern: str) -> tuple[frozenset[int], ...]:
    return tuple(
        frozenset(index.atom("(?i:" + re2.escape(lit) + ")", None, Literal(lit, True)) for lit in sorted(factor))
        for factor in required_factors(pattern)
    )


def _iso_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        moment = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return moment.timestamp()


def detection_id(session_key: str, rule_id: str, first_observation_id: str) -> str:
    """Deterministic id: the same match in a growing session always gets the same id."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (session_key, rule_id, first_observation_id):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x1f")
    return digest.hexdigest()


def _excerpt(data: bytes, start: int, end: int) -> str:
    """A bounded excerpt around ``data[start:end]``, cut at whitespace so no token is split."""
    if len(data) <= EVIDENCE_WHOLE:
        return data.decode("utf-8", "replace")
    end = min(end, start + EVIDENCE_MATCH)
    lo = max(0, start - EVIDENCE_CONTEXT)
    hi = min(len(data), end + EVIDENCE_CONTEXT)
    if lo > 0:
        cut = -1
        for ws in (b" ", b"\n", b"\t"):
            pos = data.find(ws, lo, start)
            if pos >= 0 and (cut < 0 or pos < cut):
                cut = pos
        lo = cut + 1 if cut >= 0 else start
    if hi < len(data):
        cut = max(data.rfind(ws, end, hi) for ws in (b" ", b"\n", b"\t"))
        hi = cut if cut >= 0 else end
    return data[lo:hi].decode("utf-8", "ignore")


def _cut(value: str) -> bytes:
    """The bytes of a field value that rules look at: at most FIELD_LIMIT, UTF-8."""
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


_SESSION = attrgetter("client", "session_id")


def _queue(pending: dict[int, tuple[list[int], list[str]]], key: int, indices: list[int], texts: list[str]) -> None:
    """Add values to a field's screening queue (the lists given are kept, then extended)."""
    if not indices:
        return
    queue = pending.get(key)
    if queue is None:
        pending[key] = (indices, texts)
    else:
        queue[0].extend(indices)
        queue[1].extend(texts)


@dataclass(slots=True)
class _Hit:
    rule: _Rule
    selection: tuple[_Matcher, ...]


class DetectionEngine:
    """Evaluates rules over observations; see docs/detection.md for the rule language."""

    def __init__(self, ruleset: RuleSet, allowlist: Allowlist | None = None) -> None:
        ruleset.raise_for_errors()
        self.ruleset = ruleset
        self.allowlist = allowlist or Allowlist()
        self._fields: list[_FieldIndex | None] = [None] * len(FIELD_NAMES)
        self._rules: list[_Rule] = []
        self._rules_by_id: dict[str, _Rule] = {}
        enabled = [r for r in ruleset.rules if r.spec.enabled]
        for rule in enabled:
            compiled = self._compile_rule(len(self._rules), rule)
            self._rules.append(compiled)
            self._rules_by_id[rule.spec.id] = compiled
        for fx in self._fields:
            if fx is not None:
                fx.compile()
        self._sequences: list[_Sequence] = []
        self._seq_by_last: dict[str, list[_Sequence]] = {}
        for seq in ruleset.sequences:
            if not seq.spec.enabled:
                continue
            steps = tuple(
                frozenset(rid for sel in step for rid in resolve_selector(sel, enabled)) for step in seq.spec.steps
            )
            if not all(steps):
                continue  # a step whose rules are all disabled can never complete
            compiled_seq = _Sequence(
                seq.spec.id,
                steps,
                seq.spec.within.steps or DEFAULT_WITHIN_STEPS,
                seq.spec.within.seconds,
                seq.spec,
            )
            self._sequences.append(compiled_seq)
            for rid in steps[-1]:
                self._seq_by_last.setdefault(rid, []).append(compiled_seq)
        seq_ids = {s.id for s in self._sequences}
        self._modifiers_by_when: dict[str, list[_Modifier]] = {}
        horizon = max([s.max_steps for s in self._sequences] + [1])
        for mod in ruleset.modifiers:
            if not mod.spec.enabled:
                continue
            when = {w for sel in mod.spec.when for w in resolve_selector(sel, enabled)}
            when |= {sel for sel in mod.spec.when if sel in seq_ids}
            with_ = frozenset(w for sel in mod.spec.with_ for w in resolve_selector(sel, enabled))
            compiled_mod = _Modifier(
                mod.spec.id,
                frozenset(when),
                with_,
                mod.spec.scope,
                mod.spec.within.steps or DEFAULT_WITHIN_STEPS,
                mod.spec.within.seconds,
                mod.spec.score,
            )
            if compiled_mod.scope == "session":
                horizon = max(horizon, compiled_mod.max_steps)
            for w in when:
                self._modifiers_by_when.setdefault(w, []).append(compiled_mod)
        #: Entries older than this many session steps can no longer complete anything.
        self._horizon = horizon
        timed = [s.max_seconds for s in self._sequences] + [
            m.max_seconds for mods in self._modifiers_by_when.values() for m in mods if m.scope == "session"
        ]
        #: ... nor entries older than this many seconds, when every bound has a time limit.
        self._horizon_seconds: float | None = (
            max(t for t in timed if t is not None) if timed and all(t is not None for t in timed) else None
        )
        #: Rules whose matches are worth remembering in a session window.
        self._remembered = frozenset(
            {rid for s in self._sequences for step in s.steps for rid in step}
            | {rid for mods in self._modifiers_by_when.values() for m in mods
               if m.scope == "session" for rid in m.with_}
        )
        self.rule_count = len(self._rules) + len(self._sequences)
        #: Per observation kind (fields.KIND_FIELDS): the eager fields evaluate checks.
        self._probes = tuple(self._kind_probes(fids) for fids in KIND_FIELDS)

    # ------------------------------------------------------------------ construction

    @classmethod
    def load(
        cls,
        rule_files: Sequence[str] = (),
        *,
        include_default: bool = True,
        allowlist_files: Sequence[str] = (),
    ) -> DetectionEngine:
        """Build an engine from the default pack and/or rule files; raises ``ConfigError``."""
        ruleset = load_rule_files(rule_files, include_default=include_default)
        ruleset.raise_for_errors()
        return cls(ruleset, load_allowlists(allowlist_files))

    def prepare(self) -> DetectionEngine:
        """Ready as built (the pipeline's hook for a detector built on first use)."""
        return self

    @property
    def empty(self) -> bool:
        """No enabled rule: nothing can ever be detected (``--no-default-rules`` alone)."""
        return not self._rules

    def _index(self, field: str) -> _FieldIndex:
        fid = FIELD_INDEX[field]
        fx = self._fields[fid]
        if fx is None:
            fx = self._fields[fid] = _FieldIndex()
        return fx

    def _compile_matcher(self, m: MatcherDef) -> _Matcher:
        fx = self._index(m.field)
        out = _Matcher(FIELD_INDEX[m.field], m.key)
        out.all = m.all
        multi = out.field in MULTI_FIELDS
        if m.op == "re":
            # On a list field ``^``/``$`` are line anchors: a regex holds for one item.
            values = [f"(?m){v}" for v in m.values] if multi else list(m.values)
            out.is_regex = True
            out.regexes = tuple(compile_rule_regex(v, m.cased) for v in values)
            out.searchers = tuple(_searcher(rx) for rx in out.regexes)
            out.regex_atoms = tuple(_prefilter_atoms(fx, v) for v in values)
            out.regex_factors = tuple(_factor_atoms(fx, v) for v in values)
        else:
            out.atoms = tuple(fx.atom(*_literal_pattern(v, m.op, m.cased, multi)) for v in m.values)
        out.seal()
        return out

    def _compile_rule(self, index: int, rule: Rule) -> _Rule:
        selections = tuple(tuple(self._compile_matcher(m) for m in sel) for sel in rule.selections)
        filters = tuple(tuple(self._compile_matcher(m) for m in sel) for sel in rule.filters)
        for sel in selections:
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
            gate = tuple(m for m in sel if m.field == fid)
            for atom in atoms:
                bucket = fx.triggers.setdefault(atom, [])
                if index not in bucket:
                    bucket.append(index)
                fx.gates.setdefault(atom, []).append(gate)
                fx.gated.setdefault(atom, []).append((index, gate))
        return _Rule(index, rule, selections, filters)

    def _trigger(self, sel: tuple[_Matcher, ...]) -> tuple[int, tuple[int, ...]] | None:
        """The atoms that must hit for a selection to possibly match (fewest, strongest)."""
        best: tuple[int, tuple[int, ...]] | None = None
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
            if best is None or len(atoms) < len(best[1]):
                best = (m.field, atoms)
        return best

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

    def _evidence(self, obs: Observation, hit: _Hit, datas: _Datas) -> list[Evidence]:
        out: list[Evidence] = []
        seen: set[int] = set()
        for m in hit.selection:
            if m.field in seen:
                continue
            data = datas[m.field]
            if data is None:
                continue
            seen.add(m.field)
            span = self._span(m, data)
            out.append(
                Evidence(
                    field=FIELD_NAMES[m.field],
                    value=_excerpt(data, *span),
                    observation_id=obs.observation_id,
                    rule_id=hit.rule.id,
                )
            )
        return out

    def _span(self, m: _Matcher, data: bytes) -> tuple[int, int]:
        searchers = m.searchers if m.is_regex else tuple(self._single(m.field, a) for a in m.atoms)
        for search in searchers:
            span = search(data)
            if span is not None:
                return span
        return 0, 0

    def _single(self, field: int, atom: int) -> Searcher:
        fx = self._fields[field]
        assert fx is not None
        return fx.single(atom)

    # ------------------------------------------------------------------ evaluation

    def decode_window(self, data: bytes) -> SessionWindow:
        """Pipeline hook: a stored window (malformed data gives a fresh one)."""
        return SessionWindow.decode(data)

    def detection_document(self, detection: Detection, base: dict[str, Any]) -> dict[str, Any]:
        """Pipeline hook: the redacted event document (built, and redacted, in telltale.events)."""
        from telltale.events.detection import detection_event

        return detection_event(detection, base)

    def evaluate(
        self, observations: Sequence[Observation], windows: MutableMapping[str, SessionWindow]
    ) -> list[Detection]:
        """Detections for ``observations`` (native order per session).

        ``windows`` maps ``"client:session_id"`` to that session's window; missing ones are
        created when a session first matches something. Observations without a session id
        are matched by single-observation rules only.
        """
        out: list[Detection] = []
        cache: dict[tuple[str, str], list[Evidence]] = {}
        kinds, suspects = self._screen(observations)
        # Windows of this batch's sessions, by (client, session id): quiet observations
        # only advance these, so each run of them between two suspects is counted at once.
        sessions: list[tuple[str, str | None]] = []
        distinct: set[tuple[str, str | None]] = set()
        tracked: dict[tuple[str, str | None], SessionWindow] = {}
        if windows:
            sessions = list(map(_SESSION, observations))
            distinct = set(sessions)
            for key in distinct:
                if key[1] is not None:
                    found = windows.get(f"{key[0]}:{key[1]}")
                    if found is not None:
                        tracked[key] = found
        count = len(observations)
        position = 0
        while position < count:
            suspect = suspects.find(1, position)
            end = count if suspect < 0 else suspect
            if tracked and position < end:
                run = sessions[position:end]
                for key, known_window in tracked.items():
                    known_window.position += run.count(key)
            if suspect < 0:
                break
            position = suspect + 1
            obs = observations[suspect]
            sid = obs.session_id
            window: SessionWindow | None = None
            if sid is not None:
                window = windows.get(f"{obs.client}:{sid}")
                if window is not None:
                    window.position += 1
            kind = kinds[suspect]
            known = self._probe(obs, kind)
            if known is None:
                continue
            matched = self._match(obs, kind, known)
            if matched is None:
                continue
            if window is None and sid is not None:
                name = f"{obs.client}:{sid}"
                window = windows[name] = SessionWindow(position=1)
                if not sessions:
                    sessions = list(map(_SESSION, observations))
                    distinct = set(sessions)
                for key in distinct:  # every session of the batch that names this window
                    if key[1] is not None and f"{key[0]}:{key[1]}" == name:
                        tracked[key] = window
            self._detect(obs, matched[0], matched[1], window, out, cache)
        return out

    def _screen(self, observations: Sequence[Observation]) -> tuple[list[int], bytearray]:
        """Kind of each observation, and which ones may make a rule a candidate.

        An observation is *quiet* when none of its eager fields makes a rule a candidate
        (:meth:`_probe` returns ``None``); nearly all are. Instead of one Set match per
        value (its fixed cost dominates short values), the values of one field across
        the batch are joined by newlines and scanned together with the field's chunk Set.
        Every atom that hits in one value also hits in the joined text, and a gate
        (:meth:`_FieldIndex.opens`) that stays closed for the joined hits is closed for
        each value's hits, so a quiet chunk proves every value in it quiet. A chunk that
        is not quiet is narrowed down to the values that are not (``_screen_field``);
        their observations, those with values too long to join and those with a field
        with residual selections are *suspects*, which ``evaluate`` checks one by one
        with the exact per-value path. Fields are screened shortest-total first: a
        suspect found in a cheap field (a URL) keeps its other values out of later chunks.
        The values are gathered with C-level ``map``/``compress``, not a Python loop.
        """
        kinds = list(map(field_kind, observations))
        suspects = bytearray(len(observations))
        probes = self._probes
        groups: dict[int, list[int]] = {}
        for i, kind in enumerate(kinds):
            group = groups.get(kind)
            if group is None:
                groups[kind] = [i]
            else:
                group.append(i)
        pending: dict[int, tuple[list[int], list[str]]] = {}
        fields = self._fields
        for kind, indices in groups.items():
            if not probes[kind]:
                continue
            objs = list(map(observations.__getitem__, indices))
            for get, _index, _match, trigger, _opens, fid in probes[kind]:
                values = list(map(get, objs))
                texts: list[str]
                if all(values):
                    which, texts = indices.copy(), cast("list[str]", values)
                else:
                    which = list(compress(indices, values))
                    if not which:
                        continue
                    texts = list(filter(None, values))
                if trigger is None:
                    for i in which:
                        suspects[i] = 1
                    continue
                fx = fields[fid]
                assert fx is not None
                if max(map(len, texts)) > CHUNK_VALUE_CHARS:
                    short = list(map(CHUNK_VALUE_CHARS.__ge__, map(len, texts)))
                    if fx.scanner is not None:
                        # An ASCII value joins in its cut form (its characters are its bytes):
                        # the literal scanner reads a long value ~3x faster than the Set does.
                        for j in compress(range(len(texts)), map(not_, short)):
                            value = texts[j]
                            if value.isascii():
                                texts[j] = value[:FIELD_LIMIT]
                                short[j] = True
                    for i in compress(which, map(not_, short)):
                        suspects[i] = 1
                    which = list(compress(which, short))
                    texts = list(compress(texts, short))
                # ASCII values are joined apart: one non-ASCII value would make the
                # whole joined text take the slow path of the UTF-8 encoder, and ASCII
                # chunks are scanned by the literal scanner (see literal_scan).
                if all(map(str.isascii, texts)):
                    _queue(pending, fid, which, texts)
                else:
                    ascii_ = list(map(str.isascii, texts))
                    _queue(pending, fid, list(compress(which, ascii_)), list(compress(texts, ascii_)))
                    wide = list(map(not_, ascii_))
                    wide_texts = list(compress(texts, wide))
                    if fx.fold_wide:
                        wide_texts = list(map(literal_scan.fold, wide_texts))
                    _queue(pending, -1 - fid, list(compress(which, wide)), wide_texts)
        ends = {key: list(accumulate(map(len, queue[1]))) for key, queue in pending.items()}
        for key in sorted(pending, key=lambda k: ends[k][-1]):
            indices, texts = pending[key]
            if suspects.find(1) >= 0 and any(map(suspects.__getitem__, indices)):
                keep = list(map(not_, map(suspects.__getitem__, indices)))
                indices = list(compress(indices, keep))
                if not indices:
                    continue
                texts = list(compress(texts, keep))
                ends[key] = list(accumulate(map(len, texts)))
            fx = fields[key if key >= 0 else -1 - key]
            assert fx is not None
            match = fx.ascii_chunk_match if key >= 0 else fx.wide_chunk_match
            assert match is not None
            self._screen_field(fx, match, indices, texts, ends[key], suspects)
        return kinds, suspects

    @staticmethod
    def _screen_field(
        fx: _FieldIndex,
        match: SetMatch,
        indices: list[int],
        values: list[str],
        ends: list[int],
        suspects: bytearray,
    ) -> None:
        """Mark the observations of ``indices`` whose value of this field may not be quiet.

        Values are scanned in chunks; a chunk that is not quiet is halved and each half
        scanned again, down to single values, which are marked. A lone hit among ``n``
        values costs about ``2 log2 n`` Set matches over twice the chunk's bytes, instead
        of every value's observation going through the per-value path. The chunk size
        adapts: it halves after a chunk that was not quiet and doubles after a quiet one.
        """
        trigger = fx.trigger_set
        opens = fx.opens
        count = len(values)
        start = 0
        want = CHUNK_FIRST_VALUES
        while start < count:
            before = ends[start - 1] if start else 0
            end = min(bisect_right(ends, before + CHUNK_CHARS, start), start + want, count)
            if end == start:
                end = start + 1
            quiet = True
            parts = [(start, end)]
            while parts:
                lo, hi = parts.pop()
                found = match("\n".join(values[lo:hi]).encode("utf-8", "surrogatepass"))
                if not found or trigger.isdisjoint(found) or not opens(found):
                    continue
                quiet = False
                if hi - lo == 1:
                    suspects[indices[lo]] = 1
                else:
                    mid = (lo + hi) // 2
                    parts.append((mid, hi))
                    parts.append((lo, mid))
            want = min(want * 2, CHUNK_MAX_VALUES) if quiet else max(1, want // 2)
            start = end

    def _detect(
        self,
        obs: Observation,
        hits: list[_Hit],
        datas: _Datas,
        window: SessionWindow | None,
        out: list[Detection],
        cache: dict[tuple[str, str], list[Evidence]],
    ) -> None:
        at = _iso_seconds(obs.occurred_at)
        session_key = f"{obs.client}:{obs.session_id or ''}"
        matched_here = {h.rule.id for h in hits}
        evidence = {h.rule.id: self._evidence(obs, h, datas) for h in hits}
        new_entries: dict[str, WindowEntry] = {}
        if window is not None:
            if at is not None:
                window.last_at = at
            for h in hits:
                if h.rule.id in self._remembered:
                    entry = WindowEntry(h.rule.id, obs.observation_id, window.position, at)
                    window.entries.append(entry)
                    new_entries[h.rule.id] = entry
                    if len(cache) < EVIDENCE_CACHE:
                        cache[(obs.observation_id, h.rule.id)] = evidence[h.rule.id]
            self._prune(window, at)
        for h in hits:
            spec = h.rule.rule.spec
            if spec.signal:
                continue
            score = spec.score
            rule_ids = [spec.id]
            applied: list[str] = []
            for mod in self._modifiers_by_when.get(spec.id, ()):
                partners = self._partners(mod, spec.id, matched_here, window, at, obs.observation_id)
                if partners:
                    score += mod.score
                    applied.append(mod.id)
                    rule_ids.extend(p for p in sorted(partners) if p not in rule_ids)
            det = Detection(
                detection_id=detection_id(session_key, spec.id, obs.observation_id),
                rule_id=spec.id,
                title=spec.title,
                description=spec.description,
                category=spec.category,
                categories=[spec.category],
                severity=severity_for(score),
                score=score,
                rule_ids=rule_ids,
                modifiers=applied,
                attack=list(spec.tags.attack),
                atlas=list(spec.tags.atlas),
                references=list(spec.references),
                session_id=obs.session_id,
                client=obs.client,
                source_kind=obs.source_kind,
                occurred_at=obs.occurred_at,
                anchors=[obs.observation_id],
                evidence=evidence[spec.id],
                recommendation=spec.recommendation,
                tool_name=obs.tool_name,
                source_path=obs.provenance.path,
            )
            out.append(self._allow(det))
        if window is None:
            return
        present: set[str] | None = None
        for rid, last in new_entries.items():
            for seq in self._seq_by_last.get(rid, ()):
                if present is None:
                    present = {e.rule_id for e in window.entries}
                # A step with no match at all in the window cannot be part of a chain:
                # one pass over the entries instead of a walk per sequence.
                for step in seq.earlier:
                    if present.isdisjoint(step):
                        break
                else:
                    chain = self._chain(seq, window, last)
                    if chain is None:
                        continue
                    det_id = detection_id(session_key, seq.id, chain[0].observation_id)
                    if det_id in window.fired:
                        continue
                    window.fired.append(det_id)
                    del window.fired[:-WINDOW_MAX_FIRED]
                    out.append(self._allow(self._sequence_detection(seq, chain, det_id, obs, cache, window, at)))

    def _partners(
        self,
        mod: _Modifier,
        own: str,
        matched_here: set[str],
        window: SessionWindow | None,
        at: float | None,
        observation_id: str,
    ) -> set[str]:
        found = {r for r in matched_here if r in mod.with_ and r != own}
        if mod.scope == "session" and window is not None:
            floor = window.position - mod.max_steps
            for e in reversed(window.entries):
                if e.position < floor:
                    break
                if e.rule_id == own and e.observation_id == observation_id:
                    continue
                if e.rule_id not in mod.with_:
                    continue
                if mod.max_seconds is not None and at is not None and e.at is not None and at - e.at > mod.max_seconds:
                    continue
                found.add(e.rule_id)
        return found

    def _prune(self, window: SessionWindow, at: float | None) -> None:
        floor = window.position - self._horizon
        entries = window.entries
        if entries and entries[0].position < floor:
            entries[:] = [e for e in entries if e.position >= floor]
        if at is not None and self._horizon_seconds is not None and entries:
            oldest = at - self._horizon_seconds
            if entries[0].at is not None and entries[0].at < oldest:
                entries[:] = [e for e in entries if e.at is None or e.at >= oldest]
        if len(entries) > WINDOW_MAX_ENTRIES:
            del entries[: len(entries) - WINDOW_MAX_ENTRIES]

    @staticmethod
    def _chain(seq: _Sequence, window: SessionWindow, last: WindowEntry) -> list[WindowEntry] | None:
        """Latest matches of the earlier steps, in order, within the sequence's bounds.

        Walking backwards and taking the latest admissible match of each step leaves the
        most room for the steps before it, so this finds a chain whenever one exists.
        Steps may share an observation (one command can read a secret and upload it).
        """
        floor = last.position - seq.max_steps
        chain = [last]
        used = {(last.position, last.rule_id)}
        current = last.position
        entries = window.entries
        for step in reversed(seq.steps[:-1]):
            found = None
            for e in reversed(entries):
                if e.position > current:
                    continue
                if e.position < floor:
                    break
                if e.rule_id not in step or (e.position, e.rule_id) in used:
                    continue
                if (
                    seq.max_seconds is not None
                    and last.at is not None
                    and e.at is not None
                    and last.at - e.at > seq.max_seconds
                ):
                    continue
                found = e
                break
            if found is None:
                return None
            chain.append(found)
            used.add((found.position, found.rule_id))
            current = found.position
        chain.reverse()
        return chain

    def _sequence_detection(
        self,
        seq: _Sequence,
        chain: list[WindowEntry],
        det_id: str,
        obs: Observation,
        cache: dict[tuple[str, str], list[Evidence]],
        window: SessionWindow,
        at: float | None,
    ) -> Detection:
        spec = seq.spec
        step_rules = [self._rules_by_id[e.rule_id].rule.spec for e in chain]
        rule_ids: list[str] = []
        categories = [spec.category]
        attack = list(spec.tags.attack)
        atlas = list(spec.tags.atlas)
        score = spec.score
        for rs in step_rules:
            if rs.id not in rule_ids:
                rule_ids.append(rs.id)
                score += rs.score
            for value, bucket in ((rs.category, categories),):
                if value not in bucket:
                    bucket.append(value)
            attack.extend(t for t in rs.tags.attack if t not in attack)
            atlas.extend(t for t in rs.tags.atlas if t not in atlas)
        applied: list[str] = []
        matched_ids = set(rule_ids)
        for mod in self._modifiers_by_when.get(seq.id, ()):
            partners = self._partners(mod, seq.id, matched_ids, window, at, obs.observation_id)
            if partners:
                score += mod.score
                applied.append(mod.id)
        anchors: list[str] = []
        for e in chain:
            if e.observation_id not in anchors:
                anchors.append(e.observation_id)
        # Steps matched in an earlier scan are named by anchor only: windows keep no content.
        evidence = [ev for e in chain for ev in cache.get((e.observation_id, e.rule_id), ())]
        return Detection(
            detection_id=det_id,
            rule_id=seq.id,
            title=spec.title,
            description=spec.description,
            category=spec.category,
            categories=categories,
            severity=severity_for(score),
            score=score,
            rule_ids=rule_ids,
            modifiers=applied,
            attack=attack,
            atlas=atlas,
            references=list(spec.references),
            session_id=obs.session_id,
            client=obs.client,
            source_kind=obs.source_kind,
            occurred_at=obs.occurred_at,
            anchors=anchors,
            evidence=evidence,
            recommendation=spec.recommendation,
            is_sequence=True,
            tool_name=obs.tool_name,
            source_path=obs.provenance.path,
        )

    def _allow(self, det: Detection) -> Detection:
        name = self.allowlist.match(det)
        if name is not None:
            det.suppressed_by = name
            det.severity = "informational"
        return det

    # ------------------------------------------------------------------ introspection

    def rules(self) -> Iterable[Rule]:
        return (r.rule for r in self._rules)

    def residual_rules(self) -> list[str]:
        """Ids of rules with a selection that has no literal prefilter (run on every value)."""
        out: set[str] = set()
        for fx in self._fields:
            if fx is not None:
                out.update(self._rules[i].id for i in fx.residual)
        return sorted(out)
