"""Host root rules (ROOT-1..7, CAND-1..15) on Linux, macOS and Windows.

Pure resolution is table-driven per platform; the end-to-end tables build each
platform's layout under a temporary directory (Windows paths are mapped onto it with the
``host_path`` seam) and check what ``discover()`` finds and how.
"""

from __future__ import annotations

import ntpath
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from telltale.discovery import DiscoveryOptions, discover
from telltale.discovery.roots import (
    EnvView,
    Flavour,
    Platform,
    environment_roots,
    explicit_roots,
    parse_platform,
    resolve_data_home,
)
from telltale.errors import UsageError

LINUX, DARWIN, WINDOWS = Platform.LINUX, Platform.DARWIN, Platform.WINDOWS


def touch(base: Path, relative: str) -> Path:
    path = base.joinpath(*relative.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def windows_mapper(base: Path) -> Callable[[str], str]:
    """Map ``C:\\Users\\me\\x`` to ``<base>/C/Users/me/x`` for filesystem calls."""

    def host(path: str) -> str:
        drive, rest = ntpath.splitdrive(path)
        parts = [drive.rstrip(":")] + [p for p in rest.replace("/", "\\").split("\\") if p]
        return str(base.joinpath(*[p for p in parts if p]))

    return host


# ---------------------------------------------------------------- pure resolution

HOME_TABLE = [
    # (id, platform, env, expected home)
    ("ROOT_1_linux_home", LINUX, {"HOME": "/home/u"}, "/home/u"),
    ("ROOT_1_darwin_home", DARWIN, {"HOME": "/Users/u"}, "/Users/u"),
    ("ROOT_1_linux_userprofile_ignored", LINUX, {"USERPROFILE": "/x"}, None),
    ("ROOT_2_windows_home_first", WINDOWS, {"HOME": "D:\\h", "USERPROFILE": "C:\\Users\\u"}, "D:\\h"),
    ("ROOT_2_windows_userprofile", WINDOWS, {"USERPROFILE": "C:\\Users\\u"}, "C:\\Users\\u"),
    (
        "ROOT_2_windows_empty_home_falls_back",
        WINDOWS,
        {"HOME": "", "USERPROFILE": "C:\\Users\\u"},
        "C:\\Users\\u",
    ),
    ("ROOT_2_windows_names_case_insensitive", WINDOWS, {"UserProfile": "C:\\Users\\u"}, "C:\\Users\\u"),
    ("ROOT_1_empty_home_is_unset", LINUX, {"HOME": ""}, None),
]


@pytest.mark.parametrize(
    ("platform", "env", "expected"), [t[1:] for t in HOME_TABLE], ids=[t[0] for t in HOME_TABLE]
)
def test_ROOT_1_2_home(platform: Platform, env: dict[str, str], expected: str | None) -> None:
    assert environment_roots(EnvView(env, platform), platform).home == expected


CODEX_TABLE = [
    (
        "CAND_3_linux_env",
        LINUX,
        {"HOME": "/home/u", "CODEX_HOME": "/srv/codex"},
        "/srv/codex",
        "env:CODEX_HOME",
    ),
    ("CAND_3_linux_default", LINUX, {"HOME": "/home/u"}, "/home/u/.codex", "codex_home"),
    ("CAND_3_darwin_default", DARWIN, {"HOME": "/Users/u"}, "/Users/u/.codex", "codex_home"),
    (
        "CAND_3_windows_env",
        WINDOWS,
        {"USERPROFILE": "C:\\Users\\u", "CODEX_HOME": "E:\\cx"},
        "E:\\cx",
        "env:CODEX_HOME",
    ),
    (
        "CAND_3_windows_default",
        WINDOWS,
        {"USERPROFILE": "C:\\Users\\u"},
        "C:\\Users\\u\\.codex",
        "codex_home",
    ),
    (
        "ROOT_3_empty_codex_home_is_unset",
        LINUX,
        {"HOME": "/home/u", "CODEX_HOME": ""},
        "/home/u/.codex",
        "codex_home",
    ),
    ("ROOT_3_no_home_no_codex_home", LINUX, {}, None, "codex_home"),
    ("ROOT_3_codex_home_without_home", LINUX, {"CODEX_HOME": "/c"}, "/c", "env:CODEX_HOME"),
]


@pytest.mark.parametrize(
    ("platform", "env", "expected", "found_by"), [t[1:] for t in CODEX_TABLE], ids=[t[0] for t in CODEX_TABLE]
)
def test_ROOT_3_codex_home(
    platform: Platform, env: dict[str, str], expected: str | None, found_by: str
) -> None:
    roots = environment_roots(EnvView(env, platform), platform)
    assert roots.codex_home == expected
    assert roots.codex_home_found_by == found_by


DATA_TABLE = [
    ("ROOT_4_linux_xdg", LINUX, {"HOME": "/home/u", "XDG_DATA_HOME": "/xdg"}, "/xdg"),
    ("ROOT_4_linux_empty_xdg", LINUX, {"HOME": "/home/u", "XDG_DATA_HOME": ""}, "/home/u/.local/share"),
    ("ROOT_4_linux_default", LINUX, {"HOME": "/home/u"}, "/home/u/.local/share"),
    (
        "ROOT_5_darwin_ignores_xdg",
        DARWIN,
        {"HOME": "/Users/u", "XDG_DATA_HOME": "/xdg"},
        "/Users/u/Library/Application Support",
    ),
    (
        "ROOT_6_windows_localappdata_first",
        WINDOWS,
        {"USERPROFILE": "C:\\Users\\u", "LOCALAPPDATA": "C:\\L", "APPDATA": "C:\\R"},
        "C:\\L",
    ),
    ("ROOT_6_windows_appdata_second", WINDOWS, {"USERPROFILE": "C:\\Users\\u", "APPDATA": "C:\\R"}, "C:\\R"),
    (
        "ROOT_6_windows_profile_fallback",
        WINDOWS,
        {"USERPROFILE": "C:\\Users\\u"},
        "C:\\Users\\u\\AppData\\Local",
    ),
    (
        "ROOT_6_windows_ignores_xdg",
        WINDOWS,
        {"USERPROFILE": "C:\\Users\\u", "XDG_DATA_HOME": "C:\\x"},
        "C:\\Users\\u\\AppData\\Local",
    ),
    (
        "ROOT_6_windows_empty_localappdata",
        WINDOWS,
        {"USERPROFILE": "C:\\U", "LOCALAPPDATA": "", "APPDATA": "C:\\R"},
        "C:\\R",
    ),
    ("ROOT_4_no_home", LINUX, {}, None),
]


@pytest.mark.parametrize(
    ("platform", "env", "expected"), [t[1:] for t in DATA_TABLE], ids=[t[0] for t in DATA_TABLE]
)
def test_ROOT_4_5_6_data_home(platform: Platform, env: dict[str, str], expected: str | None) -> None:
    view = EnvView(env, platform)
    roots = environment_roots(view, platform)
    assert roots.data_home == expected
    assert resolve_data_home(view, Flavour(platform), roots.home) == expected


EXPLICIT_TABLE = [
    ("linux", LINUX, "/r", "/r/.codex", "/r/.local/share"),
    ("darwin", DARWIN, "/r", "/r/.codex", "/r/Library/Application Support"),
    ("windows", WINDOWS, "D:\\r", "D:\\r\\.codex", "D:\\r\\AppData\\Local"),
]


@pytest.mark.parametrize(
    ("platform", "root", "codex", "data"), [t[1:] for t in EXPLICIT_TABLE], ids=[t[0] for t in EXPLICIT_TABLE]
)
def test_CAND_2_explicit_root_is_the_home(platform: Platform, root: str, codex: str, data: str) -> None:
    roots = explicit_roots(root, platform)
    assert (roots.home, roots.codex_home, roots.data_home) == (root, codex, data)
    assert roots.explicit and roots.home_found_by == "explicit_root"


def test_ROOT_7_parse_platform() -> None:
    assert parse_platform("windows") is WINDOWS
    assert parse_platform(None) in tuple(Platform)
    with pytest.raises(UsageError, match="unknown platform"):
        parse_platform("plan9")


def test_flavour_prefixes_and_lists() -> None:
    posix, win = Flavour(LINUX), Flavour(WINDOWS)
    assert posix.prefixes("/a/b/c") == ["/", "/a", "/a/b", "/a/b/c"]
    assert win.prefixes("C:\\a\\b") == ["C:\\", "C:\\a", "C:\\a\\b"]
    assert posix.prefixes("rel/x") == ["rel", "rel/x"]
    assert posix.split_list("a.yaml::b.yaml") == ["a.yaml", "b.yaml"]
    assert win.split_list("C:\\a.yaml;D:\\b.yaml;") == ["C:\\a.yaml", "D:\\b.yaml"]
    assert win.key("C:\\A\\b") == win.key("c:\\a\\B")
    assert posix.key("/A") != posix.key("/a")


# ---------------------------------------------------------------- end to end per platform

#: Files laid out below the home directory (POSIX separators; the test maps them).
HOME_LAYOUT = [
    ".claude/projects/p/s1.jsonl",
    ".codex/sessions/2026/01/02/rollout-a.jsonl",
    ".codex/archived_sessions/rollout-b.jsonl",
    ".codex/headless/rollout-c.jsonl",
    ".qwen/projects/p/chats/q1.jsonl",
    ".openclaw/agents/main/sessions/o1.jsonl",
    ".copilot/session-state/abc/events.jsonl",
    ".cursor/projects/Users-me-app/agent-transcripts/c1/c1.jsonl",
]

EXPECTED_HOME_KINDS = {
    ("claude.projects", "home"),
    ("codex.sessions", "codex_home"),
    ("codex.archived_sessions", "codex_home"),
    ("codex.headless_sessions", "codex_home"),
    ("qwen.projects", "home"),
    ("openclaw.agents", "home"),
    ("copilot.session_state", "home"),
    ("cursor.agent_transcripts", "home"),
}


@pytest.mark.parametrize("platform", [LINUX, DARWIN])
def test_CAND_3_to_10_posix_home_layout(tmp_path: Path, platform: Platform) -> None:
    home = tmp_path / "home"
    for rel in HOME_LAYOUT:
        touch(home, rel)
    result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform=platform.value))
    assert {(s.kind, s.found_by) for s in result.sources} == EXPECTED_HOME_KINDS
    assert result.errors == []
    assert all(s.path.startswith(str(home) + os.sep) for s in result.sources)


