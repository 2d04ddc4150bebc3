"""An output's own content mode: a `content: none` output never gets more than a `--content none` scan writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import read_events, run_cli
from telltale.sinks.content import downgrade, downgrade_line
from test_outputs_honoured import write_risky_session

TIME_FIELDS = {"event.created", "@timestamp"}


def _leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else k))
        return out
    return {prefix: value}


def _scan(home: Path, out: Path, content: str, outputs: Path | None = None) -> list[dict[str, Any]]:
    extra = ["--outputs", str(outputs)] if outputs else []
    run_cli(["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"), "--state-path",
             str(out / "s.sqlite"), "--content", content, "--install-inventory-disabled", "--json", *extra], home)
    return read_events(out / "e.jsonl")


@pytest.mark.slow
def test_content_none_and_redacted_outputs_of_a_full_scan(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_risky_session(home)
    outputs = tmp_path / "outputs.yaml"
    outputs.write_text(f"outputs:\n  siem:\n    type: jsonl\n    path: {tmp_path / 'none.jsonl'}\n    content: none\n"
                       f"  red:\n    type: jsonl\n    path: {tmp_path / 'red.jsonl'}\n    content: redacted\n")
    full = _scan(home, tmp_path / "full", "full", outputs)
    truth = {e["event"]["id"]: e for e in _scan(home, tmp_path / "truth-none", "none")}
    truth_red = {e["event"]["id"]: e for e in _scan(home, tmp_path / "truth-red", "redacted")}
    sent = read_events(tmp_path / "none.jsonl")
    assert len(sent) == len(full)
    assert any("curl" in json.dumps(e) for e in full)
    compared = 0
    for event in sent:
        assert event["telltale"].get("content_mode", "none") == "none"
        reference = truth.get(event["event"]["id"])
        if reference is None:  # per-run events (scan summaries) have ids of their own run
            assert event["event"]["dataset"] == "telltale.health"
            continue
        compared += 1
        mine, theirs = _leaves(event), _leaves(reference)
        assert set(mine) <= set(theirs), set(mine) - set(theirs)  # not one field more than a none scan writes
        for path, value in mine.items():
            if path not in TIME_FIELDS and not path.startswith("telltale.attributes."):
                assert value == theirs[path], path
        assert "process.command_line" not in mine and "telltale.cwd" not in mine
    assert compared >= 10
    for event in read_events(tmp_path / "red.jsonl"):
        reference = truth_red.get(event["event"]["id"])
        if reference is not None:
            assert set(_leaves(event)) == set(_leaves(reference))


def test_an_output_cannot_ask_for_more_than_the_log_has(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_risky_session(home)
    outputs = tmp_path / "outputs.yaml"
    outputs.write_text(f"outputs:\n  x:\n    type: jsonl\n    path: {tmp_path / 'x.jsonl'}\n    content: full\n")
    proc = run_cli(["scan", "--once", "--root", str(home), "--log-path", str(tmp_path / "out" / "e.jsonl"),
                    "--state-path", str(tmp_path / "out" / "s.sqlite"), "--outputs", str(outputs)], home, check=False)
    assert proc.returncode == 2 and "outputs.x.content: full is more than the local log carries (redacted)" \
        in proc.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_fields_are_withheld_from_a_none_output() -> None:
    doc = {"event": {"id": "e", "dataset": "telltale.activity"}, "telltale": {"content_mode": "redacted",
           "cwd": "/home/dev/secret-project", "future_text": "x", "attributes": {"branch": "feat/x"}},
           "process": {"command_line": "ls", "exit_code": 0}, "brand_new": {"text": "y"}}
    out = downgrade(doc, "none")
    hashed = out["telltale"]["attributes"]["branch"]
    assert out == {"event": {"id": "e", "dataset": "telltale.activity"}, "process": {"exit_code": 0},
                   "telltale": {"content_mode": "none", "attributes": {"branch": hashed}}}
    assert out["telltale"]["attributes"]["branch"] != "feat/x"
    assert doc["telltale"]["cwd"] == "/home/dev/secret-project"  # the original is untouched
    assert downgrade_line(b"not json", "none") == b"{}"
