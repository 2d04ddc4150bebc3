"""Fixed costs: a command imports what it needs (issue 24; docs/performance.md).

A no-change ``scan --once`` from cron reads every agent's specs but no adapter, no wire
Structs, no rule pack, no normaliser; ``telltale --version`` imports no command.
Checked in a fresh interpreter by the modules it loaded, not by time (the host's load
makes timings meaningless in the suite; ``bench/bench_corpus.py`` measures them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from telltale.cli.main import COMMAND_MODULES, COMMANDS

#: What a no-change scan must never import (each is imported when a changed source is read,
#: when a configuration file exists, or when there is something to show on a terminal).
HEAVY = (
    "hyperscan", "tree_sitter", "tree_sitter_bash", "telltale.detect.engine", "telltale.detect.loader",
    "telltale.detect.ledger", "telltale.normalize.stage", "telltale.events.activity",
    "telltale.inventory.snapshot", "yaml", "rich", "telltale.cli.summary", "telltale.delivery",
    "telltale.sinks.config", "telltale.sinks.outbox", "concurrent.futures", "multiprocessing",
    "socket",  # the host's name comes from os.uname (telltale.hostname)
    "typing_extensions", "inspect",  # hidden while msgspec imports (telltale/__init__.py)
    "hashlib",  # BLAKE2b from _blake2 (telltale.digest); SHA-256 only once a value is hashed
)  # fmt: skip


def _loaded(code: str, env: dict[str, str] | None = None) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True, env=env,
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


#: Every agent package follows the specs-only rule (docs/adapters.md).
LAZY_AGENTS = (
    "aider", "amp", "antigravity", "claude", "cline", "codex", "continue_", "copilot", "crush", "cursor", "droid",
    "gemini", "goose", "kilo", "kiro", "openclaw", "opencode", "qwen", "trae", "windsurf", "zed",
)  # fmt: skip


def test_every_agent_package_is_listed() -> None:
    import telltale.sources as sources

    packages = {p.name for p in Path(sources.__file__).parent.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAZY_AGENTS)


def _adapter_modules() -> set[str]:
    """The modules that define those agents' adapter classes (imported here, not in the child)."""
    from telltale.sources.registry import REGISTRY, adapter_for

    modules = {type(adapter_for(spec.kind)).__module__ for spec in REGISTRY if spec.adapter}
    return {m for m in modules if m.split(".")[2] in LAZY_AGENTS}


def test_registry_imports_specs_only() -> None:
    loaded = _loaded("import telltale.sources.registry as r; assert r.REGISTRY")
    assert sorted(_adapter_modules() & loaded) == []


def test_every_spec_names_an_importable_adapter() -> None:
    from telltale.sources.registry import REGISTRY, adapter_for

    for spec in REGISTRY:
        if spec.adapter:
            assert callable(getattr(adapter_for(spec.kind), "acquire", None)), spec.kind


def test_version_imports_no_command(tmp_path: Path) -> None:
    loaded = _loaded("import sys; from telltale.cli.main import main; sys.argv=['telltale']; main(['--version'])")
    assert not [m for m in loaded if m.startswith("telltale.cli.") and m != "telltale.cli.main"]


def test_every_command_has_its_module() -> None:
    assert set(COMMAND_MODULES.values()) == set(COMMANDS)


def _user_line(uuid: str) -> str:
    return json.dumps({"type": "user", "uuid": uuid, "sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z",
                       "message": {"role": "user", "content": "hello"}}) + "\n"


def _claude_scan(tmp_path: Path) -> tuple[Path, Callable[[], set[str]]]:
    """A home with one Claude transcript, and a scan of it in a fresh interpreter that
    returns the modules it loaded."""
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-p"
    project.mkdir(parents=True)
    transcript = project / "s1.jsonl"
    transcript.write_text(_user_line("u1"))
    args = ["scan", "--once", "--root", str(home), "--log-path", str(tmp_path / "e.jsonl"),
            "--state-path", str(tmp_path / "s.sqlite")]  # fmt: skip
    env = {**os.environ, "HOME": str(home)}
    env.pop("TELLTALE_CORPUS", None)
    code = f"import sys; from telltale.cli.main import main; assert main({args!r}) == 0"
    return transcript, lambda: _loaded(code, env)


def test_no_change_scan_imports_nothing_heavy(tmp_path: Path) -> None:
    """Two scans of a home with a Claude transcript: the second finds nothing new."""
    _, scan = _claude_scan(tmp_path)
    first = scan()
    assert "telltale.sources.claude.adapter" in first  # the changed source was read
    second = scan()
    assert [m for m in HEAVY if m in second] == []
    assert sorted(_adapter_modules() & second) == []


def test_a_scan_with_the_rule_pack_cached_parses_no_yaml(tmp_path: Path) -> None:
    """The first scan compiles the pack (YAML) and caches it; a later scan with a changed
    source builds the engine from the cache and imports no PyYAML (nor does the inventory,
    with no Goose configuration, nor the allowlist loader, with no allowlist file)."""
    transcript, scan = _claude_scan(tmp_path)
    first = scan()
    assert "yaml" in first and (tmp_path / "rules.cache").exists()  # compiled from the YAML, then cached
    with transcript.open("a") as fh:
        fh.write(_user_line("u2"))
    second = scan()
    assert "telltale.detect.engine" in second  # the changed source went through the rules
    assert "yaml" not in second