def test_CAND_15_windows_home_layout_via_userprofile(tmp_path: Path) -> None:
    for rel in HOME_LAYOUT:
        touch(tmp_path / "C" / "Users" / "me", rel)
    result = discover(
        DiscoveryOptions(
            env={"USERPROFILE": "C:\\Users\\me"}, platform="windows", host_path=windows_mapper(tmp_path)
        )
    )
    assert {(s.kind, s.found_by) for s in result.sources} == EXPECTED_HOME_KINDS
    by_kind = {s.kind: s.path for s in result.sources}
    assert by_kind["codex.sessions"] == "C:\\Users\\me\\.codex\\sessions\\2026\\01\\02\\rollout-a.jsonl"
    assert by_kind["claude.projects"] == "C:\\Users\\me\\.claude\\projects\\p\\s1.jsonl"
    assert result.errors == []


def test_CAND_3_windows_codex_home_env(tmp_path: Path) -> None:
    touch(tmp_path / "E" / "cx", "sessions/r.jsonl")
    touch(tmp_path / "C" / "Users" / "me", ".codex/sessions/ignored.jsonl")
    result = discover(
        DiscoveryOptions(
            env={"USERPROFILE": "C:\\Users\\me", "CODEX_HOME": "E:\\cx"},
            platform="windows",
            clients=("codex",),
            host_path=windows_mapper(tmp_path),
        )
    )
    assert [(s.path, s.found_by) for s in result.sources] == [("E:\\cx\\sessions\\r.jsonl", "env:CODEX_HOME")]


