"""Rule loading: typed validation with errors that name file, line, rule and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from telltale.detect.engine import DetectionEngine
from telltale.detect.loader import MAX_RULE_FILE_BYTES, LoadIssue, load_rule_files, load_rule_text
from telltale.errors import ConfigError

GOOD = """
version: 1
x-shared: &shared 'curl'
rules:
  - id: my.rule
    title: Mine
    category: custom
    score: 25
    severity: low
    tags: {attack: [attack.t1059.004, attack.execution], atlas: [atlas.AML.T0051.001]}
    match:
      - command|contains: *shared
    tests:
      positive: [{command: curl x}]
      negative: [{command: wget x}]
"""


def errors(text: str, path: str = "rules.yaml") -> list[LoadIssue]:
    return load_rule_text(text, path).errors


def one_error(text: str) -> LoadIssue:
    found = errors(text)
    assert len(found) == 1, [str(e) for e in found]
    return found[0]


def test_good_file_loads_with_anchors() -> None:
    ruleset = load_rule_text(GOOD, "good.yaml")
    assert ruleset.issues == []
    [rule] = ruleset.rules
    assert rule.spec.id == "my.rule" and rule.path == "good.yaml" and rule.line == 5
    assert rule.selections[0][0].values == ("curl",)


RULE = """
rules:
  - id: ok.first
    title: First
    category: c
    score: 10
    match: {command|contains: abc}
  - id: {rule_id}
    title: T
    category: c
    score: {score}
    match: {match}
"""


def rule_text(match: str = "{command|contains: abc}", score: str = "10", rule_id: str = "bad.rule") -> str:
    return RULE.replace("{match}", match).replace("{score}", score).replace("{rule_id}", rule_id)


def test_unknown_field_is_located() -> None:
    issue = one_error(rule_text("{commandline|contains: abc}"))
    located = (issue.path, issue.rule_id, issue.field, issue.line)
    assert located == ("rules.yaml", "bad.rule", "match[0].commandline|contains", 8)
    assert "unknown field 'commandline'" in str(issue)
    assert str(issue).startswith("rules.yaml:8: rule 'bad.rule': field 'match[0].commandline|contains': ")


@pytest.mark.parametrize(
    ("match", "message"),
    [
        ("{command|contain: abc}", "unknown modifier 'contain'"),
        ("{command|contains|re: abc}", "at most one of"),
        ("{command|re: '(unclosed'}", "invalid RE2 regex"),
        ("{command|re: '(?=lookahead)x'}", "invalid RE2 regex"),
        ("{command|contains: ''}", "non-empty"),
        ("{command|contains: []}", "non-empty"),
        ("{}", "empty selection"),
    ],
)
def test_matcher_problems_are_located(match: str, message: str) -> None:
    issue = one_error(rule_text(match))
    assert issue.rule_id == "bad.rule" and issue.field is not None and issue.field.startswith("match[0]")
    assert message in issue.message


def test_type_errors_name_the_field() -> None:
    issue = one_error(rule_text(score="high"))
    assert (issue.rule_id, issue.field) == ("bad.rule", "score")
    assert "Expected `int`" in issue.message


def test_unknown_rule_key_is_an_error() -> None:
    text = rule_text().replace("    category: c\n    score: 10\n    match: {command|contains: abc}\n", "", 0)
    text = text.rstrip() + "\n    severty: low\n"
    issue = one_error(text)
    assert issue.rule_id == "bad.rule" and "severty" in issue.message


@pytest.mark.parametrize(
    ("extra", "fld", "message"),
    [
        ("    severity: high\n", "severity", "score 10 is in band 'informational', not 'high'"),
        ("    tags: {attack: [atlas.AML.T0051]}\n", "tags.attack", "ATLAS tag"),
        ("    tags: {atlas: [attack.t1059]}\n", "tags.atlas", "ATT&CK tag"),
        ("    tags: {attack: [attack.t99]}\n", "tags.attack", "neither a technique"),
        ("    tags: {atlas: [atlas.AML.51]}\n", "tags.atlas", "must look like"),
        ("    tests: {positive: [{command: a, tool_result: b}]}\n", "tests.positive[0]", "do not belong"),
        ("    filter: {nope: x}\n", "filter[0].nope", "unknown field"),
    ],
)
def test_semantic_problems_are_located(extra: str, fld: str, message: str) -> None:
    issue = one_error(rule_text() + extra)
    assert (issue.rule_id, issue.field) == ("bad.rule", fld)
    assert message in issue.message


def test_bad_ids_and_scores() -> None:
    assert one_error(rule_text(rule_id="Bad Id")).field == "id"
    assert one_error(rule_text(score="101")).field == "score"


def test_all_problems_are_reported_not_just_the_first() -> None:
    third = "  - id: third\n    title: T\n    category: c\n    score: -1\n    match: {command: x}\n"
    text = rule_text("{nope: x}") + third
    found = errors(text)
    assert {(e.rule_id, e.field) for e in found} == {("bad.rule", "match[0].nope"), ("third", "score")}
    # The valid rule of the file still loads.
    assert [r.spec.id for r in load_rule_text(text, "x.yaml").rules] == ["ok.first"]


def test_yaml_syntax_error_has_a_line() -> None:
    issue = one_error("rules:\n  - id: x\n    title: [unclosed\n")
    assert issue.line is not None and issue.message.startswith("YAML")


def test_top_level_shape_problems() -> None:
    assert "top level" in one_error("- a\n- b\n").message
    assert "unknown top-level key 'rulez'" in one_error("rulez: []\n").message
    assert "unsupported version" in one_error("version: 2\nrules: []\n").message
    assert load_rule_text("", "empty.yaml").issues == []


def test_sequence_and_modifier_validation() -> None:
    text = """
