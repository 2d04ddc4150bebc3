"""Cursor posture and install inventory: MCP servers, the CLI's approval mode, allowlists."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import msgspec

from telltale.inventory import take_inventory
from telltale.inventory.posture import READERS, PostureContext
from telltale.sources.cursor.posture import read_cursor


def _ctx(home: Path, env: dict[str, str] | None = None) -> PostureContext:
    return PostureContext(home=str(home), env=env or {}, platform="linux", system_root=None)


def test_posture_reads_mcp_cli_mode_and_allowlists_without_secrets(tmp_path: Path) -> None:
    token = "crsr_" + secrets.token_hex(20)
    folder = tmp_path / ".cursor"
    folder.mkdir()
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": {
        "github": {"command": "/opt/bin/npx", "args": ["-y", "@scope/server", "--token", token],
                   "env": {"GITHUB_TOKEN": token}},
        "remote": {"url": f"https://mcp.example.invalid/sse?key={token}", "headers": {"Authorization": token}},
    }}))
    (folder / "cli-config.json").write_text(json.dumps({
        "version": 1, "approvalMode": "unrestricted", "authInfo": {"accessToken": token, "email": "a@example.invalid"},
        "permissions": {"allow": ["Shell(**)", "Read(**)"], "deny": []}}))
    (folder / "permissions.json").write_text('// comment\n{"terminalAllowlist": ["git", "npm"], "autoRun": {"x": 1}}')
    posture = read_cursor(_ctx(tmp_path))
    encoded = msgspec.json.encode(posture).decode()
    assert token not in encoded and "a@example.invalid" not in encoded
    assert posture.permission_mode == "unrestricted"
    servers = {s.name: s for s in posture.mcp_servers}
    assert servers["github"].command == "npx" and servers["github"].env_names == ["GITHUB_TOKEN"]
    assert servers["remote"].transport == "http" and servers["remote"].url_host == "mcp.example.invalid"
    assert servers["remote"].header_names == ["Authorization"]
    assert {"cli_allow_rules_2", "terminal_allowlist_2", "auto_run_guidance"} <= set(posture.notes)
    assert [f.status for f in posture.files] == ["ok", "ok", "ok"]
    assert READERS["cursor"] is read_cursor


def test_posture_cli_config_dir_variables_and_missing_files(tmp_path: Path) -> None:
    elsewhere = tmp_path / "cfg"
    elsewhere.mkdir()
    (elsewhere / "cli-config.json").write_text(json.dumps({"approvalMode": "allowlist"}))
    assert read_cursor(_ctx(tmp_path, {"CURSOR_CONFIG_DIR": str(elsewhere)})).permission_mode == "allowlist"
    xdg = tmp_path / "xdg" / "cursor"
    xdg.mkdir(parents=True)
    (xdg / "cli-config.json").write_text("{not json")
    posture = read_cursor(_ctx(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}))
    assert [f.status for f in posture.files] == ["missing", "malformed", "missing"]
    assert posture.permission_mode is None


def test_inventory_reports_cursor_with_posture(tmp_path: Path) -> None:
    (tmp_path / ".cursor" / "extensions").mkdir(parents=True)
    (tmp_path / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"fs": {"command": "mcp-fs"}}}))
    snapshot = take_inventory(home=str(tmp_path), env={"HOME": str(tmp_path), "PATH": ""}, platform="linux")
    cursor = snapshot.agent("cursor")
    assert cursor.installed and cursor.posture is not None
    assert [s.name for s in cursor.posture.mcp_servers] == ["fs"]
