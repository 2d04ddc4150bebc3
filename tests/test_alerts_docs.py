"""docs/detection.md's tuning examples are real: each YAML block that names a drop-in file
(``# overrides.d/…``, ``# policies.d/…``, ``# rules.d/…``) is written there and checked
through ``telltale config validate`` and ``telltale rules show``."""

from __future__ import annotations

import json
import re
from pathlib import Path

from scan_helpers import REPO, run_cli

BLOCK = re.compile(r"```yaml\n# ((?:rules|overrides|policies|allowlists)\.d/[\w.-]+\.yaml)[^\n]*\n(.*?)```", re.S)


def test_the_tuning_examples_of_docs_detection_load(tmp_path: Path) -> None:
    text = (REPO / "docs" / "detection.md").read_text(encoding="utf-8")
    blocks = BLOCK.findall(text)
    assert {name.split("/")[0] for name, _ in blocks} == {"rules.d", "overrides.d", "policies.d"}
    home, conf = tmp_path / "home", tmp_path / "conf"
    home.mkdir()
    for name, body in blocks:
        (conf / name).parent.mkdir(parents=True, exist_ok=True)
        (conf / name).write_text(body, encoding="utf-8")
    view = json.loads(run_cli(["config", "validate", "--json", "--config-dir", str(conf)], home).stdout)["detection"]
    assert any("secret.env.read" in n and "replaces the default rule" in n for n in view["notices"])
    assert view["risk_bands"] == {"low": 20, "medium": 40, "high": 70, "critical": 120}
    assert {"secret.env.read", "lateral.ssh_remote", "exfil.paste_site"} <= set(view["tuned"])
    shown = json.loads(run_cli(["rules", "show", "exfil.paste_site", "--json", "--config-dir", str(conf)],
                               home).stdout)
    assert shown["severity"] == "critical" and shown["tuned"][0]["reason"].startswith("paste sites")
    ssh = json.loads(run_cli(["rules", "show", "lateral.ssh_remote", "--json", "--config-dir", str(conf)],
                             home).stdout)
    assert ssh["enabled"] is False and ssh["score"] == 10  # the category policy, then the override's score


JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.S)


def _holds(documented: object, real: object, where: str = "") -> None:
    """Every documented field is in ``real`` with that value (``"…"``: any value; a list:
    its first items)."""
    if documented == "…":
        assert real is not None, where
    elif isinstance(documented, dict):
        assert isinstance(real, dict), where
        for key, value in documented.items():
            assert key in real, f"{where}.{key} missing"
            _holds(value, real[key], f"{where}.{key}")
    elif isinstance(documented, list):
        assert isinstance(real, list) and len(real) >= len(documented), where
        for i, value in enumerate(documented):
            _holds(value, real[i], f"{where}[{i}]")
    else:
        assert documented == real, f"{where}: documented {documented!r}, emitted {real!r}"


def test_the_alert_and_rollup_examples_of_docs_detection_are_what_a_scan_emits(tmp_path: Path) -> None:
    from adversarial.render import write_claude
    from scan_helpers import read_events

    examples = [json.loads(block) for block in JSON_BLOCK.findall((REPO / "docs" / "detection.md").read_text())]
    alert = next(e for e in examples if e["event"]["dataset"] == "telltale.detection")
    rollup = next(e for e in examples if e["event"]["dataset"] == "telltale.session_risk")
    home, out = tmp_path / "home", tmp_path / "out"
    home.mkdir()
    write_claude(home, "docs-example", [{"user": "check the deploy"}, *[{"shell": "cat .env", "result": "A=1"}] * 3,
                                        {"shell": "ssh deploy@10.1.2.3 uptime", "result": "up"}])
    run_cli(["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"),
             "--state-path", str(out / "s.sqlite"), "--json"], home)
    events = read_events(out / "e.jsonl")
    [real_alert] = [e for e in events if e.get("rule", {}).get("id") == alert["rule"]["id"]]
    [real_rollup] = [e for e in events if e["event"]["dataset"] == "telltale.session_risk"]
    _holds(alert, real_alert, "alert")
    _holds(rollup, real_rollup, "rollup")