rules:
  - {id: a.one, title: One, category: c, score: 10, match: {command|contains: one}}
sequences:
  - {id: s.short, title: S, category: c, score: 10, steps: [[a.one]]}
  - {id: s.far, title: F, category: c, score: 10, steps: [[a.one], [a.one]], within: {steps: 0}}
  - {id: s.case, title: C, category: c, score: 10, steps: [[a.one], [a.one]], tests: {positive: [[]]}}
modifiers:
  - {id: m.bad, when: [], with: [a.one], score: 5}
  - {id: m.scope, when: [a.one], with: [a.one], score: 5, scope: everywhere}
"""
    found = {(e.rule_id, e.field) for e in errors(text)}
    assert found == {
        ("s.short", "steps"),
        ("s.far", "within.steps"),
        ("s.case", "tests.positive[0]"),
        ("m.bad", "when"),
        ("m.scope", "scope"),
    }


def test_cross_file_checks(tmp_path: Path) -> None:
    first = tmp_path / "a.yaml"
    second = tmp_path / "b.yaml"
    first.write_text("rules:\n  - {id: dup.rule, title: A, category: c, score: 10, match: {command|contains: aaa}}\n")
    second.write_text(
        "rules:\n  - {id: dup.rule, title: B, category: c, score: 10, match: {command|contains: bbb}}\n"
        "sequences:\n  - {id: s.x, title: S, category: c, score: 5, steps: [[dup.rule], ['missing.*']]}\n"
        "modifiers:\n  - {id: m.x, when: [nothing.here], with: [dup.rule], score: 5}\n"
    )
    ruleset = load_rule_files([str(first), str(second)], include_default=False)
    found = {(e.path, e.rule_id, e.field) for e in ruleset.errors}
    assert found == {
        (str(second), "dup.rule", "id"),
        (str(second), "s.x", "steps[1]"),
        (str(second), "m.x", "when"),
    }
    assert "first defined in " + str(first) in next(e.message for e in ruleset.errors if e.field == "id")
    with pytest.raises(ConfigError) as exc:
        ruleset.raise_for_errors()
    assert "3 rule error(s)" in str(exc.value) and "b.yaml" in str(exc.value)


def test_user_rules_may_reference_default_rules(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "rules:\n  - {id: my.deploy, title: D, category: c, score: 20, match: {command|startswith: 'deploy '}}\n"
        "sequences:\n  - {id: my.chain, title: C, category: c, score: 30, steps: [['secret.*'], [my.deploy]]}\n"
    )
    engine = DetectionEngine.load([str(mine)])
    assert engine.rule_count == DetectionEngine.load().rule_count + 2
    with pytest.raises(ConfigError):
        DetectionEngine.load([str(mine)], include_default=False)


def test_unreadable_and_oversized_files(tmp_path: Path) -> None:
    missing = load_rule_files([str(tmp_path / "nope.yaml")], include_default=False)
    assert missing.errors and "cannot read" in missing.errors[0].message
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_RULE_FILE_BYTES + 1))
    assert "larger than" in load_rule_files([str(big)], include_default=False).errors[0].message
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    assert "not UTF-8" in load_rule_files([str(binary)], include_default=False).errors[0].message


def test_selection_without_literal_is_a_warning_not_an_error() -> None:
    ruleset = load_rule_text(rule_text("{command|re: '^.{3}$'}"), "w.yaml")
    assert ruleset.errors == []
    [warning] = ruleset.issues
    assert warning.level == "warning" and warning.field == "match[0]" and str(warning).startswith("warning: ")
    engine = DetectionEngine(ruleset)
    assert engine.residual_rules() == ["bad.rule"]


def test_the_default_pack_read_from_its_directory_is_what_importlib_resources_reads() -> None:
    from telltale.detect import loader

    texts = loader.default_rule_texts()
    assert texts == loader._resource_rule_texts()
    assert len(texts) >= 10 and all(name.startswith(f"{loader.DEFAULT_PACK}/") for name, _ in texts)
