"""Sequences and co-occurrence modifiers over per-session windows.

A sequence fires when its steps match in order within one session and its bounds; the
chain is found by walking back from the last step (:meth:`SequenceMixin._chain`).
Modifiers add score when a partner rule matched in the same observation or, with
``scope: session``, earlier in the session. Windows hold ids, positions and times only.
"""

from __future__ import annotations

from typing import Any

import msgspec

from telltale.detect.evidence import LaterEvidence
from telltale.detect.loader import DEFAULT_WITHIN_STEPS, Rule, RuleSet, resolve_selector
from telltale.detect.match import _Rule
from telltale.detect.model import WINDOW_MAX_ENTRIES, Detection, SessionWindow, WindowEntry, severity_for
from telltale.model import Observation


class _Sequence(msgspec.Struct, frozen=True):
    id: str
    steps: tuple[frozenset[str], ...]
    max_steps: int
    max_seconds: float | None
    spec: Any

    @property
    def earlier(self) -> tuple[frozenset[str], ...]:
        """``steps[:-1]``: what must already be in the window when the last step matches."""
        return self.steps[:-1]


class _Modifier(msgspec.Struct, frozen=True):
    id: str
    when: frozenset[str]
    with_: frozenset[str]
    scope: str
    max_steps: int
    max_seconds: float | None
    score: int


class SequenceMixin:
    """The engine's sequences, modifiers and window upkeep."""

    _rules: list[_Rule]
    _rules_by_id: dict[str, _Rule]

    def _compile_sequences(self, ruleset: RuleSet, enabled: list[Rule]) -> None:
        """Sequences and modifiers of ``ruleset`` over the ``enabled`` rules, and the window horizon."""
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
        cache: dict[tuple[str, str], LaterEvidence],
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
