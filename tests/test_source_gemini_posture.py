"""Gemini CLI posture: approval mode, the YOLO lock and the sandbox from settings.json
(v2 nested and v1 flat shapes), metadata only."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from telltale.inventory.model import Posture
from telltale.inventory.posture import PostureContext
from telltale.sources.gemini.posture import read_gemini


def posture_of(tmp_path: Path, settings: dict[str, object] | str) -> Posture:
    folder = tmp_path / ".gemini"
    folder.mkdir(exist_ok=True)
    text = settings if isinstance(settings, str) else json.dumps(settings)
    (folder / "settings.json").write_text(text)
    (folder / "oauth_creds.json").write_text('{"refresh_token": "never-read"}')
    return read_gemini(PostureContext(home=str(tmp_path), env={}, platform="linux", system_root=None))


@pytest.mark.parametrize(
    ("settings", "permission", "sandbox", "notes"),
    [
        ({"general": {"defaultApprovalMode": "auto_edit"}, "security": {"disableYoloMode": True},
          "tools": {"sandbox": "docker"}}, "auto_edit", "docker", ["yolo_disabled"]),
        ({"general": {"defaultApprovalMode": "plan"}, "tools": {"sandbox": False}}, "plan", "disabled", []),
        ({"autoAccept": True, "sandbox": True}, "auto_accept", "enabled", []),  # v1 flat settings
        ({"tools": {"autoAccept": False}}, None, None, []),
        ({"general": {"defaultApprovalMode": 7}, "tools": {"sandbox": [1]}}, None, None,
         ["approval_malformed", "sandbox_malformed"]),
    ],
)
def test_approval_yolo_and_sandbox(tmp_path: Path, settings: dict[str, object], permission: str | None,
                                   sandbox: str | None, notes: list[str]) -> None:
    p = posture_of(tmp_path, settings)
    assert (p.permission_mode, p.sandbox_mode) == (permission, sandbox)
    assert sorted(p.notes) == sorted(notes)


def test_mcp_servers_are_metadata_only(tmp_path: Path) -> None:
    secret = "sk-" + "x" * 24
    p = posture_of(tmp_path, {"mcpServers": {"db": {"command": "/usr/bin/node", "args": ["--token", secret],
                                                    "env": {"DB_PASSWORD": secret}},
                                             "web": {"httpUrl": "https://mcp.example.test/x?key=" + secret}}})
    encoded = msgspec.json.encode(p).decode()
    assert secret not in encoded
    assert {s.name: (s.transport, s.command, s.url_host, s.env_names) for s in p.mcp_servers} == {
        "db": ("stdio", "node", None, ["DB_PASSWORD"]), "web": ("http", None, "mcp.example.test", []),
    }
