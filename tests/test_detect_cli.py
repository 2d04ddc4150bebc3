"""``telltale rules``: list, validate, test, export-default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from telltale.cli.main import main
from telltale.detect.loader import default_rule_texts, load_rule_files

RULES = Path(__file__).parent / "fixtures" / "detect" / "rules"


def test_list_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "KIND", "SEVERITY", "CATEGORY", "ENABLED", "ORIGIN", "TITLE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["secret.private_key.read"][1:6] == ["rule", "high", "secret_access", "yes", "default"]
    assert " ".join(rows["secret.private_key.read"][6:]) == "Private key file read"
    assert rows["network.request"][1] == "signal"
    assert rows["chain.secret_then_network"][1] == "sequence"


def test_list_json_with_extra_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "list", "--json", "--rules", str(RULES / "custom.yaml")]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == len(load_rule_files().rules) + len(load_rule_files().sequences) + 2
    mine = [r for r in rows if r["id"].startswith("acme.")]
    assert mine == [
        {
            "id": "acme.deploy_prod", "kind": "rule", "severity": "low", "score": 40, "category": "deployment",
            "enabled": True, "title": "Production deploy from an agent session", "source": str(RULES / "custom.yaml"),
            "origin": f"--rules {RULES / 'custom.yaml'}",
        },
        {
            "id": "acme.secret_then_deploy", "kind": "sequence", "severity": "critical", "score": 30, "min_score": 100,
            "category": "deployment", "enabled": True, "title": "Secret read, then production deploy",
            "source": str(RULES / "custom.yaml"), "origin": f"--rules {RULES / 'custom.yaml'}",
        },
    ]


def test_list_fails_cleanly_on_bad_extra_rules(capsys: pytest.CaptureFixture[str]) -> None:
    # A custom sequence naming default rules cannot load without the default pack.
    assert main(["rules", "list", "--no-default-rules", "--rules", str(RULES / "custom.yaml")]) == 2
    assert "names no rule" in capsys.readouterr().err


def test_validate_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "validate", str(RULES / "custom.yaml")]) == 0
    assert capsys.readouterr().out.strip().endswith("ok (1 rules, 1 sequences, 0 modifiers)")


def test_validate_reports_located_errors(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(RULES / "broken.yaml")
    assert main(["rules", "validate", path]) == 2  # invalid rules: a configuration error
    out = capsys.readouterr().out.splitlines()
    expected = f"{path}:4: rule 'acme.bad_field': field 'match[0].commandline|contains': unknown field 'commandline'"
    assert expected in out[0]
    assert any(line.startswith(f"{path}:9: rule 'acme.bad_regex': field 'match[0].command|re': invalid RE2 regex")
               for line in out)
    assert any("rule 'acme.bad_steps': field 'steps[0]': 'no.such.rule' names no rule" in line for line in out)


def test_rules_test_passes_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "test", "-v", str(RULES / "custom.yaml")]) == 0
    out = capsys.readouterr().out
    assert "5 passed, 0 failed" in out and "ok   acme.secret_then_deploy positive[0]" in out
    assert main(["rules", "test", str(RULES / "failing.yaml")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "FAIL acme.wrong_case positive[0]: rule did not match" in out
    assert "FAIL acme.wrong_case negative[0]: rule matched" in out
    assert out[-1] == "0 passed, 2 failed"


def test_rules_test_on_broken_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "test", str(RULES / "broken.yaml")]) == 2
    assert "unknown field" in capsys.readouterr().out


def test_export_default_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "pack"
    assert main(["rules", "export-default", str(target)]) == 0
    written = sorted(p.name for p in target.iterdir())
    assert written == sorted(name.rsplit("/", 1)[-1] for name, _ in default_rule_texts())
    exported = load_rule_files([str(p) for p in sorted(target.iterdir())], include_default=False)
    assert exported.errors == []
    assert len(exported.rules) == len(load_rule_files().rules)
    # Refuses to overwrite without --force.
    assert main(["rules", "export-default", str(target)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["rules", "export-default", "--force", str(target)]) == 0


def test_rules_without_action_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 2
    assert "export-default" in capsys.readouterr().err



def test_no_rule_at_all_means_no_detector(tmp_path: Path) -> None:
    """``--no-default-rules`` without ``--rules``: the scan runs without a detection stage."""
    import argparse

    from telltale.cli.common import load_detector

    assert load_detector(argparse.Namespace(rules=None, no_default_rules=True, allowlist=None)) is None
    own = tmp_path / "own.yaml"
    own.write_text("rules:\n  - {id: own.x, title: t, category: test, score: 10, match: {command|contains: xyz}}\n")
    assert load_detector(argparse.Namespace(rules=[str(own)], no_default_rules=True, allowlist=None)) is not None
    assert load_detector(argparse.Namespace(rules=None, no_default_rules=False, allowlist=None)) is not None
