"""Outputs from every root: outputs.yaml and outputs.d/*.yaml merged by name, errors located, selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from telltale.config.roots import resolve_roots
from telltale.errors import ConfigError
from telltale.sinks.config import JsonlOutput, OtlpOutput, load_outputs, selector
from telltale.sinks.select import check_selectors, selector_of


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    system, user = tmp_path / "etc", tmp_path / "xdg" / "telltale"
    (system / "outputs.d").mkdir(parents=True)
    (user / "outputs.d").mkdir(parents=True)
    monkeypatch.setenv("TELLTALE_SYSTEM_CONFIG_DIR", str(system))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return system, user


def test_outputs_merge_by_name_across_roots_and_drop_ins(roots: tuple[Path, Path]) -> None:
    system, user = roots
    (system / "outputs.yaml").write_text(
        "outputs:\n  siem:\n    type: otlp\n    endpoint: http://127.0.0.1:4318\n    timeout: 3\n")
    (system / "outputs.d" / "20-siem.yaml").write_text("outputs:\n  siem:\n    include: [detection]\n")
    (user / "outputs.d" / "10-copy.yaml").write_text(
        "outputs:\n  copy:\n    type: jsonl\n    path: /tmp/copy.jsonl\n  siem:\n    timeout: 5\n")
    loaded = load_outputs(roots=resolve_roots())
    siem = loaded.outputs["siem"]
    assert isinstance(siem, OtlpOutput) and siem.timeout == 5.0 and siem.include == ["detection"]
    assert isinstance(loaded.outputs["copy"], JsonlOutput)
    assert loaded.sources["siem"] == [f"system {system / 'outputs.yaml'}:2",
                                      f"system {system / 'outputs.d/20-siem.yaml'}:2",
                                      f"user {user / 'outputs.d/10-copy.yaml'}:5"]
    assert loaded.files == [f"system {system / 'outputs.yaml'}", f"system {system / 'outputs.d/20-siem.yaml'}",
                            f"user {user / 'outputs.d/10-copy.yaml'}"]
    # the system profile reads none of the user's outputs
    system_only = load_outputs(roots=resolve_roots("system"))
    assert set(system_only.outputs) == {"siem"} and system_only.outputs["siem"].timeout == 3.0  # type: ignore[union-attr]


def test_a_later_definition_with_another_type_replaces_the_output(roots: tuple[Path, Path]) -> None:
    system, user = roots
    (system / "outputs.yaml").write_text("outputs:\n  x:\n    type: otlp\n    endpoint: http://127.0.0.1:1\n")
    (user / "outputs.yaml").write_text("outputs:\n  x:\n    type: jsonl\n    path: /tmp/x.jsonl\n")
    out = load_outputs(roots=resolve_roots()).outputs["x"]
    assert isinstance(out, JsonlOutput) and out.path == "/tmp/x.jsonl"


@pytest.mark.parametrize(
    ("user_text", "line", "where", "needle"),
    [
        ("outputs:\n  siem:\n    batch_size: many\n", 3, "outputs.siem.batch_size", "Expected `int`"),
        ("outputs:\n  siem:\n    bogus: 1\n", 3, "outputs.siem.bogus", "unknown key"),
        ("outputs:\n  siem:\n    include: [activty]\n", 3, "outputs.siem.include", "unknown dataset"),
        ("outputs:\n  siem:\n    min_severity: loud\n", 3, "outputs.siem.min_severity", "Invalid enum value"),
        ("version: 1\nsinks: {}\n", 2, "sinks", "unknown key"),
    ],
)
def test_errors_name_the_file_and_line_that_set_the_value(roots: tuple[Path, Path], user_text: str, line: int,
                                                          where: str, needle: str) -> None:
    system, user = roots
    (system / "outputs.yaml").write_text("outputs:\n  siem:\n    type: otlp\n    endpoint: http://127.0.0.1:4318\n")
    (user / "outputs.d" / "50-x.yaml").write_text(user_text)
    with pytest.raises(ConfigError) as info:
        load_outputs(roots=resolve_roots())
    message = str(info.value)
    assert message.startswith(f"{user / 'outputs.d/50-x.yaml'}:{line}: {where}: "), message
    assert needle in message


def test_a_missing_required_field_names_the_last_definition(roots: tuple[Path, Path]) -> None:
    system, _ = roots
    (system / "outputs.d" / "10-j.yaml").write_text("outputs:\n  j:\n    type: jsonl\n    fsync: false\n")
    with pytest.raises(ConfigError, match=r"10-j\.yaml:2: outputs\.j\.path: required"):
        load_outputs(roots=resolve_roots())


def test_an_explicit_outputs_file_is_read_alone(roots: tuple[Path, Path], tmp_path: Path) -> None:
    system, _ = roots
    (system / "outputs.yaml").write_text("outputs:\n  a:\n    type: jsonl\n    path: /tmp/a.jsonl\n")
    only = tmp_path / "only.yaml"
    only.write_text("outputs:\n  b:\n    type: jsonl\n    path: /tmp/b.jsonl\n")
    assert set(load_outputs(only, resolve_roots()).outputs) == {"b"}


@pytest.mark.parametrize(
    ("include", "exclude", "minimum", "dataset", "action", "severity", "taken"),
    [
        ((), (), None, "telltale.activity", "tool_call", None, True),
        (("detection", "health"), (), None, "telltale.activity", "tool_call", None, False),
        (("detection", "health"), (), None, "telltale.health", "scan_summary", None, True),
        (("activity:tool_call",), (), None, "telltale.activity", "tool_call", None, True),
        (("activity:tool_call",), (), None, "telltale.activity", "message", None, False),
        ((), ("activity",), None, "telltale.activity", "usage", None, False),
        ((), ("health:scan_summary",), None, "telltale.health", "scan_summary", None, False),
        ((), ("health:scan_summary",), None, "telltale.health", "record_quarantined", 21, True),
        (("detection", "health"), (), "medium", "telltale.detection", "detection", 21, False),
        (("detection", "health"), (), "medium", "telltale.detection", "detection", 73, True),
        (("detection", "health"), (), "medium", "telltale.health", "scan_summary", None, True),
    ],
)
def test_selection(include: tuple[str, ...], exclude: tuple[str, ...], minimum: str | None, dataset: str,
                   action: str, severity: int | None, taken: bool) -> None:
    sel = selector_of(include, exclude, minimum)
    assert sel.takes_fields(dataset, action, severity) is taken
    event: dict[str, object] = {"dataset": dataset, "action": action}
    if severity is not None:
        event["severity"] = severity
    line = json.dumps({"event": event}).encode()
    assert sel.takes(line) is taken


def test_an_unreadable_event_is_taken_never_dropped_silently() -> None:
    assert selector_of(("detection",)).takes(b"not json") is True


def test_selector_syntax_is_checked() -> None:
    assert check_selectors(["detection", "activity:tool_call", "health:scan_summary"]) is None
    assert "unknown dataset" in (check_selectors(["detections"]) or "")
    assert "not dataset or dataset:action" in (check_selectors(["Activity"]) or "")


def test_selector_of_an_output_and_its_description(roots: tuple[Path, Path]) -> None:
    system, _ = roots
    (system / "outputs.yaml").write_text(
        "outputs:\n  s:\n    type: otlp\n    endpoint: http://127.0.0.1:1\n    include: [detection]\n"
        "    exclude: ['detection:x']\n    min_severity: high\n  all:\n    type: jsonl\n    path: /tmp/all\n")
    loaded = load_outputs(roots=resolve_roots())
    assert selector(loaded.outputs["s"]).describe() == {
        "include": ["detection"], "exclude": ["detection:x"],
        "min_severity": "high (event.severity >= 73; events without one pass)"}
    assert selector(loaded.outputs["all"]).everything