def test_CAND_3_codex_home_replaces_default(tmp_path: Path) -> None:
    touch(tmp_path / "home", ".codex/sessions/default.jsonl")
    touch(tmp_path / "cx", "sessions/env.jsonl")
    touch(tmp_path / "cx", "archived_sessions/arch.jsonl")
    touch(tmp_path / "cx", "headless/h.jsonl")
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "cx")}
    result = discover(DiscoveryOptions(env=env, clients=("codex",), platform="linux"))
    assert sorted(Path(s.path).name for s in result.sources) == ["arch.jsonl", "env.jsonl", "h.jsonl"]


def test_CAND_7_claude_config_dir_is_additive(tmp_path: Path) -> None:
    touch(tmp_path / "home", ".claude/projects/p/home.jsonl")
    touch(tmp_path / "cfg", "projects/p/cfg.jsonl")
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    result = discover(DiscoveryOptions(env=env, clients=("claude",), platform="linux"))
    assert {(Path(s.path).name, s.found_by) for s in result.sources} == {
        ("home.jsonl", "home"),
        ("cfg.jsonl", "env:CLAUDE_CONFIG_DIR"),
    }
    assert {r.path for r in result.store_roots} == {
        str(tmp_path / "home" / ".claude" / "projects"),
        str(tmp_path / "cfg" / "projects"),
    }


