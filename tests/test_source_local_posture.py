"""Goose and Crush posture: MCP servers, permission mode and allowlists, never a secret."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import msgspec

from telltale.inventory.posture import READERS, PostureContext
from telltale.sources.crush.posture import read_crush
from telltale.sources.goose.posture import read_goose


def _ctx(home: Path, env: dict[str, str] | None = None, platform: str = "linux") -> PostureContext:
    return PostureContext(home=str(home), env=env or {}, platform=platform, system_root=None)


def test_goose_mode_and_extensions_without_secrets(tmp_path: Path) -> None:
    token = "ghp_" + secrets.token_hex(18)
    config = tmp_path / ".config" / "goose" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"""
GOOSE_PROVIDER: anthropic
GOOSE_MODE: auto
OPENAI_API_KEY: {token}
extensions:
  developer: {{bundled: true, enabled: true, name: developer, type: builtin}}
  github:
    cmd: /usr/local/bin/npx
    args: [-y, "@modelcontextprotocol/server-github", --token, {token}]
    enabled: true
    envs: {{GITHUB_TOKEN: {token}}}
    type: stdio
  remote:
    type: streamable_http
    uri: "https://mcp.example.invalid/x?key={token}"
    headers: {{Authorization: {token}}}
""")
    posture = read_goose(_ctx(tmp_path))
    encoded = msgspec.json.encode(posture).decode()
    assert token not in encoded
    assert posture.permission_mode == "auto"
    servers = {s.name: s for s in posture.mcp_servers}
    assert set(servers) == {"github", "remote"}
    assert servers["github"].command == "npx" and servers["github"].env_names == ["GITHUB_TOKEN"]
    assert (servers["remote"].transport, servers["remote"].url_host) == ("http", "mcp.example.invalid")
    assert servers["remote"].header_names == ["Authorization"]
    assert "builtin_extensions_1" in posture.notes
    assert READERS["goose"] is read_goose


def test_goose_paths_environment_and_malformed_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    (root / "config" / "config.yaml").write_text("GOOSE_MODE: approve\n")
    assert read_goose(_ctx(tmp_path, {"GOOSE_PATH_ROOT": str(root)})).permission_mode == "approve"
    assert read_goose(_ctx(tmp_path, {"GOOSE_PATH_ROOT": str(root), "GOOSE_MODE": "chat"})).permission_mode == "chat"
    win = tmp_path / "AppData" / "Roaming" / "Block" / "goose" / "config" / "config.yaml"
    win.parent.mkdir(parents=True)
    win.write_text("extensions: [not, a, mapping]\nGOOSE_MODE: smart_approve\n")
    posture = read_goose(_ctx(tmp_path, platform="win32"))
    assert posture.permission_mode == "smart_approve" and "extensions_malformed" in posture.notes
    bad = tmp_path / ".config" / "goose" / "config.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text("GOOSE_MODE: [unclosed\n")
    assert [f.status for f in read_goose(_ctx(tmp_path)).files] == ["malformed"]


def test_crush_servers_and_allowlist_without_provider_keys(tmp_path: Path) -> None:
    token = "sk-" + secrets.token_hex(24)
    config = tmp_path / ".config" / "crush" / "crush.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({
        "providers": {"openai": {"api_key": token}},
        "mcp": {"fs": {"type": "stdio", "command": "/opt/bin/mcp-fs", "args": ["--key", token],
                       "env": {"FS_TOKEN": token}},
                "web": {"type": "http", "url": f"https://api.example.invalid/mcp?token={token}",
                        "headers": {"X-Key": token}, "disabled": True}},
        "permissions": {"allowed_tools": ["bash", "edit", "mcp_fs_read"]},
    }))
    posture = read_crush(_ctx(tmp_path))
    assert token not in msgspec.json.encode(posture).decode()
    servers = {s.name: s for s in posture.mcp_servers}
    assert servers["fs"].command == "mcp-fs" and servers["fs"].env_names == ["FS_TOKEN"]
    assert (servers["web"].transport, servers["web"].url_host, servers["web"].enabled) == (
        "http", "api.example.invalid", False)
    assert "allowed_tools_3" in posture.notes
    assert READERS["crush"] is read_crush
    elsewhere = tmp_path / "g"
    elsewhere.mkdir()
    (elsewhere / "crush.json").write_text('{"permissions": {"skip_requests": true}}')
    assert "permissions_skip_requests" in read_crush(_ctx(tmp_path, {"CRUSH_GLOBAL_CONFIG": str(elsewhere)})).notes
