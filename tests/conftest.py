"""Shared test helpers."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
# Fixture builders (e.g. build_opencode) are importable from every test module.
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake HOME with no agent stores and XDG dirs inside the temp dir."""
    home = tmp_path / "home"
    home.mkdir()
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "OPENCODE_DB", "XDG_DATA_HOME", "TELLTALE_PROJECT_CONFIG",
                "COPILOT_HOME", "TELLTALE_LOG_PATH", "TELLTALE_STATE_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("TELLTALE_SYSTEM_CONFIG_DIR", str(tmp_path / "system-config"))
    return home


def corpus_dir() -> Path | None:
    value = os.environ.get("TELLTALE_CORPUS")
    return Path(value) if value and Path(value).is_dir() else None


@pytest.fixture(scope="module")
def ks() -> Iterator[Any]:
    """``bench/kill_stress.py`` as a module: its multi-agent home and its comparisons."""
    path = Path(__file__).resolve().parents[1] / "bench" / "kill_stress.py"
    spec = importlib.util.spec_from_file_location("kill_stress", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["kill_stress"] = module
    spec.loader.exec_module(module)
    yield module
