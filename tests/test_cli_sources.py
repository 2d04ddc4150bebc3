"""``telltale sources``: JSON lines when piped, a table on a terminal, clear failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from telltale.cli.main import main
from telltale.cli.sources import display_path

#: One minimal (empty) file per source kind, laid out below a synthetic home.
HOME_LAYOUT = {
    "codex.sessions": ".codex/sessions/2026/05/01/rollout-2026-05-01T00-00-00-a.jsonl",
    "codex.archived_sessions": ".codex/archived_sessions/rollout-b.jsonl.zst",
    "codex.headless_sessions": ".codex/headless/rollout-c.jsonl",
    "claude.projects": ".claude/projects/-home-u-app/0b7e7c9e.jsonl",
    "qwen.projects": ".qwen/projects/abc/chats/q.jsonl",
    "openclaw.agents": ".openclaw/agents/main/sessions/o.jsonl.reset.2026-05-01",
    "openclaw.sqlite": ".openclaw/agents/main/agent/openclaw-agent.sqlite",
    "opencode.sqlite": ".local/share/opencode/opencode.db",
    "copilot.process_log": "projects/app/logs/copilot/process-1714521600000-42.log",
    "copilot.session_state": ".copilot/session-state/9f1c/events.jsonl",
}

#: Look-alikes that must not be discovered.
DECOYS = [
    ".codex/sessions/2026/05/01/notes.txt",
    ".codex/log/codex-tui.log",
    ".claude/settings.json",
    ".claude/history.jsonl",
    ".qwen/projects/abc/q.jsonl",
    ".openclaw/agents/main/sessions/o.trajectory.jsonl",
    ".local/share/opencode/opencode.db-wal",
    ".local/share/opencode/opencode-beta.db",  # channels are environment-mode only
    ".local/share/opencode/storage/session/x.json",
    ".copilot/logs/process-1714521600000-42.log",
    ".copilot/session-state/9f1c/workspace.yaml",
    ".copilot/session-store.db",
    "logs/copilot/root-is-not-a-project.log",
]


def touch(base: Path, relative: str) -> Path:
    path = base.joinpath(*relative.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.slow
def test_CAND_2_end_to_end_subprocess_finds_each_kind_and_nothing_else(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for relative in [*HOME_LAYOUT.values(), *DECOYS]:
        touch(home, relative)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "SYSTEMROOT")}
    env["HOME"] = str(tmp_path / "elsewhere")
    proc = subprocess.run(
        [sys.executable, "-m", "telltale", "sources", "--json", "--root", str(home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    records = lines(proc.stdout)
    assert all(r["type"] == "source" for r in records)
    assert {r["kind"]: r["path"] for r in records} == {k: str(home / v) for k, v in HOME_LAYOUT.items()}
    assert len(records) == len(HOME_LAYOUT)
    by_kind = {r["kind"]: r for r in records}
    assert by_kind["copilot.process_log"]["found_by"] == "project:projects"
    assert by_kind["copilot.process_log"]["root_type"] == "project_local"
    assert by_kind["codex.sessions"]["root_type"] == "codex_home"
    assert by_kind["opencode.sqlite"]["root_type"] == "data_home"
    assert {r["found_by"] for r in records} == {"explicit_root", "project:projects"}
    assert set(records[0]) == {"type", "client", "kind", "path", "path_hash", "root_type", "found_by", "store_root"}
    # The hash alerts and activity events carry resolves to its store here.
    from telltale.events.envelope import path_hash

    assert all(r["path_hash"] == path_hash(r["path"]) for r in records)
    assert proc.stderr == ""


def test_cli_json_when_piped_and_errors_after_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    touch(tmp_path, ".claude/projects/p/a.jsonl")
    (tmp_path / ".claude/projects/p/b.jsonl").symlink_to(tmp_path / "nowhere")
    code = main(["sources", "--root", str(tmp_path), "--client", "claude"])
    out = capsys.readouterr()
    records = lines(out.out)
    assert [r["type"] for r in records] == ["source", "error"]
    assert records[1] == {
        "type": "error",
        "reason": "symlink",
        "path": str(tmp_path / ".claude/projects/p/b.jsonl"),
        "detail": "symbolic link not followed",
    }
    assert code == 0  # a usable store was found: the rejected link is a warning


def test_cli_table_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tmp_path, ".claude/projects/p/a.jsonl")
    touch(tmp_path, ".codex/sessions/[bold]x.jsonl")  # no markup interpretation
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "400")  # wide enough that no path is folded
    code = main(["sources", "--root", str(tmp_path), "--client", "claude,codex"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Session stores" in out and "claude.projects" in out and "codex.sessions" in out
    assert "[bold]x.jsonl" in out
    assert not out.lstrip().startswith("{")


def test_cli_json_flag_wins_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tmp_path, ".claude/projects/p/a.jsonl")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["sources", "--json", "--root", str(tmp_path)]) == 0
    assert lines(capsys.readouterr().out)[0]["kind"] == "claude.projects"


def test_cli_no_stores_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sources", "--root", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 1
    assert {r["type"] for r in lines(out.out)} == {"probe"}  # every place looked in
    assert "no session stores found" in out.err and str(tmp_path) in out.err


def test_cli_nothing_usable_lists_every_place_probed_with_status_and_variables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "sessions").write_text("")  # a file where a directory belongs
    (tmp_path / ".qwen" / "projects").mkdir(parents=True)  # exists, nothing in it
    (tmp_path / ".claude" / "projects" / "p").mkdir(parents=True)
    (tmp_path / ".claude" / "projects" / "p" / "s.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    code = main(["sources", "--json", "--root", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 1
    probes = {r["path"]: r for r in lines(out.out) if r["type"] == "probe"}
    assert probes[str(tmp_path / ".codex" / "sessions")]["status"] == "not_a_directory"
    assert probes[str(tmp_path / ".qwen" / "projects")]["status"] == "empty"
    assert probes[str(tmp_path / ".claude" / "projects")]["status"] == "rejected_link"
    assert probes[str(tmp_path / ".copilot" / "session-state")]["status"] == "missing"
    assert "CLAUDE_CONFIG_DIR" in probes[str(tmp_path / ".claude" / "projects")]["variables"]
    assert probes[str(tmp_path / ".codex" / "sessions")]["variables"][0] == "CODEX_HOME"
    assert "COPILOT_HOME" in probes[str(tmp_path / ".copilot" / "session-state")]["variables"]
    assert "places probed" in out.err


def test_probe_status_names_what_was_in_the_way() -> None:
    from telltale.discovery.api import DiscoveryIssue
    from telltale.discovery.core import probe_status

    d = "/h/.claude/projects"
    assert probe_status(d, False, False, [DiscoveryIssue("unreadable", d, "EACCES")]) == "permission_denied"
    assert probe_status(d, True, False, [DiscoveryIssue("unreadable", d + "/p", "EPERM")]) == "permission_denied"
    assert probe_status(d, False, False, [DiscoveryIssue("unreadable", d, "EIO")]) == "unreadable"
    assert probe_status(d, True, False, [DiscoveryIssue("symlink", d + "/p/s.jsonl")]) == "rejected_link"
    assert probe_status(d, True, True, [DiscoveryIssue("symlink", d + "/p/s.jsonl")]) == "found"
    assert probe_status(d, False, False, []) == "missing"
    assert probe_status(d, True, False, []) == "empty"


def test_cli_missing_root_reports_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sources", "--json", "--root", str(tmp_path / "missing")])
    out = capsys.readouterr()
    assert code == 2  # a usage error: a typo is never "a host without agents"
    assert out.out == ""
    assert "--root" in out.err and "does not exist" in out.err


def test_cli_unknown_client_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sources", "--root", str(tmp_path), "--client", "no-such-agent"])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown client no-such-agent" in err and "Traceback" not in err


def test_cli_malformed_project_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "projects.yaml"
    cfg.write_text("projects: ghp_FAKEFAKEFAKEFAKEFAKE\n", encoding="utf-8")
    code = main(["sources", "--root", str(tmp_path), "--project-config", str(cfg)])
    err = capsys.readouterr().err
    assert code == 2
    assert str(cfg) in err and "'projects' must be a list" in err
    assert "ghp_FAKE" not in err and "Traceback" not in err


def test_cli_non_utf8_path_is_printable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / ".claude/projects"
    base.mkdir(parents=True)
    with open(os.fsencode(base) + b"/s\xff.jsonl", "wb"):
        pass
    assert main(["sources", "--root", str(tmp_path)]) == 0
    (record,) = lines(capsys.readouterr().out)
    assert record["path"] == str(base) + "/s\\xff.jsonl"
    assert display_path("plain") == "plain"
    assert display_path("a\udcffb") == "a\\xffb"
    assert display_path("a\ud800b") == "a\\ud800b"  # not a surrogate escape (Windows-style)


def test_cli_help_lists_sources(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sources", "--help"])
    assert "--project-config" in capsys.readouterr().out
