"""The default rule pack: size, coverage, prefilter quality and every embedded case.

Cases live in the rule YAML (``tests:`` blocks), so each rule's positive and negative
examples travel with the rule. Each case is parametrized here and runs through the real
engine on synthetic observations.
"""

from __future__ import annotations

import pytest

from telltale.detect.cases import run_rule_cases, run_sequence_cases
from telltale.detect.engine import DetectionEngine
from telltale.detect.loader import Rule, SequenceRule, load_rule_files

RULESET = load_rule_files()
ENGINE = DetectionEngine(RULESET)
RULES = [r for r in RULESET.rules if r.spec.enabled]
SEQUENCES = [s for s in RULESET.sequences if s.spec.enabled]


def test_default_pack_loads_without_errors_or_warnings() -> None:
    assert RULESET.issues == []


def test_default_pack_has_at_least_40_reported_rules_and_10_sequences() -> None:
    reported = [r for r in RULES if not r.spec.signal]
    assert len(reported) >= 40
    assert len(SEQUENCES) >= 10
    assert ENGINE.rule_count == len(RULES) + len(SEQUENCES)


def test_every_rule_and_sequence_has_positive_and_negative_cases() -> None:
    missing = [r.spec.id for r in RULES if not (r.spec.tests.positive and r.spec.tests.negative)]
    missing += [s.spec.id for s in SEQUENCES if not (s.spec.tests.positive and s.spec.tests.negative)]
    assert missing == []


def test_every_default_selection_has_a_literal_prefilter() -> None:
    # A selection without one would run its regexes on every observation.
    assert ENGINE.residual_rules() == []


REQUIRED_CATEGORIES = {
    "secret_access",
    "credential_harvesting",
    "credential_pattern",
    "execution",
    "install",
    "exfiltration",
    "persistence",
    "safeguard_bypass",
    "destructive",
    "lateral_movement",
    "supply_chain",
    "prompt_injection",
    "mcp_prompt_injection",
}


def test_pack_covers_the_required_threat_areas() -> None:
    categories = {r.spec.category for r in RULES if not r.spec.signal}
    assert categories >= REQUIRED_CATEGORIES


def test_attack_and_atlas_tags_are_kept_apart() -> None:
    for rule in RULES:
        assert all(t.startswith("attack.") for t in rule.spec.tags.attack), rule.spec.id
        assert all(t.startswith("atlas.AML.") for t in rule.spec.tags.atlas), rule.spec.id


def _rule_id(rule: Rule) -> str:
    return rule.spec.id


def _seq_id(seq: SequenceRule) -> str:
    return seq.spec.id


@pytest.mark.parametrize("rule", RULES, ids=_rule_id)
def test_rule_cases(rule: Rule) -> None:
    results = run_rule_cases(ENGINE, rule)
    assert results, "no cases"
    failed = [str(r) for r in results if not r.passed]
    assert failed == []


@pytest.mark.parametrize("seq", SEQUENCES, ids=_seq_id)
def test_sequence_cases(seq: SequenceRule) -> None:
    results = run_sequence_cases(ENGINE, seq)
    assert results, "no cases"
    failed = [str(r) for r in results if not r.passed]
    assert failed == []


def test_negative_case_would_fail_if_rule_matched() -> None:
    # Guard against a vacuous runner: a rule whose negative case matches is reported.
    from telltale.detect.loader import load_rule_text

    text = """
rules:
  - id: demo.always
    title: Demo
    category: demo
    score: 20
    match: {command|contains: ls}
    tests:
      positive: [{command: 'ls -la'}]
      negative: [{command: 'ls'}]
"""
    ruleset = load_rule_text(text, "demo.yaml")
    engine = DetectionEngine(ruleset)
    results = run_rule_cases(engine, ruleset.rules[0])
    assert [r.passed for r in results] == [True, False]
