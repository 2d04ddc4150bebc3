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
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import re2

from telltale.detect.allowlist import Allowlist, load_allowlists
from telltale.detect.fields import FIELD_ATTRS, FIELD_INDEX, FIELD_NAMES, KIND_FIELDS, field_kind
from telltale.detect.literals import required_literals
from telltale.detect.loader import (
    DEFAULT_WITHIN_STEPS,
    MatcherDef,
    Rule,
    RuleSet,
    load_rule_files,
    re2_options,
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

_NO_HITS: frozenset[int] = frozenset()

Span = tuple[int, int]
Searcher = Callable[[bytes], "Span | None"]
SetMatch = Callable[[bytes], "list[int] | None"]
#: One eager field of an observation kind: value getter, field id, Set match (``None``:
#: no atoms) and the atoms that make a rule a candidate (``None``: every value does).
_Probe = tuple[Callable[[Observation], "str | None"], int, "SetMatch | None", "frozenset[int] | None"]
#: A field already cut, encoded and scanned: field id, bytes, Set result.
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

    __slots__ = ("all", "atoms", "field", "is_regex", "key", "regex_atoms", "regexes", "searchers")

    def __init__(self, field: int, key: str) -> None:
        self.field = field
        self.key = key
        self.all = False
        self.is_regex = False
        self.atoms: tuple[int, ...] = ()
        self.regexes: tuple[Any, ...] = ()
        self.searchers: tuple[Searcher, ...] = ()
        # Per regex: the atoms one of which must hit for it to possibly match (or () = none).
        self.regex_atoms: tuple[tuple[int, ...], ...] = ()

    def test(self, data: bytes | None, hits: frozenset[int]) -> bool:
        if data is None:
            return False
        if not self.is_regex:
            if self.all:
                return all(a in hits for a in self.atoms)
            return any(a in hits for a in self.atoms)
        results = (
            (not pre or any(a in hits for a in pre)) and search(data) is not None
            for search, pre in zip(self.searchers, self.regex_atoms, strict=True)
        )
        return all(results) if self.all else any(results)


@dataclass(slots=True)
class _Rule:
    index: int
    rule: Rule
    selections: tuple[tuple[_Matcher, ...], ...]
    filters: tuple[tuple[_Matcher, ...], ...]

    @property
    def id(self) -> str:
        return self.rule.spec.id


@dataclass(frozen=True, slots=True)
class _Sequence:
    id: str
    steps: tuple[frozenset[str], ...]
    max_steps: int
    max_seconds: float | None
    spec: Any


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
        self.by_pattern: dict[str, int] = {}
        self.triggers: dict[int, list[int]] = {}
        self.residual: list[int] = []
        self.set: Any = None
        self.match: Callable[[bytes], list[int] | None] | None = None
        #: Scanned for every observation (it can make rules candidates); else only on demand.
        self.eager = False
        self._single: dict[int, Searcher] = {}

    def atom(self, pattern: str) -> int:
        index = self.by_pattern.get(pattern)
        if index is None:
            index = len(self.patterns)
            self.patterns.append(pattern)
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

    def single(self, atom: int) -> Searcher:
        """The atom alone, compiled (only for evidence spans, after a match)."""
        rx = self._single.get(atom)
        if rx is None:
            rx = self._single[atom] = _searcher(re2.compile(self.patterns[atom]))
        return rx


def _literal_pattern(value: str, op: str, cased: bool) -> str:
    body: str = re2.escape(value)
    if not cased:
        body = f"(?i:{body})"
    if op == "equals":
        return rf"\A{body}\z"
    if op == "startswith":
        return rf"\A{body}"
    if op == "endswith":
        return rf"{body}\z"
    return body


def _prefilter_atoms(index: _FieldIndex, pattern: str) -> tuple[int, ...]:
    literals = required_literals(pattern)
    if literals is None:
        return ()
    return tuple(index.atom("(?i:" + re2.escape(lit) + ")") for lit in sorted(literals))


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
        if m.op == "re":
            out.is_regex = True
            out.regexes = tuple(re2.compile(v, re2_options(m.cased)) for v in m.values)
            out.searchers = tuple(_searcher(rx) for rx in out.regexes)
            out.regex_atoms = tuple(_prefilter_atoms(fx, v) for v in m.values)
        else:
            out.atoms = tuple(fx.atom(_literal_pattern(v, m.op, m.cased)) for v in m.values)
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
            for atom in atoms:
                bucket = fx.triggers.setdefault(atom, [])
                if index not in bucket:
                    bucket.append(index)
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
            trigger = None if fx.residual else frozenset(fx.triggers)
            out.append((attrgetter(FIELD_ATTRS[fid]), fid, fx.match, trigger))
        return tuple(out)

    def _match(
        self, obs: Observation, kind: int | None = None, known: _Known | None = None
    ) -> tuple[list[_Hit], dict[int, bytes]] | None:
        """Candidates, then rules, for one observation.

        ``known`` is a field the caller already cut, encoded and scanned (``evaluate``'s
        quiet check stops at the first field that makes a candidate); it is reused, not
        scanned again.
        """
        candidates: set[int] | None = None
        datas: dict[int, bytes] = {}
        hits: dict[int, frozenset[int]] = {}
        fields = self._fields
        for fid in KIND_FIELDS[field_kind(obs) if kind is None else kind]:
            fx = fields[fid]
            if fx is None:
                continue
            found: list[int] | None
            if known is not None and known[0] == fid:
                _, data, found = known
            else:
                value: str | None = getattr(obs, FIELD_ATTRS[fid])
                if not value:
                    continue
                if len(value) > FIELD_LIMIT:
                    value = value[:FIELD_LIMIT]
                data = value.encode("utf-8", "surrogatepass")
                if len(data) > FIELD_LIMIT:
                    data = data[:FIELD_LIMIT]  # a cut UTF-8 sequence at the end is harmless to RE2
                found = None if fx.match is None or not fx.eager else fx.match(data)
            datas[fid] = data
            if not fx.eager:
                continue
            if fx.residual:
                if candidates is None:
                    candidates = set()
                candidates.update(fx.residual)
            if not found:
                continue
            hits[fid] = frozenset(found)
            triggers = fx.triggers
            for atom in found:
                rules = triggers.get(atom)
                if rules:
                    if candidates is None:
                        candidates = set()
                    candidates.update(rules)
        if not candidates:
            return None
        # Fields that never trigger a rule are scanned only now, for the candidates.
        for fid, data in datas.items():
            fx = fields[fid]
            if fx is not None and not fx.eager and fx.match is not None:
                lazy = fx.match(data)
                if lazy:
                    hits[fid] = frozenset(lazy)
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
        selections: tuple[tuple[_Matcher, ...], ...],
        datas: dict[int, bytes],
        hits: dict[int, frozenset[int]],
    ) -> tuple[_Matcher, ...] | None:
        for sel in selections:
            if all(m.test(datas.get(m.field), hits.get(m.field, _NO_HITS)) for m in sel):
                return sel
        return None

    def match_ids(self, obs: Observation) -> list[str]:
        """Ids of every enabled rule (signals included) that matches ``obs`` on its own."""
        found = self._match(obs)
        return [h.rule.id for h in found[0]] if found else []

    def _evidence(self, obs: Observation, hit: _Hit, datas: dict[int, bytes]) -> list[Evidence]:
        out: list[Evidence] = []
        seen: set[int] = set()
        for m in hit.selection:
            if m.field in seen:
                continue
            data = datas.get(m.field)
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
        last_sid: str | None = None
        last_client = ""
        window: SessionWindow | None = None
        probes = self._probes
        kind_of = field_kind
        limit = FIELD_LIMIT
        for obs in observations:
            sid = obs.session_id
            if sid is None:
                window = None
                last_sid = None
            elif sid != last_sid or obs.client != last_client:
                last_sid = sid
                last_client = obs.client
                window = windows.get(f"{last_client}:{sid}")
            if window is not None:
                window.position += 1
            kind = kind_of(obs)
            # Quiet check: nearly every observation makes no rule a candidate. Each eager
            # field is cut, encoded and scanned once; the first one that triggers a rule
            # hands its result to the full match, which does the rest.
            known: _Known | None = None
            for get, fid, match, trigger in probes[kind]:
                value = get(obs)
                if not value:
                    continue
                if len(value) > limit:
                    value = value[:limit]
                data = value.encode("utf-8", "surrogatepass")
                if len(data) > limit:
                    data = data[:limit]
                found = None if match is None else match(data)
                if trigger is None or (found and not trigger.isdisjoint(found)):
                    known = (fid, data, found)
                    break
            if known is None:
                continue
            matched = self._match(obs, kind, known)
            if matched is None:
                continue
            if window is None and sid is not None:
                window = windows[f"{obs.client}:{sid}"] = SessionWindow(position=1)
            self._detect(obs, matched[0], matched[1], window, out, cache)
        return out

    def _detect(
        self,
        obs: Observation,
        hits: list[_Hit],
        datas: dict[int, bytes],
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
        for rid, last in new_entries.items():
            for seq in self._seq_by_last.get(rid, ()):
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
