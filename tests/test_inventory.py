"""Installed-agent inventory: probes, confidence rules, digest, metadata-only guarantees."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.inventory import (
    AgentInventory,
    InventorySnapshot,
    Signal,
    changed,
    classify,
    inventory_due,
    path_hash,
    take_inventory,
)
from telltale.inventory.probes import AGENTS
from telltale.inventory.signals import extension_version, launcher_names, path_dirs

# -- helpers ----------------------------------------------------------------------------------


def touch_exe(path: Path, *, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    mode = 0o755 if executable else 0o644
    path.chmod(mode)
    return path


def mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def inv(home: Path, platform: str = "linux", *, path: str = "", env: dict[str, str] | None = None,
        system: Path | None = None, posture: bool = False) -> InventorySnapshot:
    return take_inventory(
        str(home), env or {}, platform, path_env=path,
        system_root=str(system) if system else None, consult_system=system is not None, posture=posture,
    )


def kinds(entry: AgentInventory) -> set[tuple[str, str, str]]:
    return {(s.kind, s.name, s.location) for s in entry.signals}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return mkdir(tmp_path / "home")


# -- INV-1: each kind of signal ----------------------------------------------------------------


def test_INV_1_executable_on_path_confirms(home: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    exe = touch_exe(bin_dir / "claude")
    snap = inv(home, path=f"/nonexistent:{bin_dir}")
    entry = snap.agent("claude")
    assert entry.installed and entry.confidence == "confirmed"
    assert entry.signals == [Signal(kind="executable", name="claude", path_hash=path_hash(str(exe)),
                                    location="PATH")]
    assert snap.agent("codex").confidence == "absent" and not snap.agent("codex").installed


def test_INV_1_posix_executable_needs_exec_bit_and_regular_file(home: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    touch_exe(bin_dir / "codex", executable=False)
    mkdir(bin_dir / "gemini")  # a directory named like a launcher is no launcher
    snap = inv(home, path=str(bin_dir))
    assert snap.agent("codex").confidence == "absent"
    assert snap.agent("gemini").confidence == "absent"


def test_INV_1_symlinked_launcher_counts(home: Path, tmp_path: Path) -> None:
    target = touch_exe(tmp_path / "lib" / "node_modules" / "@openai" / "codex" / "bin" / "codex.js")
    bin_dir = mkdir(tmp_path / "bin")
    (bin_dir / "codex").symlink_to(target)
    assert inv(home, path=str(bin_dir)).agent("codex").installed


def test_INV_1_relative_and_empty_path_entries_ignored(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    touch_exe(tmp_path / "qwen")
    assert inv(home, path=".::").agent("qwen").confidence == "absent"


def test_INV_1_path_taken_from_env_when_not_injected(home: Path, tmp_path: Path) -> None:
    touch_exe(tmp_path / "bin" / "opencode")
    snap = take_inventory(str(home), {"PATH": str(tmp_path / "bin")}, "linux", consult_system=False,
                          posture=False)
    assert snap.agent("opencode").installed


@pytest.mark.parametrize(
    ("parts", "package", "agent", "location"),
    [
        ((".npm-global", "lib", "node_modules"), "@openai/codex", "codex", "npm"),
        ((".local", "lib", "node_modules"), "@anthropic-ai/claude-code", "claude", "npm"),
        ((".nvm", "versions", "node", "v22.1.0", "lib", "node_modules"), "@qwen-code/qwen-code", "qwen", "nvm"),
        ((".local", "share", "pnpm", "global", "5", "node_modules"), "openclaw", "openclaw", "pnpm"),
        ((".bun", "install", "global", "node_modules"), "opencode-ai", "opencode", "bun"),
        ((".npm-global", "lib", "node_modules"), "@google/gemini-cli", "gemini", "npm"),
        ((".npm-global", "lib", "node_modules"), "@kilocode/cli", "kilo-code", "npm"),
    ],
)
def test_INV_1_global_node_package_roots(home: Path, parts: tuple[str, ...], package: str, agent: str,
                                         location: str) -> None:
    mkdir(home.joinpath(*parts, *package.split("/")))
    entry = inv(home).agent(agent)
    assert entry.installed and entry.confidence == "confirmed"
    assert kinds(entry) == {("package", package, location)}


def test_INV_1_system_and_env_package_roots(home: Path, tmp_path: Path) -> None:
    system = mkdir(tmp_path / "sys")
    mkdir(system / "usr" / "local" / "lib" / "node_modules" / "@openai" / "codex")
    prefix = mkdir(tmp_path / "prefix")
    mkdir(prefix / "lib" / "node_modules" / "@google" / "gemini-cli")
    pnpm_home = mkdir(tmp_path / "pnpm-home")
    mkdir(pnpm_home / "global" / "5" / "node_modules" / "@anthropic-ai" / "claude-code")
    env = {"NPM_CONFIG_PREFIX": str(prefix), "PNPM_HOME": str(pnpm_home)}
    snap = inv(home, env=env, system=system)
    assert kinds(snap.agent("codex")) == {("package", "@openai/codex", "npm")}
    assert kinds(snap.agent("gemini")) == {("package", "@google/gemini-cli", "npm")}
    assert kinds(snap.agent("claude")) == {("package", "@anthropic-ai/claude-code", "pnpm")}
    # Without consulting the system, /usr/local is not looked at.
    assert inv(home, env=env).agent("codex").confidence == "absent"


def test_INV_1_relative_env_prefix_ignored(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    mkdir(tmp_path / "rel" / "lib" / "node_modules" / "@openai" / "codex")
    assert inv(home, env={"NPM_CONFIG_PREFIX": "rel"}).agent("codex").confidence == "absent"


def test_INV_1_pnpm_symlinked_package_counts(home: Path, tmp_path: Path) -> None:
    store = mkdir(tmp_path / "store" / "claude-code")
    scope = mkdir(home / ".local" / "share" / "pnpm" / "global" / "5" / "node_modules" / "@anthropic-ai")
    (scope / "claude-code").symlink_to(store)
    assert inv(home).agent("claude").installed


@pytest.mark.parametrize(
    ("editor_dir", "location"),
    [
        (".vscode", "vscode"),
        (".vscode-insiders", "vscode-insiders"),
        (".vscode-oss", "vscodium"),
        (".cursor", "cursor"),
        (".windsurf", "windsurf"),
        (".vscode-server", "vscode-server"),
        (".cursor-server", "cursor-server"),
    ],
)
def test_INV_1_extension_folders_in_every_editor(home: Path, editor_dir: str, location: str) -> None:
    ext = mkdir(home / editor_dir / "extensions")
    mkdir(ext / "saoudrizwan.claude-dev-3.17.0")
    mkdir(ext / "RooVeterinaryInc.roo-cline-3.28.0")
    mkdir(ext / "kilocode.Kilo-Code-4.90.1")
    mkdir(ext / "anthropic.claude-code-2.0.14-darwin-arm64")
    mkdir(ext / "openai.chatgpt-0.4.15-linux-x64")
    snap = inv(home)
    cline = snap.agent("cline")
    assert cline.installed and cline.confidence == "confirmed"
    assert [(s.kind, s.name, s.location, s.version) for s in cline.signals] == [
        ("extension", "saoudrizwan.claude-dev", location, "3.17.0")
    ]
    assert snap.agent("roo-code").signals[0].version == "3.28.0"
    assert snap.agent("kilo-code").signals[0].name == "kilocode.kilo-code"
    assert snap.agent("claude").signals[0].version == "2.0.14-darwin-arm64"
    assert snap.agent("codex").installed


def test_INV_1_extension_prefix_does_not_match_longer_id(home: Path) -> None:
    ext = mkdir(home / ".vscode" / "extensions")
    mkdir(ext / "github.copilot-chat-0.31.0")
    mkdir(ext / "openai.chatgptish-1.0.0")
    (ext / ".obsolete").write_text("{}")
    (ext / "extensions.json").write_text("[]")
    snap = inv(home)
    assert kinds(snap.agent("copilot")) == {("extension", "github.copilot-chat", "vscode")}
    assert snap.agent("codex").confidence == "absent"


@pytest.mark.parametrize(
    ("platform", "parts", "location"),
    [
        ("linux", (".config", "Code", "User", "globalStorage"), "vscode"),
        ("linux", (".config", "Cursor", "User", "globalStorage"), "cursor"),
        ("darwin", ("Library", "Application Support", "Code", "User", "globalStorage"), "vscode"),
        ("darwin", ("Library", "Application Support", "Windsurf", "User", "globalStorage"), "windsurf"),
        ("win32", ("AppData", "Roaming", "Code - Insiders", "User", "globalStorage"), "vscode-insiders"),
        ("win32", ("AppData", "Roaming", "VSCodium", "User", "globalStorage"), "vscodium"),
        ("linux", (".vscode-server", "data", "User", "globalStorage"), "vscode-server"),
    ],
)
def test_INV_1_global_storage_presence(home: Path, platform: str, parts: tuple[str, ...], location: str) -> None:
    storage = mkdir(home.joinpath(*parts))
    mkdir(storage / "rooveterinaryinc.roo-cline" / "tasks" / "t1")
    (storage / "state.vscdb").write_bytes(b"")
    entry = inv(home, platform).agent("roo-code")
    assert entry.installed and entry.confidence == "confirmed"
    assert kinds(entry) == {("global_storage", "rooveterinaryinc.roo-cline", location)}


def test_INV_1_global_storage_of_other_platform_not_probed(home: Path) -> None:
    mkdir(home / "Library" / "Application Support" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev")
    assert inv(home, "linux").agent("cline").confidence == "absent"
    assert inv(home, "darwin").agent("cline").installed


def test_INV_1_xdg_config_home_global_storage(home: Path, tmp_path: Path) -> None:
    xdg = mkdir(tmp_path / "xdg")
    mkdir(xdg / "Code" / "User" / "globalStorage" / "github.copilot-chat")
    snap = inv(home, env={"XDG_CONFIG_HOME": str(xdg)})
    assert snap.agent("copilot").installed


def test_INV_1_cursor_and_windsurf_app_data(home: Path) -> None:
    mkdir(home / ".cursor" / "extensions")
    mkdir(home / ".windsurf" / "extensions")
    snap = inv(home)
    assert kinds(snap.agent("cursor")) == {("app_data", "cursor", "cursor")}
    assert snap.agent("cursor").installed
    assert kinds(snap.agent("windsurf")) == {("app_data", "windsurf", "windsurf")}


def test_INV_1_cursor_launchers(home: Path, tmp_path: Path) -> None:
    touch_exe(tmp_path / "bin" / "cursor-agent")
    assert kinds(inv(home, path=str(tmp_path / "bin")).agent("cursor")) == {("executable", "cursor-agent", "PATH")}


# -- Windows (platform injection) --------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".exe", ".com", ".cmd", ".bat", ".ps1", ""])
def test_INV_8_windows_launcher_suffixes(home: Path, tmp_path: Path, suffix: str) -> None:
    bin_dir = mkdir(tmp_path / "npm")
    touch_exe(bin_dir / f"gemini{suffix}", executable=False)  # no exec bit on Windows
    snap = inv(home, "win32", path=f'"{tmp_path / "none"}";{bin_dir};')
    assert kinds(snap.agent("gemini")) == {("executable", "gemini", "PATH")}
    # The same tree read as Linux: ':' separator and the exec bit matter.
    assert inv(home, "linux", path=str(bin_dir)).agent("gemini").confidence == "absent"


def test_INV_8_windows_path_env_key_is_case_insensitive(home: Path, tmp_path: Path) -> None:
    touch_exe(tmp_path / "bin" / "codex.cmd", executable=False)
    snap = take_inventory(str(home), {"Path": str(tmp_path / "bin")}, "win32", consult_system=False,
                          posture=False)
    assert snap.agent("codex").installed


def test_INV_1_windows_npm_root(home: Path) -> None:
    mkdir(home / "AppData" / "Roaming" / "npm" / "node_modules" / "@anthropic-ai" / "claude-code")
    assert kinds(inv(home, "win32").agent("claude")) == {("package", "@anthropic-ai/claude-code", "npm")}
    assert inv(home, "linux").agent("claude").confidence == "absent"


def test_INV_4_opencode_desktop_probes(home: Path) -> None:
    touch_exe(home / "AppData" / "Local" / "Programs" / "@opencode-aidesktop" / "OpenCode.exe", executable=False)
    touch_exe(home / "AppData" / "Roaming" / "ai.opencode.desktop" / "cli" / "1.2.3" / "opencode-cli.exe",
              executable=False)
    entry = inv(home, "win32").agent("opencode")
    assert entry.installed and entry.confidence == "confirmed"
    assert {(s.kind, s.name, s.version) for s in entry.signals} == {
        ("desktop_bundle", "opencode-desktop", None),
        ("desktop_bundle", "opencode-desktop-cli", "1.2.3"),
    }


def test_INV_4_opencode_desktop_needs_the_exact_executable(home: Path) -> None:
    mkdir(home / "AppData" / "Local" / "Programs" / "@opencode-aidesktop")
    mkdir(home / "AppData" / "Roaming" / "ai.opencode.desktop" / "cli" / "1.2.3" / "opencode-cli.exe")  # a dir
    assert inv(home, "win32").agent("opencode").confidence == "absent"


def test_INV_5_claude_desktop_bundle(home: Path) -> None:
    exe = touch_exe(home / "AppData" / "Roaming" / "Claude" / "claude-code" / "2.0.14" / "abc123" / "claude.exe",
                    executable=False)
    entry = inv(home, "win32").agent("claude")
    assert entry.installed and entry.confidence == "confirmed"
    assert entry.signals == [Signal(kind="desktop_bundle", name="claude-desktop", path_hash=path_hash(str(exe)),
                                    location="desktop", version="2.0.14")]


def test_INV_6_claude_desktop_msix_mirror(home: Path) -> None:
    touch_exe(home / "AppData" / "Local" / "Packages" / "Claude_pzs8sxrjxfjjc" / "LocalCache" / "Roaming" / "Claude"
              / "claude-code" / "2.1.0" / "f00d" / "claude.exe", executable=False)
    entry = inv(home, "win32").agent("claude")
    assert {(s.name, s.version) for s in entry.signals} == {("claude-desktop-packaged", "2.1.0")}


def test_INV_6_wrong_depth_is_not_the_bundle(home: Path) -> None:
    touch_exe(home / "AppData" / "Roaming" / "Claude" / "claude-code" / "2.0.14" / "claude.exe", executable=False)
    assert inv(home, "win32").agent("claude").confidence == "absent"


def test_INV_5_glob_levels_do_not_follow_symlinks(home: Path, tmp_path: Path) -> None:
    outside = mkdir(tmp_path / "outside" / "hash")
    touch_exe(outside / "claude.exe", executable=False)
    versions = mkdir(home / "AppData" / "Roaming" / "Claude" / "claude-code")
    (versions / "9.9.9").symlink_to(tmp_path / "outside")
    assert inv(home, "win32").agent("claude").confidence == "absent"


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_INV_7_no_desktop_bundle_probes_on_macos_linux(home: Path, platform: str) -> None:
    touch_exe(home / "AppData" / "Roaming" / "Claude" / "claude-code" / "2.0.14" / "abc" / "claude.exe")
    touch_exe(home / "AppData" / "Local" / "Programs" / "@opencode-aidesktop" / "OpenCode.exe")
    snap = inv(home, platform)
    assert snap.agent("claude").confidence == "absent"
    assert snap.agent("opencode").confidence == "absent"


# -- Copilot confidence (INV-8..13) ------------------------------------------------------------


def test_INV_10_copilot_launcher_alone_is_partial_not_installed(home: Path, tmp_path: Path) -> None:
    touch_exe(tmp_path / "bin" / "copilot")
    entry = inv(home, path=str(tmp_path / "bin")).agent("copilot")
    assert entry.confidence == "partial"
    assert entry.installed is False
    assert [(s.kind, s.name, s.definitive) for s in entry.signals] == [("executable", "copilot", False)]


def test_INV_10_copilot_windows_launcher_alone_is_partial(home: Path, tmp_path: Path) -> None:
    touch_exe(tmp_path / "bin" / "copilot.exe", executable=False)
    entry = inv(home, "win32", path=str(tmp_path / "bin")).agent("copilot")
    assert (entry.confidence, entry.installed) == ("partial", False)


def test_INV_11_copilot_launcher_plus_package_confirms(home: Path, tmp_path: Path) -> None:
    touch_exe(tmp_path / "bin" / "copilot")
    mkdir(home / ".npm-global" / "lib" / "node_modules" / "@github" / "copilot")
    entry = inv(home, path=str(tmp_path / "bin")).agent("copilot")
    assert (entry.confidence, entry.installed) == ("confirmed", True)
    assert kinds(entry) == {("executable", "copilot", "PATH"), ("package", "@github/copilot", "npm")}


@pytest.mark.parametrize("extension", ["github.copilot-1.372.0", "GitHub.copilot-chat-0.31.2"])
def test_INV_11_copilot_extension_alone_confirms(home: Path, extension: str) -> None:
    mkdir(home / ".vscode" / "extensions" / extension)
    entry = inv(home).agent("copilot")
    assert (entry.confidence, entry.installed) == ("confirmed", True)


def test_INV_11_copilot_global_storage_is_extension_evidence(home: Path, tmp_path: Path) -> None:
    touch_exe(tmp_path / "bin" / "copilot")
    mkdir(home / ".config" / "Code" / "User" / "globalStorage" / "github.copilot-chat")
    entry = inv(home, path=str(tmp_path / "bin")).agent("copilot")
    assert (entry.confidence, entry.installed) == ("confirmed", True)


def test_INV_12_copilot_nothing_is_absent(home: Path) -> None:
    mkdir(home / ".copilot" / "session-state")  # a store, not install evidence
    entry = inv(home).agent("copilot")
    assert (entry.confidence, entry.installed, entry.signals) == ("absent", False, [])


def test_INV_12_standalone_copilot_cli_stays_partial(home: Path) -> None:
    # Standalone installer: launcher in ~/.local/bin, no npm package, no extension.
    touch_exe(home / ".local" / "bin" / "copilot")
    entry = inv(home, path=str(home / ".local" / "bin")).agent("copilot")
    assert (entry.confidence, entry.installed) == ("partial", False)


def test_INV_13_other_agents_launcher_alone_confirms(home: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    for name in ("copilot", "codex", "claude", "qwen", "openclaw", "opencode", "gemini", "windsurf", "kilocode"):
        touch_exe(bin_dir / name)
    snap = inv(home, path=str(bin_dir))
    for agent in ("codex", "claude", "qwen", "openclaw", "opencode", "gemini", "windsurf", "kilo-code"):
        assert (snap.agent(agent).confidence, snap.agent(agent).installed) == ("confirmed", True), agent
    assert snap.agent("copilot").confidence == "partial"


def test_INV_13_only_shared_launcher_names_are_ambiguous() -> None:
    # ``copilot`` is also AWS Copilot CLI; ``goose`` is also pressly/goose (migrations).
    assert {a.agent for a in AGENTS if a.ambiguous_executables} == {"copilot", "goose"}


def test_INV_13_classify_is_the_same_rule_for_everyone() -> None:
    definitive = Signal(kind="package", name="x", path_hash="0" * 16, location="npm")
    ambiguous = Signal(kind="executable", name="x", path_hash="1" * 16, location="PATH", definitive=False)
    assert classify([]) == (False, "absent")
    assert classify([ambiguous]) == (False, "partial")
    assert classify([ambiguous, definitive]) == (True, "confirmed")
    assert classify([definitive]) == (True, "confirmed")


def test_INV_9_inventory_never_executes_anything(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    marker = tmp_path / "ran"
    bin_dir = mkdir(tmp_path / "bin")
    script = bin_dir / "copilot"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)

    def forbidden(*_a: object, **_k: object) -> None:
        raise AssertionError("inventory must not execute anything")

    monkeypatch.setattr(subprocess, "Popen", forbidden)
    monkeypatch.setattr(os, "system", forbidden)
    monkeypatch.setattr(os, "execv", forbidden)
    assert inv(home, path=str(bin_dir)).agent("copilot").confidence == "partial"
    assert not marker.exists()


# -- snapshot shape, determinism, cadence ------------------------------------------------------


def test_snapshot_lists_every_agent_in_table_order(home: Path) -> None:
    snap = inv(home)
    assert [a.agent for a in snap.agents] == [a.agent for a in AGENTS]
    assert snap.agents[:6] == [snap.agent(c) for c in ("codex", "claude", "qwen", "openclaw", "opencode", "copilot")]
    assert all(a.confidence == "absent" and a.posture is None for a in snap.agents)


def test_snapshot_is_json_encodable_and_path_free(home: Path, tmp_path: Path) -> None:
    touch_exe(tmp_path / "bin" / "claude")
    mkdir(home / ".vscode" / "extensions" / "anthropic.claude-code-2.0.14")
    snap = inv(home, path=str(tmp_path / "bin"))
    data = msgspec.json.encode(snap)
    assert str(tmp_path).encode() not in data and b"/bin" not in data
    assert msgspec.json.decode(data, type=InventorySnapshot) == snap


def test_digest_is_deterministic_and_changes_on_change(home: Path, tmp_path: Path) -> None:
    bin_dir = mkdir(tmp_path / "bin")
    first = inv(home, path=str(bin_dir))
    assert first.digest() == inv(home, path=str(bin_dir)).digest()
    assert len(first.digest()) == 32
    touch_exe(bin_dir / "codex")
    second = inv(home, path=str(bin_dir))
    assert second.digest() != first.digest()
    assert changed(second, first.digest()) and not changed(second, second.digest())
    assert changed(first, None)


def test_signals_sorted_for_a_stable_digest(home: Path) -> None:
    ext = mkdir(home / ".vscode" / "extensions")
    for version in ("1.0.0", "1.2.0", "1.1.0"):
        mkdir(ext / f"github.copilot-{version}")
    snap = inv(home)
    versions = [s.version or "" for s in snap.agent("copilot").signals]
    assert versions == ["1.0.0", "1.1.0", "1.2.0"]


def test_duplicate_path_entries_give_one_signal(home: Path, tmp_path: Path) -> None:
    touch_exe(tmp_path / "bin" / "gemini")
    snap = inv(home, path=f"{tmp_path / 'bin'}:{tmp_path / 'bin'}")
    assert len(snap.agent("gemini").signals) == 1


def test_INV_3_configurable_cadence() -> None:
    assert inventory_due(None, 100.0, 3600)
    assert not inventory_due(100.0, 200.0, 3600)
    assert inventory_due(100.0, 3700.0, 3600)
    assert inventory_due(100.0, 100.0, 0)  # 0: every scan
    assert inventory_due(500.0, 100.0, 3600)  # clock went backwards
    with pytest.raises(ValueError):
        inventory_due(None, 1.0, -1)


def test_unreadable_directory_is_skipped(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ext = mkdir(home / ".vscode" / "extensions")
    mkdir(ext / "github.copilot-1.0.0")
    real_scandir = os.scandir

    def denied(path: str) -> object:
        if os.fspath(path) == str(ext):
            raise PermissionError(13, "denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", denied)
    assert inv(home).agent("copilot").confidence == "absent"


# -- INV-2: metadata only; no store is opened or listed ---------------------------------------

_AUDIT: list[tuple[str, str]] = []
_AUDITING: list[bool] = [False]


def _hook(event: str, args: tuple[object, ...]) -> None:
    if _AUDITING[0] and event in ("open", "os.listdir", "os.scandir") and args:
        path = args[0]
        if isinstance(path, str | bytes | os.PathLike):
            _AUDIT.append((event, os.fsdecode(path)))


sys.addaudithook(_hook)


@pytest.fixture
def audit() -> Iterator[list[tuple[str, str]]]:
    _AUDIT.clear()
    _AUDITING[0] = True
    try:
        yield _AUDIT
    finally:
        _AUDITING[0] = False


def _store_home(home: Path) -> list[Path]:
    """A home with every agent store populated, plus credentials beside the settings."""
    stores = [
        home / ".claude" / "projects",
        home / ".codex" / "sessions",
        home / ".codex" / "archived_sessions",
        home / ".codex" / "headless",
        home / ".qwen" / "projects",
        home / ".qwen" / "tmp",
        home / ".gemini" / "tmp",
        home / ".openclaw" / "agents",
        home / ".local" / "share" / "opencode",
        home / ".copilot" / "session-state",
        home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev",
    ]
    for store in stores:
        mkdir(store / "nested")
        (store / "nested" / "session.jsonl").write_text('{"type":"user","message":"FAKE"}\n')
    (home / ".local" / "share" / "opencode" / "opencode.db").write_bytes(b"SQLite format 3\x00")
    (home / ".claude" / "history.jsonl").write_text("{}\n")
    (home / ".codex" / "history.jsonl").write_text("{}\n")
    return stores


def test_INV_2_inventory_opens_no_store_and_no_credential(home: Path, tmp_path: Path,
                                                           audit: list[tuple[str, str]]) -> None:
    import shutil

    shutil.copytree(Path(__file__).parent / "fixtures" / "inventory" / "home", home, dirs_exist_ok=True)
    stores = _store_home(home)
    bin_dir = tmp_path / "bin"
    for name in ("claude", "codex", "qwen", "gemini", "opencode", "copilot", "openclaw"):
        touch_exe(bin_dir / name)
    mkdir(home / ".vscode" / "extensions" / "saoudrizwan.claude-dev-3.17.0")

    audit.clear()
    snap = inv(home, path=str(bin_dir), posture=True)

    assert snap.agent("claude").posture is not None  # posture did run
    opened = [p for e, p in audit if e == "open"]
    listed = [p for e, p in audit if e != "open"]
    assert str(home / ".claude" / "settings.json") in opened  # the hook sees what we open
    assert str(home / ".vscode" / "extensions") in listed  # ... and what we list
    forbidden = [*stores, home / ".claude" / "history.jsonl", home / ".codex" / "history.jsonl"]
    for path in opened + listed:
        real = Path(path)
        for store in forbidden:
            assert real != store and store not in real.parents, f"touched store {store}"
    for cred in (".credentials.json", "auth.json", "oauth_creds.json"):
        assert not any(Path(p).name == cred for p in opened)
    # Only the agents' own settings files are opened, nothing else under the home.
    allowed = {"settings.json", ".claude.json", "config.toml", "opencode.json", "opencode.jsonc", "config.json",
               "managed-settings.json", "managed-mcp.json"}
    assert {Path(p).name for p in opened if Path(p).is_relative_to(home)} <= allowed


def test_INV_2_inventory_without_posture_opens_nothing(home: Path, tmp_path: Path,
                                                        audit: list[tuple[str, str]]) -> None:
    _store_home(home)
    touch_exe(tmp_path / "bin" / "claude")
    mkdir(home / ".npm-global" / "lib" / "node_modules" / "@openai" / "codex")
    audit.clear()
    snap = inv(home, path=str(tmp_path / "bin"))
    assert snap.agent("claude").installed and snap.agent("codex").installed
    assert [p for e, p in audit if e == "open"] == []


# -- properties of the small parsers ------------------------------------------------------------

_segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12)


@given(st.lists(st.lists(_segment, min_size=1, max_size=4), max_size=8), st.sampled_from(["linux", "win32"]))
def test_path_dirs_roundtrip(entries: list[list[str]], platform: str) -> None:
    dirs = ["/" + "/".join(parts) for parts in entries]
    sep = ";" if platform == "win32" else ":"
    assert path_dirs(sep.join(dirs), platform) == list(dict.fromkeys(dirs))


@given(st.text(max_size=200), st.sampled_from(["linux", "darwin", "win32"]))
def test_path_dirs_only_absolute_unique_entries(value: str, platform: str) -> None:
    out = path_dirs(value, platform)
    assert len(out) == len(set(out))
    for entry in out:
        assert entry and entry == entry.strip()
        assert os.path.isabs(entry) or platform == "win32"


@given(_segment, _segment, st.from_regex(r"[0-9][0-9a-z.+-]{0,20}", fullmatch=True))
def test_extension_version_matches_only_digit_suffix(publisher: str, name: str, version: str) -> None:
    ext = f"{publisher}.{name}".lower()
    assert extension_version(f"{ext}-{version}", ext) == version
    assert extension_version(f"{ext}-chat-{version}", ext) is None
    assert extension_version(ext, ext) is None


@settings(max_examples=50)
@given(st.sampled_from(["copilot", "claude", "qwen"]))
def test_launcher_names_windows_suffixes(name: str) -> None:
    assert launcher_names(name, "linux") == (name,)
    assert launcher_names(name, "win32") == (name, *(name + s for s in (".exe", ".com", ".cmd", ".bat", ".ps1")))
