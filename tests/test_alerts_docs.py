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
