"""Sigma rules out: `telltale rules export --sigma DIR` writes the effective pack's
single-event rules as Sigma rules over Telltale's events, plus a pySigma pipeline; every
exported rule converts with the Splunk and Elasticsearch backends."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scan_helpers import run_cli
from telltale.detect.loader import load_rule_files
from telltale.detect.sigma.export import PIPELINE_FILE, exportable, sigma_id

EXTRA = """
version: 1
rules:
  - id: local.cased_token
    title: A cased marker in a command
    category: execution
    score: 40
    match:
      command|contains|cased: 'XMARK*?'
    tests:
      positive: [{command: 'echo XMARK*?'}]
  - id: local.user_asks
    title: The user asks to disable the sandbox
    category: prompt
    score: 30
    match:
      user_context|contains: 'disable the sandbox'
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    home = tmp_path_factory.mktemp("home")
    extra = home / "extra.yaml"
    extra.write_text(EXTRA)
    out = home / "sigma"
    proc = run_cli(["rules", "export", "--sigma", str(out), "--rules", str(extra)], home)
    return out, extra, proc.stdout


def _convert(out: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    from sigma.backends.elasticsearch import LuceneBackend
    from sigma.backends.splunk import SplunkBackend
    from sigma.collection import SigmaCollection
    from sigma.processing.pipeline import ProcessingPipeline

    pipeline = ProcessingPipeline.from_yaml((out / PIPELINE_FILE).read_text())
    splunk: dict[str, list[str]] = {}
    lucene: dict[str, list[str]] = {}
    for path in sorted(out.glob("*.yml")):
        if path.name == PIPELINE_FILE:
            continue
        collection = SigmaCollection.from_yaml(path.read_text(), collect_errors=True)
        for rule in collection.rules:
            assert not rule.errors, (path.name, rule.errors)
        splunk[path.stem] = SplunkBackend(processing_pipeline=pipeline).convert(collection)
        lucene[path.stem] = LuceneBackend(processing_pipeline=pipeline).convert(collection)
    return splunk, lucene


def test_export_writes_every_single_event_rule_of_the_effective_pack(exported: tuple[Path, Path, str]) -> None:
    out, extra, stdout = exported
    ruleset = load_rule_files([str(extra)])
    rules, skipped = exportable(ruleset)
    written = {p.stem for p in out.glob("*.yml")} - {Path(PIPELINE_FILE).stem}
    # One file per rule, or one per observation kind for a rule that looks at several.
    origins = {yaml.safe_load((out / f"{stem}.yml").read_text())["x-telltale"]["rule_id"] for stem in written}
    assert origins == {r.spec.id for r in rules}
    split = {stem for stem in written if stem not in origins}
    assert split and all(stem.rsplit(".", 1)[0] in origins for stem in split)
    assert "local.cased_token" in written and "local.user_asks" in written
    # Signals are left out, each named with why.
    signals = {r.spec.id for r in ruleset.rules if r.spec.signal and r.spec.enabled}
    assert signals and {rid for rid, _why in skipped} == signals
    for rid in signals:
        assert rid in stdout
    doc = yaml.safe_load((out / "local.cased_token.yml").read_text())
    assert doc["id"] == sigma_id("local.cased_token")
    assert doc["logsource"] == {"product": "telltale", "category": "tool_call"}
    assert doc["x-telltale"] == {"rule_id": "local.cased_token", "category": "execution", "score": 40}
    # A cased literal is a case-sensitive regex (backends refuse cased strings).
    assert doc["detection"]["selection_0"] == {"command|re": r"XMARK\*\?"}
    doc = yaml.safe_load((out / "local.user_asks.yml").read_text())
    assert doc["logsource"]["category"] == "message"
    assert doc["detection"]["selection_0"] == {
        "message_text|contains": "disable the sandbox", "message_role": "user", "message_injected": False}


def test_every_exported_rule_converts_with_splunk_and_elasticsearch(exported: tuple[Path, Path, str]) -> None:
    out, _extra, _stdout = exported
    splunk, lucene = _convert(out)
    assert len(splunk) == len(lucene) > 50
    for name in splunk:
        assert len(splunk[name]) == 1 and 'event.dataset="telltale.activity"' in splunk[name][0], name
        assert len(lucene[name]) == 1 and "event.dataset:telltale.activity" in lucene[name][0], name
    command = next(n for n in splunk if n.startswith("execution.download_pipe_shell"))
    assert "process.command_line" in splunk[command][0] and "event.action=\"tool_call\"" in splunk[command][0]
    assert 'telltale.message.role="user"' in splunk["local.user_asks"][0]
    assert "telltale.message.text" in lucene["local.user_asks"][0]


def test_export_refuses_to_overwrite_without_force(exported: tuple[Path, Path, str], tmp_path: Path) -> None:
    out, _extra, _stdout = exported
    proc = run_cli(["rules", "export", "--sigma", str(out)], tmp_path, check=False)
    assert proc.returncode == 2 and "--force" in proc.stderr
    proc = run_cli(["rules", "export", "--sigma", str(out), "--force"], tmp_path)
    assert PIPELINE_FILE in proc.stdout
