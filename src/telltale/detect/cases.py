"""Run the positive/negative examples embedded in rule files (``tests:`` blocks).

Each case becomes synthetic observations of a fresh session (see
:func:`telltale.detect.fields.case_observation`) that go through the real engine, so a
case checks the rule exactly as a scan would evaluate it.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from telltale.detect.engine import DetectionEngine
from telltale.detect.fields import case_observation
from telltale.detect.loader import Rule, SequenceRule
from telltale.detect.model import SessionWindow, StepCase
from telltale.model import Observation

#: Start time of every case (steps default to one second apart).
CASE_EPOCH = _dt.datetime(2026, 4, 3, 0, 0, 0, tzinfo=_dt.UTC)
#: What a ``filler`` step stands for: an ordinary tool result.
FILLER_RESULT = "ok"


@dataclass(frozen=True, slots=True)
class CaseResult:
    rule_id: str
    kind: Literal["positive", "negative"]
    index: int
    passed: bool
    detail: str

    def __str__(self) -> str:
        status = "ok  " if self.passed else "FAIL"
        return f"{status} {self.rule_id} {self.kind}[{self.index}]" + (f": {self.detail}" if self.detail else "")


def _stamp(seconds: float) -> str:
    moment = CASE_EPOCH + _dt.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def case_observations(steps: Iterable[StepCase], session_id: str, client: str = "case") -> list[Observation]:
    """The observations a case describes, in order."""
    out: list[Observation] = []
    clock = 0.0
    for step in steps:
        count = step.filler or 1
        for _ in range(count):
            if step.at is not None:
                clock = step.at
            fields = {"tool_result": FILLER_RESULT} if step.filler else step.fields()
            out.append(
                case_observation(
                    fields,
                    session_id=session_id,
                    client=client,
                    sequence=len(out) + 1,
                    occurred_at=_stamp(clock),
                )
            )
            clock += 1.0
    return out


def run_rule_cases(engine: DetectionEngine, rule: Rule) -> list[CaseResult]:
    """Positive cases must match the rule (and report it unless it is a signal); negative must not."""
    spec = rule.spec
    results: list[CaseResult] = []
    for kind, cases in (("positive", spec.tests.positive), ("negative", spec.tests.negative)):
        for index, case in enumerate(cases):
            obs = case_observations([case], f"case:{spec.id}:{kind}:{index}")[0]
            matched = spec.id in engine.match_ids(obs)
            detected = any(d.rule_id == spec.id for d in engine.evaluate([obs], {}))
            if kind == "positive":
                passed = matched and (detected or spec.signal)
                detail = "" if passed else "rule did not match"
            else:
                passed = not matched
                detail = "" if passed else "rule matched"
            results.append(CaseResult(spec.id, kind, index, passed, detail))  # type: ignore[arg-type]
    return results


def run_sequence_cases(engine: DetectionEngine, seq: SequenceRule) -> list[CaseResult]:
    """Positive cases must complete the sequence within one session; negative must not."""
    spec = seq.spec
    results: list[CaseResult] = []
    for kind, cases in (("positive", spec.tests.positive), ("negative", spec.tests.negative)):
        for index, steps in enumerate(cases):
            observations = case_observations(steps, f"case:{spec.id}:{kind}:{index}")
            windows: dict[str, SessionWindow] = {}
            fired = any(d.rule_id == spec.id and d.is_sequence for d in engine.evaluate(observations, windows))
            passed = fired if kind == "positive" else not fired
            detail = "" if passed else ("sequence did not fire" if kind == "positive" else "sequence fired")
            results.append(CaseResult(spec.id, kind, index, passed, detail))  # type: ignore[arg-type]
    return results


def run_cases(engine: DetectionEngine, paths: Iterable[str] | None = None) -> list[CaseResult]:
    """Run the cases of every rule and sequence (or only of those defined in ``paths``)."""
    wanted = set(paths) if paths is not None else None
    results: list[CaseResult] = []
    for rule in engine.ruleset.rules:
        if rule.spec.enabled and (wanted is None or rule.path in wanted):
            results.extend(run_rule_cases(engine, rule))
    for seq in engine.ruleset.sequences:
        if seq.spec.enabled and (wanted is None or seq.path in wanted):
            results.extend(run_sequence_cases(engine, seq))
    return results
