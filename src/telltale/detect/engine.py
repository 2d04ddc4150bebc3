"""Rule evaluation over canonical observations: the engine that ties the parts together.

One concern per module: :mod:`~telltale.detect.match` (compiled rules, the exact
per-observation path), :mod:`~telltale.detect.screen` (batch screening),
:mod:`~telltale.detect.sequences` (sequences, modifiers, windows),
:mod:`~telltale.detect.evidence` (excerpts) and :mod:`~telltale.detect.allowlist`
(named exceptions). :class:`DetectionEngine` compiles a rule set with them and runs
``evaluate``: screen the batch, match the suspects, record window entries, score,
complete sequences and apply the allowlist.

Only RE2 is used to look at transcript text (linear time on hostile input). Sequences
and co-occurrence modifiers use a per-session :class:`SessionWindow` that the pipeline
persists between scans.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from telltale.detect import cache as pack_cache
from telltale.detect.allowlist import Allowlist, load_allowlists
from telltale.detect.evidence import EVIDENCE_CACHE, EvidenceMixin, LaterEvidence
from telltale.detect.fields import FIELD_NAMES, KIND_FIELDS
from telltale.detect.ledger import DEFAULT_RISK_BANDS, digest, record, rollup_id
from telltale.detect.loader import Rule, RuleSet, load_rule_files
from telltale.detect.match import (  # noqa: F401  (internals re-exported for tests and benches)
    FIELD_LIMIT,
    MatchMixin,
    _cut,
    _Datas,
    _FieldIndex,
    _Hit,
    _Matcher,
    _public_searcher,
    _Rule,
    _searcher,
)
from telltale.detect.model import (
    WINDOW_MAX_FIRED,
    Anchor,
    Detection,
    Evidence,
    SessionWindow,
    Severity,
    WindowEntry,
    agent_version_of,
    anchor_of,
    severity_for,
)
from telltale.detect.screen import CHUNK_VALUE_CHARS, ScreenMixin  # noqa: F401
from telltale.detect.sequences import SequenceMixin
from telltale.detect.snapshot import compile_rules
from telltale.digest import blake2b
from telltale.model import Family, Observation

if TYPE_CHECKING:  # the effective pack's module (tuning, YAML) is not needed to build from the shipped pack
    from telltale.detect.pack import EffectivePack

__all__ = ["FIELD_LIMIT", "Detection", "DetectionEngine", "Evidence", "SessionWindow"]


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


def _iso_text(seconds: float | None) -> str | None:
    """Window times (epoch seconds) back as event time text, milliseconds, UTC."""
    if seconds is None:
        return None
    moment = _dt.datetime.fromtimestamp(seconds, tz=_dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def detection_id(session_key: str, rule_id: str, first_observation_id: str) -> str:
    """Deterministic id: the same match in a growing session always gets the same id."""
    digest = blake2b(digest_size=16)
    for part in (session_key, rule_id, first_observation_id):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x1f")
    return digest.hexdigest()


_SESSION = attrgetter("client", "session_id")
#: Sessions whose context (agent version, model, provider) the engine remembers between
#: batches before they have a window.
CONTEXT_SESSIONS = 4_096


class DetectionEngine(MatchMixin, ScreenMixin, SequenceMixin, EvidenceMixin):
    """Evaluates rules over observations; see docs/detection.md for the rule language."""

    def __init__(
        self,
        ruleset: RuleSet,
        allowlist: Allowlist | None = None,
        *,
        risk_bands: Mapping[str, int] | None = None,
        pinned: Mapping[str, Severity] | None = None,
    ) -> None:
        ruleset.raise_for_errors()
        #: Severities fixed by overrides (rule or sequence id -> severity, whatever the score).
        self._pinned: dict[str, Severity] = dict(pinned or {})
        #: Session risk bands (lower bound of each severity, in ledger points).
        self.risk_bands = dict(risk_bands or DEFAULT_RISK_BANDS)
        self._titles = {r.spec.id: r.spec.title for r in ruleset.rules}
        self._titles.update((s.spec.id, s.spec.title) for s in ruleset.sequences)
        self.ruleset = ruleset
        self.allowlist = allowlist or Allowlist()
        self._fields: list[_FieldIndex | None] = [None] * len(FIELD_NAMES)
        self._rules: list[_Rule] = []
        enabled = [r for r in ruleset.rules if r.spec.enabled]
        compile_rules(self, enabled)  # from the rule-pack cache when it holds them
        self._rules_by_id: dict[str, _Rule] = {r.id: r for r in self._rules}
        for fx in self._fields:
            if fx is not None:
                fx.compile()
        self._compile_sequences(ruleset, enabled)
        self.rule_count = len(self._rules) + len(self._sequences)
        #: Per observation kind (fields.KIND_FIELDS): the eager fields evaluate checks.
        self._probes = tuple(self._kind_probes(fids) for fids in KIND_FIELDS)
        self._probed = bytes(1 if probes else 0 for probes in self._probes)
        #: The literal scanners and screen matchers are built on the first batch, through this cache.
        self._pack_cache = pack_cache.current()
        self._screen_ready = False
        #: Session key -> ``[agent version, model, provider]`` last seen (bounded, oldest dropped).
        self._contexts: dict[str, list[str | None]] = {}

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

    @classmethod
    def from_pack(cls, pack: EffectivePack) -> DetectionEngine:
        """The engine of an effective pack (rules, tuning, allowlists); raises ``ConfigError``."""
        pack.raise_for_errors()
        allowlist = load_allowlists([path for path, _ in pack.inputs.allowlist_files])
        return cls(pack.ruleset, allowlist, risk_bands=pack.risk_bands, pinned=pack.pinned)

    def prepare(self) -> DetectionEngine:
        """Ready as built (the pipeline's hook for a detector built on first use)."""
        return self

    @property
    def empty(self) -> bool:
        """No enabled rule: nothing can ever be detected (``--no-default-rules`` alone)."""
        return not self._rules

    # ------------------------------------------------------------------ evaluation

    def decode_window(self, data: bytes) -> SessionWindow:
        """Pipeline hook: a stored window (malformed data gives a fresh one)."""
        return SessionWindow.decode(data)

    def detection_document(
        self, detection: Detection, base: dict[str, Any], content: str = "redacted"
    ) -> dict[str, Any]:
        """Pipeline hook: the redacted event document (built, and redacted, in telltale.events)."""
        from telltale.events.detection import detection_event

        return detection_event(detection, base, content)

    def evaluate(
        self, observations: Sequence[Observation], windows: MutableMapping[str, SessionWindow]
    ) -> list[Detection]:
        """Detections for ``observations`` (native order per session).

        ``windows`` maps ``"client:session_id"`` to that session's window; missing ones are
        created when a session first matches something. Observations without a session id
        are matched by single-observation rules only.
        """
        out: list[Detection] = []
        cache: dict[tuple[str, str], LaterEvidence] = {}
        wheres: dict[str, Anchor] = {}
        self._learn_context(observations, windows)
        kinds, suspects = self._suspects(observations)
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
            # Every window of this batch's sessions is in ``tracked`` (found at the start or
            # made below): a tuple look-up, not a key string built for every suspect.
            window = tracked.get((obs.client, sid)) if tracked and sid is not None else None
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
            self._detect(obs, matched[0], matched[1], window, out, cache, wheres)
        return out

    def _learn_context(
        self, observations: Sequence[Observation], windows: MutableMapping[str, SessionWindow]
    ) -> None:
        """Remember each session's agent version, model and provider: some agents write
        them once (a session header), not on the tool calls that alerts anchor on."""
        contexts = self._contexts
        session_family = Family.SESSION
        last: tuple[str, str, dict[str, str], str | None, str | None] | None = None
        for obs in observations:
            if obs.session_id is None or (
                obs.family is not session_family and obs.model is None and obs.provider is None
            ):
                continue
            # The same session, attributes (the version is one), model and provider as the
            # observation before: nothing to learn (a batch is mostly one session's run of
            # one model).
            seen = (obs.client, obs.session_id, obs.attributes, obs.model, obs.provider)
            if seen == last:
                continue
            last = seen
            version = agent_version_of(obs)
            key = f"{obs.client}:{obs.session_id}"
            ctx = contexts.get(key)
            if ctx is None:
                window = windows.get(key)
                ctx = list(window.context) if window is not None and len(window.context) == 3 else [None] * 3
                if len(contexts) >= CONTEXT_SESSIONS:
                    del contexts[next(iter(contexts))]
                contexts[key] = ctx
            if version:
                ctx[0] = version
            if obs.model:
                ctx[1] = obs.model
            if obs.provider:
                ctx[2] = obs.provider
            window = windows.get(key)
            if window is not None and window.context != ctx:
                window.context = list(ctx)

    def _detect(
        self,
        obs: Observation,
        hits: list[_Hit],
        datas: _Datas,
        window: SessionWindow | None,
        out: list[Detection],
        cache: dict[tuple[str, str], LaterEvidence],
        wheres: dict[str, Anchor],
    ) -> None:
        at = _iso_seconds(obs.occurred_at)
        session_key = f"{obs.client}:{obs.session_id or ''}"
        context = self._contexts.get(session_key) if obs.session_id is not None else None
        if context is None and window is not None and len(window.context) == 3:
            context = window.context
        if window is not None and context is not None and window.context != context:
            window.context = list(context)
        anchor = anchor_of(obs, context)
        if len(wheres) < EVIDENCE_CACHE:
            wheres[obs.observation_id] = anchor
        matched_here = {h.rule.id for h in hits}
        # Evidence (an excerpt around a match: a search again) for alerts now; for a window
        # entry only when a sequence completes in this call and reads it; for a signal
        # nobody remembers, never.
        evidence = {h.rule.id: self._evidence(obs, h, datas) for h in hits if not h.rule.rule.spec.signal}
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
                        made = evidence.get(h.rule.id)
                        cache[(obs.observation_id, h.rule.id)] = (
                            LaterEvidence.made(made) if made is not None else self._later_evidence(obs, h, datas)
                        )
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
                severity=self._pinned.get(spec.id) or severity_for(score),
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
                sigma=h.rule.rule.sigma,
                where=[anchor],
                trigger=anchor,
                first_seen=obs.occurred_at,
                last_seen=obs.occurred_at,
            )
            det = self._allow(det)
            if window is not None:
                record(window, det)  # a later occurrence in the session becomes a repeat
            out.append(det)
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
                    det = self._sequence_detection(seq, chain, det_id, obs, cache, window, at)
                    det.where = [wheres.get(a) or Anchor(observation_id=a) for a in det.anchors]
                    det.trigger = anchor
                    det.first_seen = _iso_text(chain[0].at)
                    det.last_seen = obs.occurred_at
                    if seq.id in self._pinned:
                        det.severity = self._pinned[seq.id]
                    det = self._allow(det)
                    record(window, det)
                    out.append(det)

    def rollups(self, windows: Mapping[str, SessionWindow], observed_at: str) -> list[dict[str, Any]]:
        """A ``session_risk_summary`` for each session whose risk changed since its last one
        (marked in the window, which the pipeline commits with the events)."""
        from telltale.events.risk import session_risk_event

        out: list[dict[str, Any]] = []
        for key, window in windows.items():
            if not any(entry.points > 0 for entry in window.ledger):
                continue  # nothing, or only allowlisted alerts: no risk to report
            current = digest(window.ledger)
            if current == window.reported:
                continue
            window.reported = current
            client, _, session_id = key.partition(":")
            out.append(
                session_risk_event(
                    event_id=rollup_id(key, current), client=client, session_id=session_id, ledger=window.ledger,
                    titles=self._titles, bands=self.risk_bands, observed_at=observed_at,
                )
            )
        return out

    def _allow(self, det: Detection) -> Detection:
        return self.allowlist.apply(det)

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

