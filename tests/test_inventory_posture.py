"""Configuration posture: retention, telemetry, MCP servers; secrets never leave the reader."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from telltale.inventory import McpServer, Posture, Retention, path_hash, take_inventory
from telltale.inventory.posture import (
    CLAUDE_GLOBAL_BOUND,
    SETTINGS_BOUND,
    PostureContext,
    command_basename,
    parse_age_days,
    read_bounded,
    read_claude,
    read_codex,
    read_gemini,
    read_opencode,
    read_qwen,
    strip_jsonc,
    truthy,
    url_host,
)

FIXTURE = Path(__file__).parent / "fixtures" / "inventory"
#: Every fake secret in the fixture tree; none may appear in any output.
SECRETS = (
    "FAKEFAKE", "sk-ant", "ghp_", "FAKEPASSWORD", "FAKEQUERYSECRET", "FAKEDBPASSWORD", "FAKEREGIONVALUE",
    "fakeuser", "FAKE PROMPT", "secret-project", "fake.user@example", "server-github", "context7-mcp",
    "fake-mcp-command", "server.js", "/opt/tools",
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    dst = tmp_path / "home"
    shutil.copytree(FIXTURE / "home", dst)
    return dst


@pytest.fixture
def system(tmp_path: Path) -> Path:
    dst = tmp_path / "system"
    shutil.copytree(FIXTURE / "system", dst)
    return dst


def ctx(home: Path, *, env: dict[str, str] | None = None, system: Path | None = None,
        platform: str = "linux") -> PostureContext:
    return PostureContext(home=str(home), env=env or {}, platform=platform,
                          system_root=str(system) if system else None)


def assert_no_secret(posture: Posture | object) -> None:
    data = msgspec.json.encode(posture).decode()
    for secret in SECRETS:
        assert secret not in data, secret


def server(posture: Posture, name: str, scope: str = "user") -> McpServer:
    matches = [s for s in posture.mcp_servers if s.name == name and s.scope == scope]
    assert len(matches) == 1, (name, scope, posture.mcp_servers)
    return matches[0]


# -- Claude Code ------------------------------------------------------------------------------


def test_claude_retention_explicit_telemetry_and_permissions(home: Path) -> None:
    p = read_claude(ctx(home))
    assert p.retention == Retention(deletes_sessions=True, source="settings", days=14)
    t = p.telemetry
    assert t.otel_export is True
    assert t.exporters == ["console", "otlp"]
    assert t.endpoint_hosts == ["collector.example.test"]
    assert t.error_reporting is False
    assert t.vendor_analytics is None and t.prompt_logging is None  # not set in the files
    assert p.permission_mode == "acceptEdits"
    assert [(f.role, f.status) for f in p.files] == [("user_settings", "ok"), ("global_config", "ok")]
    assert_no_secret(p)


def test_claude_retention_default_is_30_days(tmp_path: Path) -> None:
    empty = tmp_path / "h"
    (empty / ".claude").mkdir(parents=True)
    p = read_claude(ctx(empty))
    assert p.retention == Retention(deletes_sessions=True, source="default", days=30)
    assert [(f.role, f.status) for f in p.files] == [("user_settings", "missing"), ("global_config", "missing")]
    assert p.mcp_servers == [] and p.telemetry.otel_export is None


def test_claude_managed_settings_override_user(home: Path, system: Path) -> None:
    p = read_claude(ctx(home, system=system))
    assert p.retention == Retention(deletes_sessions=True, source="managed", days=90)
    assert p.permission_mode == "default"
    assert p.telemetry.vendor_analytics is False  # DISABLE_TELEMETRY from managed settings
    assert p.telemetry.otel_export is True  # the user's setting is kept where managed is silent
    roles = [(f.role, f.status) for f in p.files]
    assert ("managed_settings", "ok") in roles and ("managed_mcp", "missing") in roles


@pytest.mark.parametrize(("platform", "parts"), [
    ("darwin", ("Library", "Application Support", "ClaudeCode")),
    ("win32", ("ProgramData", "ClaudeCode")),
])
def test_claude_managed_settings_paths_per_platform(home: Path, tmp_path: Path, platform: str,
                                                    parts: tuple[str, ...]) -> None:
    system = tmp_path / "sys"
    managed = system.joinpath(*parts)
    managed.mkdir(parents=True)
    (managed / "managed-settings.json").write_text('{"cleanupPeriodDays": 7}')
    (managed / "managed-mcp.json").write_text('{"mcpServers": {"corp": {"type": "http", "url": "https://mcp.corp.test/x"}}}')
    p = read_claude(ctx(home, system=system, platform=platform))
    assert p.retention == Retention(deletes_sessions=True, source="managed", days=7)
    assert server(p, "corp", "managed").url_host == "mcp.corp.test"


def test_claude_mcp_servers_names_hosts_and_env_names_only(home: Path) -> None:
    p = read_claude(ctx(home))
    gh = server(p, "github")
    assert (gh.transport, gh.command, gh.url_host) == ("stdio", "npx", None)
    assert gh.env_names == ["GITHUB_PERSONAL_ACCESS_TOKEN"]
    docs = server(p, "docs")
    assert (docs.transport, docs.command, docs.url_host, docs.header_names) == (
        "http", None, "mcp.example.test", ["Authorization"])
    legacy = server(p, "legacy")
    assert (legacy.transport, legacy.command) == ("stdio", "mcp-legacy")
    db = server(p, "db", "project")
    assert (db.transport, db.url_host, db.env_names) == ("sse", "127.0.0.1", ["DB_PASSWORD"])
    assert db.project_hash == path_hash("/home/fake/work/secret-project")
    assert "mcp_entry_malformed" in p.notes  # "broken" is skipped, the rest kept
    assert {s.name for s in p.mcp_servers} == {"github", "docs", "legacy", "db"}
    assert_no_secret(p)


def test_claude_config_dir_env(home: Path, tmp_path: Path) -> None:
    alt = tmp_path / "alt"
    alt.mkdir()
    (alt / "settings.json").write_text('{"cleanupPeriodDays": 365}')
    (alt / ".claude.json").write_text('{"mcpServers": {"only-here": {"command": "uvx"}}}')
    p = read_claude(ctx(home, env={"CLAUDE_CONFIG_DIR": str(alt)}))
    assert p.retention is not None and p.retention.days == 365
    assert [s.name for s in p.mcp_servers] == ["only-here"]
    # A relative CLAUDE_CONFIG_DIR is ignored.
    assert read_claude(ctx(home, env={"CLAUDE_CONFIG_DIR": "alt"})).retention == Retention(
        deletes_sessions=True, source="settings", days=14)


@pytest.mark.parametrize(("content", "note", "status"), [
    (b'{"cleanupPeriodDays": "thirty"}', "retention_invalid", "ok"),
    (b'{"cleanupPeriodDays": -3}', "retention_invalid", "ok"),
    (b'{"cleanupPeriodDays": 0}', "retention_zero", "ok"),
    (b'{"env": ["not", "a", "map"]}', "env_malformed", "ok"),
    (b'{"cleanupPeriodDays": 10,', None, "malformed"),
    (b'[1, 2, 3]', None, "malformed"),
    (b'\xff\xfe\x00garbage', None, "malformed"),
])
def test_claude_malformed_settings_give_notes_not_crashes(tmp_path: Path, content: bytes, note: str | None,
                                                          status: str) -> None:
    h = tmp_path / "h"
    (h / ".claude").mkdir(parents=True)
    (h / ".claude" / "settings.json").write_bytes(content)
    p = read_claude(ctx(h))
    assert p.files[0].status == status
    if note:
        assert note in p.notes
    assert p.retention is not None
    if note == "retention_zero":
        assert p.retention.days == 0
    elif status == "malformed" or note == "retention_invalid":
        assert (p.retention.days, p.retention.source) == (30, "default")


def test_claude_oversized_global_config_is_not_read(tmp_path: Path) -> None:
    h = tmp_path / "h"
    h.mkdir()
    with open(h / ".claude.json", "wb") as fh:
        fh.truncate(CLAUDE_GLOBAL_BOUND + 1)
    p = read_claude(ctx(h))
    assert [(f.role, f.status) for f in p.files if f.role == "global_config"] == [("global_config", "too_large")]


# -- Codex --------------------------------------------------------------------------------------


def test_codex_config_toml(home: Path) -> None:
    p = read_codex(ctx(home))
    t = p.telemetry
    assert (t.otel_export, t.exporters, t.endpoint_hosts, t.prompt_logging, t.vendor_analytics) == (
        True, ["otlp-http"], ["otel.example.test"], True, False)
    assert (p.permission_mode, p.sandbox_mode) == ("never", "danger-full-access")
    ctx7 = server(p, "context7")
    assert (ctx7.transport, ctx7.command, ctx7.env_names) == ("stdio", "npx", ["CONTEXT7_API_KEY"])
    figma = server(p, "figma")
    assert (figma.transport, figma.url_host, figma.env_names, figma.header_names, figma.enabled) == (
        "http", "mcp.figma.example.test", ["FIGMA_OAUTH_TOKEN"], ["X-Figma-Region"], False)
    assert "mcp_entry_malformed" in p.notes and {s.name for s in p.mcp_servers} == {"context7", "figma"}
    assert p.retention is None
    assert_no_secret(p)


def test_codex_home_env_and_none_exporter(home: Path, tmp_path: Path) -> None:
    alt = tmp_path / "codex-home"
    alt.mkdir()
    (alt / "config.toml").write_text('[otel]\nexporter = "none"\n')
    p = read_codex(ctx(home, env={"CODEX_HOME": str(alt)}))
    assert (p.telemetry.otel_export, p.telemetry.exporters) == (False, ["none"])


@pytest.mark.parametrize(("content", "status", "note"), [
    ("this is = = not toml", "malformed", None),
    ('otel = "a string"', "ok", "otel_malformed"),
    ("[analytics]\nenabled = 'maybe'\n", "ok", "analytics_malformed"),
    ("mcp_servers = 3\n", "ok", "mcp_servers_malformed"),
])
def test_codex_malformed_config(tmp_path: Path, content: str, status: str, note: str | None) -> None:
    h = tmp_path / "h"
    (h / ".codex").mkdir(parents=True)
    (h / ".codex" / "config.toml").write_text(content)
    p = read_codex(ctx(h))
    assert p.files[0].status == status
    if note:
        assert note in p.notes


# -- Gemini / Qwen / OpenCode -------------------------------------------------------------------


def test_gemini_settings_with_comments(home: Path) -> None:
    p = read_gemini(ctx(home))
    assert p.files[0].status == "ok"
    assert p.retention == Retention(deletes_sessions=True, source="settings", days=14)
    t = p.telemetry
    assert (t.otel_export, t.exporters, t.endpoint_hosts, t.prompt_logging, t.vendor_analytics) == (
        True, ["local"], ["localhost"], False, False)
    weather = server(p, "weather")
    assert (weather.transport, weather.url_host, weather.header_names) == ("http", "weather.example.test",
                                                                          ["X-Api-Key"])
    fs = server(p, "fs")
    assert (fs.transport, fs.command, fs.env_names) == ("stdio", "node", ["ROOT_TOKEN"])
    assert_no_secret(p)


def test_qwen_reads_its_own_folder(home: Path) -> None:
    assert read_qwen(ctx(home)).files[0].status == "missing"
    (home / ".qwen").mkdir()
    (home / ".qwen" / "settings.json").write_text('{"usageStatisticsEnabled": false, "mcpServers": {"a": {"url": "http://h.test/sse"}}}')
    p = read_qwen(ctx(home))
    assert p.telemetry.vendor_analytics is False
    assert server(p, "a").transport == "sse"


def test_opencode_config_sharing_and_mcp(home: Path) -> None:
    p = read_opencode(ctx(home))
    assert p.sharing == "auto"
    local = server(p, "local-tools")
    assert (local.transport, local.command, local.env_names, local.enabled) == ("stdio", "bun", ["MY_ENV_VAR"], True)
    remote = server(p, "remote-tools")
    assert (remote.transport, remote.url_host, remote.header_names, remote.enabled) == (
        "http", "remote.example.test", ["Authorization"], False)
    assert_no_secret(p)


def test_opencode_v2_nested_servers(tmp_path: Path) -> None:
    folder = tmp_path / "xdg" / "opencode"
    folder.mkdir(parents=True)
    (folder / "opencode.json").write_text(
        '{"mcp": {"servers": {"s1": {"type": "local", "command": ["npx", "x"], "disabled": true}}}}')
    p = read_opencode(ctx(tmp_path / "h", env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")}))
    assert [(s.name, s.enabled) for s in p.mcp_servers] == [("s1", False)]


# -- through take_inventory -----------------------------------------------------------------------


def test_posture_only_for_installed_agents(home: Path, tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / "claude"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    snap = take_inventory(str(home), {}, "linux", path_env=str(tmp_path / "bin"), consult_system=False)
    assert snap.agent("claude").posture is not None
    assert snap.agent("codex").posture is None  # config exists but codex is not installed
    assert snap.agent("copilot").posture is None
    assert_no_secret(snap)
    no_posture = take_inventory(str(home), {}, "linux", path_env=str(tmp_path / "bin"), consult_system=False,
                                posture=False)
    assert no_posture.agent("claude").posture is None


# -- read_bounded -----------------------------------------------------------------------------


def test_read_bounded_statuses(tmp_path: Path) -> None:
    ok = tmp_path / "ok.json"
    ok.write_bytes(b"x" * 10)
    assert read_bounded(str(ok), 10) == ("ok", b"x" * 10)
    assert read_bounded(str(ok), 9) == ("too_large", None)
    assert read_bounded(str(tmp_path / "missing.json"), 10) == ("missing", None)
    assert read_bounded(str(tmp_path), 10) == ("not_regular", None)
    assert read_bounded(str(ok / "below-a-file"), 10) == ("missing", None)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert read_bounded(str(fifo), 10) == ("not_regular", None)  # and it did not block
    link = tmp_path / "settings.json"
    link.symlink_to(ok)
    assert read_bounded(str(link), SETTINGS_BOUND)[0] == "ok"


@pytest.mark.parametrize("name", ["auth.json", ".credentials.json", "oauth_creds.json"])
def test_read_bounded_refuses_credential_files(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("{}")
    with pytest.raises(ValueError):
        read_bounded(str(tmp_path / name), 100)


# -- sanitizers and parsers (properties) ----------------------------------------------------------


@pytest.mark.parametrize(("command", "expected"), [
    ("npx", "npx"),
    ("npx -y @scope/pkg", "npx"),
    ("/usr/bin/python3 /home/u/server.py", "python3"),
    ("C:\\Program Files\\nodejs\\npx.cmd", "npx.cmd"),
    ('"C:\\Program Files\\tool\\mcp.exe" --token X', "mcp.exe"),
    ("  ", None),
])
def test_command_basename(command: str, expected: str | None) -> None:
    assert command_basename(command) == expected


@given(st.text(max_size=300))
def test_command_basename_never_has_separator_or_space(command: str) -> None:
    name = command_basename(command)
    if name is not None:
        assert "/" not in name and "\\" not in name and name.isprintable() and len(name) <= 128


_host = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z]{2,5}){1,2}", fullmatch=True)


@given(_host, st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=6, max_size=20),
       st.sampled_from(["http", "https", "wss"]), st.integers(1, 65535))
def test_url_host_drops_credentials_port_path_and_query(host: str, secret: str, scheme: str, port: int) -> None:
    url = f"{scheme}://user:{secret}@{host}:{port}/p/{secret}?k={secret}#{secret}"
    assert url_host(url) == host


@given(st.text(max_size=200))
def test_url_host_is_a_bare_host_or_none(url: str) -> None:
    host = url_host(url)
    if host is not None:
        assert "/" not in host and "@" not in host and "?" not in host and host == host.lower()


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6)
    | st.text(alphabet=st.sampled_from(list('ab/*,"\\ \n{}[]')), max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@given(_json)
def test_strip_jsonc_keeps_plain_json(value: object) -> None:
    data = msgspec.json.encode(value)
    assert msgspec.json.decode(strip_jsonc(data)) == value


@given(st.dictionaries(st.text(alphabet="abc/*", max_size=5), st.integers(0, 9), min_size=1, max_size=5))
def test_strip_jsonc_removes_comments_and_trailing_commas(value: dict[str, int]) -> None:
    body = ",\n".join(
        f"  // c{i}\n  {msgspec.json.encode(k).decode()}: /* x */ {v}" for i, (k, v) in enumerate(value.items())
    )
    text = "{\n" + body + ",\n}\n// end"
    assert msgspec.json.decode(strip_jsonc(text.encode())) == value


@pytest.mark.parametrize(("value", "days"), [("30d", 30), ("2w", 14), ("12h", 1), ("1m", 30), ("72h", 3),
                                             ("forever", None), ("", None), ("30", None)])
def test_parse_age_days(value: str, days: int | None) -> None:
    assert parse_age_days(value) == days


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("TRUE", True), ("on", True), ("0", False),
                                                 ("false", False), ("", False), ("maybe", None), (1, True),
                                                 (0, False), (True, True), (None, None)])
def test_truthy(value: object, expected: bool | None) -> None:
    assert truthy(value) is expected
