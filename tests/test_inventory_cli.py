"""``telltale inventory`` end to end, the table view and the scan hook (cadence, emit on change)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from telltale.cli.inventory import json_lines, write_table
from telltale.inventory import take_inventory
from telltale.inventory.probes import AGENTS
from telltale.inventory.scan_hook import (
    META_DIGEST,
    InventoryEmitter,
    inventory_events,
    inventory_hook,
)
from telltale.state import StateStore

FIXTURE = Path(__file__).parent / "fixtures" / "inventory"
REPO = Path(__file__).resolve().parents[1]


def make_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE / "home", home)
    (home / ".npm-global" / "lib" / "node_modules" / "@anthropic-ai" / "claude-code").mkdir(parents=True)
    (home / ".vscode" / "extensions" / "github.copilot-chat-0.31.2").mkdir(parents=True)
    (home / ".claude" / "projects" / "-home-fake").mkdir(parents=True)
    (home / ".claude" / "projects" / "-home-fake" / "s.jsonl").write_text('{"FAKE": "transcript"}\n')
    return home


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "telltale", "inventory", *args],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )


@pytest.mark.slow
def test_cli_json_end_to_end(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("copilot", "codex"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)

    proc = run_cli("--json", "--root", str(home))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    agents = {d["agent"]: d for d in lines if d["record"] == "agent"}
    summary = lines[-1]
    assert summary["record"] == "summary" and len(lines) == len(AGENTS) + 1 and summary["agents"] == len(AGENTS)
    assert summary["installed"] == ["claude", "copilot"]
    assert summary["partial"] == []
    claude = agents["claude"]
    assert claude["confidence"] == "confirmed"
    assert claude["posture"]["retention"] == {"deletes_sessions": True, "source": "settings", "days": 14}
    assert {s["name"] for s in claude["posture"]["mcp_servers"]} == {"github", "docs", "legacy", "db"}
    assert agents["codex"]["installed"] is False  # --root: PATH is not consulted without --path
    assert str(tmp_path) not in proc.stdout
    for secret in ("FAKEFAKE", "ghp_", "sk-ant", "FAKEPASSWORD", "transcript"):
        assert secret not in proc.stdout

    with_path = run_cli("--json", "--root", str(home), "--path", str(bin_dir))
    summary2 = json.loads(with_path.stdout.splitlines()[-1])
    assert summary2["installed"] == ["codex", "claude", "copilot"]
    assert summary2["digest"] != summary["digest"]
    # Same inputs, same digest (emit-on-change relies on it).
    assert json.loads(run_cli("--json", "--root", str(home)).stdout.splitlines()[-1])["digest"] == summary["digest"]


@pytest.mark.slow
def test_cli_piped_output_defaults_to_json_and_platform_injection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    exe = home / "AppData" / "Roaming" / "Claude" / "claude-code" / "2.0.1" / "h" / "claude.exe"
    exe.parent.mkdir(parents=True)
    exe.write_bytes(b"MZ")
    proc = run_cli("--root", str(home), "--platform", "win32", "--no-posture")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[-1]["platform"] == "win32" and lines[-1]["installed"] == ["claude"]
    claude = next(d for d in lines if d.get("agent") == "claude")
    assert claude["posture"] is None
    assert claude["signals"][0]["name"] == "claude-desktop"


@pytest.mark.slow
def test_cli_bad_root_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli("--root", str(tmp_path / "missing"))
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and proc.stdout == ""


def test_json_lines_shape(tmp_path: Path) -> None:
    snap = take_inventory(str(make_home(tmp_path)), {}, "linux", path_env="", consult_system=False)
    lines = [msgspec.json.decode(x) for x in json_lines(snap)]
    assert [d["record"] for d in lines] == ["agent"] * len(AGENTS) + ["summary"]
    assert lines[-1]["digest"] == snap.digest()


def test_table_view(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = take_inventory(str(make_home(tmp_path)), {}, "linux", path_env="", consult_system=False)
    from rich.console import Console

    write_table(snap, Console(width=240))
    out = capsys.readouterr().out
    assert "Agent inventory (linux)" in out
    assert "@anthropic-ai/claude-code" in out and "14d" in out
    assert "github.copilot-chat" in out
    assert snap.digest() in out
    assert "FAKEFAKE" not in out


# -- scan hook ---------------------------------------------------------------------------------


def _ns(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = {"root": ".", "client": None, "install_inventory_disabled": False,
                               "install_inventory_interval_seconds": 86_400.0}
    base.update(kw)
    return argparse.Namespace(**base)


def _emit(emitter: InventoryEmitter, state: StateStore | None, observed: str) -> list[dict[str, object]]:
    """Run the hook the way the pipeline does: events, then the commit in one transaction."""
    events, commit = emitter.events(state, observed)
    if commit is not None:
        if state is not None:
            with state.transaction() as conn:
                commit(conn)
        else:
            commit(None)
    return events


def test_INV_3_hook_disabled_filtered_and_on(tmp_path: Path) -> None:
    assert inventory_hook(_ns(install_inventory_disabled=True)) is None
    assert inventory_hook(_ns(client=["claude"])) is None  # skipped when --client filters
    hook = inventory_hook(_ns(root=str(make_home(tmp_path)), install_inventory_interval_seconds=0))
    assert hook is not None
    events, commit = hook(None, "2026-01-01T00:00:00.000Z")
    assert commit is not None
    summary = events[-1]
    assert summary["event"]["action"] == "inventory_summary"
    assert summary["telltale"]["inventory"]["installed"] == ["claude", "copilot"]
    per_agent = [e for e in events if e["event"]["action"] == "inventory"]
    assert len(per_agent) == len(AGENTS)
    assert all(e["event"]["dataset"] == "telltale.inventory" for e in events)


def test_INV_3_emitter_cadence_and_emit_on_change(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    clock = [1000.0]
    emitter = InventoryEmitter(
        lambda: take_inventory(str(home), {}, "linux", path_env="", consult_system=False), 600.0,
        clock=lambda: clock[0],
    )
    state = StateStore(str(tmp_path / "state" / "state.db"))
    try:
        first = _emit(emitter, state, "2026-01-01T00:00:00.000Z")
        summary = first[-1]
        assert summary["telltale"]["inventory"]["previous_digest"] is None  # type: ignore[index]
        assert state.meta(META_DIGEST) == summary["telltale"]["inventory"]["digest"].encode()  # type: ignore[index]

        clock[0] += 60  # not due yet
        assert _emit(emitter, state, "t") == []
        clock[0] += 600  # due, unchanged: nothing
        assert _emit(emitter, state, "t") == []

        (home / ".bun" / "install" / "global" / "node_modules" / "@openai" / "codex").mkdir(parents=True)
        clock[0] += 601
        second = _emit(emitter, state, "t2")
        inv = second[-1]["telltale"]["inventory"]  # type: ignore[index]
        assert "codex" in inv["installed"]
        assert inv["previous_digest"] == summary["telltale"]["inventory"]["digest"]  # type: ignore[index]
        assert second[-1]["event"]["id"] != summary["event"]["id"]  # type: ignore[index]

        # A new process (new emitter) with the same state: no re-emit of the same inventory.
        fresh = InventoryEmitter(
            lambda: take_inventory(str(home), {}, "linux", path_env="", consult_system=False), 0.0,
        )
        assert _emit(fresh, state, "t3") == []
    finally:
        state.close()


def test_digest_is_not_recorded_unless_the_commit_runs(tmp_path: Path) -> None:
    """Events lost in a crash before the commit are emitted again by the next scan."""
    home = make_home(tmp_path)
    state = StateStore(str(tmp_path / "state" / "state.db"))
    try:
        emitter = InventoryEmitter(lambda: take_inventory(str(home), {}, "linux", path_env="", consult_system=False),
                                   0.0)
        events, _commit = emitter.events(state, "t")  # the scan dies before committing
        assert events
        again = InventoryEmitter(lambda: take_inventory(str(home), {}, "linux", path_env="", consult_system=False),
                                 0.0)
        assert _emit(again, state, "t2")
    finally:
        state.close()


def test_emitter_without_state_remembers_in_memory(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    emitter = InventoryEmitter(lambda: take_inventory(str(home), {}, "linux", path_env="", consult_system=False), 0.0)
    assert len(_emit(emitter, None, "t")) == len(AGENTS) + 1
    assert _emit(emitter, None, "t") == []


def test_emitter_failure_never_fails_the_scan(capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> object:
        raise OSError("FAKE detail with /secret/path")

    emitter = InventoryEmitter(broken, 0.0)  # type: ignore[arg-type]
    assert emitter.events(None, "t") == ([], None)
    err = capsys.readouterr().err
    assert "inventory skipped: OSError" in err and "/secret/path" not in err


def test_inventory_event_ids_follow_the_snapshot(tmp_path: Path) -> None:
    snap = take_inventory(str(make_home(tmp_path)), {}, "linux", path_env="", consult_system=False)
    a = inventory_events(snap, observed_at="t", previous_digest=None)
    b = inventory_events(snap, observed_at="later", previous_digest="f" * 32)
    assert [e["event"]["id"] for e in a] == [e["event"]["id"] for e in b]
    assert len({e["event"]["id"] for e in a}) == len(a)
    assert "FAKEFAKE" not in json.dumps(a) and str(tmp_path) not in json.dumps(a)