def test_CAND_7_claude_config_dir_same_as_home_is_not_duplicated(tmp_path: Path) -> None:
    touch(tmp_path / "home", ".claude/projects/p/a.jsonl")
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude")}
    result = discover(DiscoveryOptions(env=env, clients=("claude",), platform="linux"))
    assert [(Path(s.path).name, s.found_by) for s in result.sources] == [("a.jsonl", "home")]


def test_CAND_8_explicit_root_ignores_environment(tmp_path: Path) -> None:
    touch(tmp_path / "root", ".claude/projects/p/a.jsonl")
    touch(tmp_path / "root", ".codex/sessions/r.jsonl")
    touch(tmp_path / "cfg", "projects/p/cfg.jsonl")
    touch(tmp_path / "cx", "sessions/env.jsonl")
    env = {
        "HOME": str(tmp_path / "elsewhere"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"),
        "CODEX_HOME": str(tmp_path / "cx"),
    }
    result = discover(DiscoveryOptions(root=str(tmp_path / "root"), env=env, platform="linux"))
    assert sorted((Path(s.path).name, s.found_by) for s in result.sources) == [
        ("a.jsonl", "explicit_root"),
        ("r.jsonl", "explicit_root"),
    ]


def test_CAND_1_only_the_literal_dot_is_environment_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "./" is an explicit root (the working directory as a home), not environment mode.
    touch(tmp_path / "home", ".claude/projects/p/env.jsonl")
    touch(tmp_path / "cwd", ".claude/projects/p/cwd.jsonl")
    monkeypatch.chdir(tmp_path / "cwd")
    env = {"HOME": str(tmp_path / "home")}
    dot = discover(DiscoveryOptions(root=".", env=env, clients=("claude",), platform="linux"))
    slash = discover(DiscoveryOptions(root="./", env=env, clients=("claude",), platform="linux"))
    assert [Path(s.path).name for s in dot.sources] == ["env.jsonl"]
    assert [(Path(s.path).name, s.found_by) for s in slash.sources] == [("cwd.jsonl", "explicit_root")]
    assert slash.sources[0].path == str(tmp_path / "cwd" / ".claude" / "projects" / "p" / "cwd.jsonl")


def test_ROOT_1_no_home_is_reported_and_env_roots_still_work(tmp_path: Path) -> None:
    touch(tmp_path / "cx", "sessions/r.jsonl")
    result = discover(DiscoveryOptions(env={"CODEX_HOME": str(tmp_path / "cx")}, platform="linux"))
    assert [s.kind for s in result.sources] == ["codex.sessions"]
    assert [(e.reason, e.path) for e in result.errors] == [("no_home", "HOME")]
