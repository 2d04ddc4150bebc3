"""Allowlists downgrade matching detections to informational and name the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from telltale.detect.allowlist import load_allowlists, parse_allowlist
from telltale.detect.cases import case_observations
from telltale.detect.engine import DetectionEngine
from telltale.detect.model import Detection, StepCase
from telltale.errors import ConfigError
from telltale.events.envelope import path_hash

FIXTURE = Path(__file__).parent / "fixtures" / "detect" / "allowlist.yaml"


@pytest.fixture()
def allowlist_file(tmp_path: Path) -> str:
    # The path hash entry names the provenance path that case observations carry.
    text = FIXTURE.read_text().replace("PLACEHOLDER", path_hash("case://hashed-session"))
    target = tmp_path / "allow.yaml"
    target.write_text(text)
    return str(target)


def run(engine: DetectionEngine, session: str, *steps: StepCase, client: str = "codex") -> list[Detection]:
    return engine.evaluate(case_observations(steps, session, client=client), {})


def test_suppressed_detection_is_kept_as_informational(allowlist_file: str) -> None:
    engine = DetectionEngine.load(allowlist_files=[allowlist_file])
    [det] = run(engine, "release-session", StepCase(command="npm publish"))
    assert (det.rule_id, det.suppressed_by, det.severity, det.score) == (
        "supply_chain.publish", "release-bot", "informational", 30
    )
    # Same rule in another session or client is not covered.
    [other] = run(engine, "other-session", StepCase(command="npm publish"))
    assert (other.suppressed_by, other.severity) == (None, "low")
    [claude] = run(engine, "release-session", StepCase(command="npm publish"), client="claude")
    assert claude.suppressed_by is None


def test_entry_criteria_are_anded_and_values_ored(allowlist_file: str) -> None:
    engine = DetectionEngine.load(allowlist_files=[allowlist_file])
    [ssh] = run(engine, "any", StepCase(command="ssh ops@10.0.0.9 uptime", tool_name="ops_shell"))
    assert (ssh.category, ssh.suppressed_by) == ("lateral_movement", "ops-tool-ssh")
    [bash] = run(engine, "any", StepCase(command="ssh ops@10.0.0.9 uptime", tool_name="Bash"))
    assert bash.suppressed_by is None


def test_rule_prefix_and_path_hash(allowlist_file: str) -> None:
    engine = DetectionEngine.load(allowlist_files=[allowlist_file])
    lab = run(engine, "lab-session", StepCase(command="cat .env"), StepCase(command="cat ~/.ssh/id_rsa"))
    assert {(d.rule_id, d.suppressed_by) for d in lab} == {
        ("secret.env.read", "all-secret-rules-in-lab"),
        ("secret.private_key.read", "all-secret-rules-in-lab"),
    }
    [hashed] = run(engine, "hashed-session", StepCase(command="cat .env"))
    assert hashed.suppressed_by == "one-transcript"


def test_sequences_are_suppressed_by_their_own_id_only(allowlist_file: str) -> None:
    engine = DetectionEngine.load(allowlist_files=[allowlist_file])
    dets = run(engine, "release-session", StepCase(command="cat ~/.npmrc"), StepCase(command="npm publish"))
    by_id = {d.rule_id: d for d in dets}
    assert by_id["supply_chain.publish"].suppressed_by == "release-bot"
    assert by_id["chain.credential_then_publish"].suppressed_by is None
    assert by_id["chain.credential_then_publish"].severity == "critical"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("allowlist:\n  - {name: empty}\n", "needs at least one of"),
        ("allowlist:\n  - {name: a, rules: x}\n  - {name: a, client: y}\n", "duplicate entry name"),
        ("allowlist:\n  - {name: a, rulez: [x]}\n", "rulez"),
        ("allowlist:\n  - {name: '', client: x}\n", "must not be empty"),
        ("allowlist:\n  - {name: a, client: ''}\n", "non-empty"),
        ("allowlist: [\n", "malformed YAML"),
        ("allow: []\n", "allow"),
    ],
)
def test_allowlist_errors_name_file_and_entry(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_allowlist(text, "allow.yaml")
    assert "allow.yaml" in str(exc.value) and message in str(exc.value)


def test_entry_names_are_unique_across_files(tmp_path: Path) -> None:
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text("allowlist:\n  - {name: same, client: x}\n")
    b.write_text("allowlist:\n  - {name: same, client: y}\n")
    with pytest.raises(ConfigError, match="duplicate entry name"):
        load_allowlists([str(a), str(b)])
    assert load_allowlists([]).entries == []
