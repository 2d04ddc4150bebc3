"""Cline-family posture: MCP servers and auto-approval from the extensions' own settings files."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import msgspec

from telltale.inventory import take_inventory
from telltale.inventory.posture import READERS, PostureContext


def _ctx(home: Path, env: dict[str, str] | None = None, platform: str = "linux") -> PostureContext:
    return PostureContext(home=str(home), env=env or {}, platform=platform, system_root=None)


def _write(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_cline_mcp_servers_auto_approve_and_no_values(tmp_path: Path) -> None:
    token = "ghp_" + secrets.token_hex(18)  # secret-shaped, generated at test time
    storage = tmp_path / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
    _write(storage / "settings" / "cline_mcp_settings.json", {"mcpServers": {
        "github": {"command": "/usr/local/bin/npx", "args": ["-y", "server-github"],
                   "env": {"GITHUB_TOKEN": token}, "autoApprove": ["create_issue"], "disabled": False},
        "docs": {"type": "streamableHttp", "url": f"https://mcp.example.test/mcp?key={token}",
                 "headers": {"Authorization": f"Bearer {token}"}, "disabled": True},
    }})
    # The same file of the Cline CLI, relocated by CLINE_DIR.
    _write(tmp_path / "cli" / "data" / "settings" / "cline_mcp_settings.json",
           {"mcpServers": {"local": {"command": "node", "args": ["srv.js"]}}})
    posture = READERS["cline"](_ctx(tmp_path, {"CLINE_DIR": str(tmp_path / "cli")}))
    servers = {(s.name, s.scope): s for s in posture.mcp_servers}
    gh = servers[("github", "user")]
    assert (gh.transport, gh.command, gh.env_names, gh.enabled) == ("stdio", "npx", ["GITHUB_TOKEN"], True)
    docs = servers[("docs", "user")]
    assert (docs.transport, docs.url_host, docs.header_names, docs.enabled) == (
        "http", "mcp.example.test", ["Authorization"], False)
    assert servers[("local", "cli")].command == "node"
    assert "mcp_tools_auto_approved" in posture.notes
    assert [(f.role, f.status) for f in posture.files] == [("mcp_settings", "ok"), ("mcp_settings", "ok")]
    encoded = msgspec.json.encode(posture).decode()
    assert token not in encoded and "server-github" not in encoded


def test_roo_and_kilo_mcp_and_allowed_commands_in_any_editor(tmp_path: Path) -> None:
    user = tmp_path / "Library" / "Application Support" / "Cursor" / "User"
    _write(user / "globalStorage" / "rooveterinaryinc.roo-cline" / "settings" / "mcp_settings.json",
           {"mcpServers": {"fs": {"command": "npx", "alwaysAllow": ["read_file"]}}})
    (user / "settings.json").write_text(
        '{\n  // JSONC, as VS Code writes it\n  "roo-cline.allowedCommands": ["git log", "*"],\n'
        '  "kilo-code.deniedCommands": ["rm"],\n}\n', encoding="utf-8")
    roo = READERS["roo"](_ctx(tmp_path, platform="darwin"))
    assert [s.name for s in roo.mcp_servers] == ["fs"]
    assert {"mcp_tools_auto_approved", "auto_approved_commands", "auto_approved_commands_all"} <= set(roo.notes)
    kilo = READERS["kilo"](_ctx(tmp_path, platform="darwin"))
    assert kilo.mcp_servers == []
    assert kilo.notes == ["denied_commands"]


def test_malformed_settings_are_noted_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / ".config" / "Code" / "User" / "globalStorage" / "kilocode.kilo-code" / "settings"
    path.mkdir(parents=True)
    (path / "mcp_settings.json").write_text("{not json", encoding="utf-8")
    posture = READERS["kilo"](_ctx(tmp_path))
    assert [(f.role, f.status) for f in posture.files] == [("mcp_settings", "malformed")]


def test_inventory_shows_the_installed_extension_with_its_posture(tmp_path: Path) -> None:
    storage = tmp_path / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
    _write(storage / "settings" / "cline_mcp_settings.json", {"mcpServers": {"a": {"command": "uvx"}}})
    (tmp_path / ".vscode" / "extensions" / "saoudrizwan.claude-dev-3.17.0").mkdir(parents=True)
    snapshot = take_inventory(str(tmp_path), {"HOME": str(tmp_path)}, "linux", path_env="", consult_system=False)
    cline = next(a for a in snapshot.agents if a.agent == "cline")
    assert cline.installed
    assert cline.posture is not None
    assert [s.name for s in cline.posture.mcp_servers] == ["a"]
