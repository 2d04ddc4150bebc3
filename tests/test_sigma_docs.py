"""The Sigma examples in docs/detection.md load and pass their own cases, as printed."""

from __future__ import annotations

import re
from pathlib import Path

from scan_helpers import REPO, run_cli

MARKER = "<!-- tested: sigma-rule -->"


def _examples() -> list[str]:
    text = (REPO / "docs" / "detection.md").read_text()
    blocks = re.findall(re.escape(MARKER) + r"\n```yaml\n(.*?)```", text, flags=re.S)
    assert len(blocks) == text.count(MARKER) >= 2
    return blocks


def test_documented_sigma_rules_pass_their_cases(tmp_path: Path) -> None:
    for i, block in enumerate(_examples()):
        (tmp_path / f"example_{i}.yml").write_text(block)
    proc = run_cli(["rules", "validate", "--sigma", str(tmp_path)], tmp_path)
    assert "sigma: 2 rule(s) loaded, 0 not loaded" in proc.stdout
    proc = run_cli(["rules", "test", "--sigma", str(tmp_path), "-v"], tmp_path)
    assert "0 failed" in proc.stdout and "FAIL" not in proc.stdout
    assert proc.stdout.count("ok   sigma.") == 6
