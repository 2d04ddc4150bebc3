"""Configuration roots: which directories are read, in which order, and drop-ins with provenance."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from telltale.config.roots import (
    ConfigRoots,
    Profile,
    RootScope,
    add_config_root_arguments,
    resolve_roots,
    roots_from_args,
    system_config_dir,
)


@pytest.fixture
def roots_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    system = tmp_path / "etc" / "telltale"
    monkeypatch.setenv("TELLTALE_SYSTEM_CONFIG_DIR", str(system))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return system, tmp_path / "xdg" / "telltale"


def _write(path: Path, text: str = "x: 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("platform", "environ", "expected"),
    [
        ("linux", {}, Path("/etc/telltale")),
        ("freebsd14", {}, Path("/etc/telltale")),
        ("darwin", {}, Path("/Library/Application Support/Telltale")),
        ("win32", {"ProgramData": "D:\\PD"}, Path("D:\\PD") / "Telltale"),
        ("win32", {}, Path(r"C:\ProgramData") / "Telltale"),
        ("linux", {"TELLTALE_SYSTEM_CONFIG_DIR": "/opt/tt/etc"}, Path("/opt/tt/etc")),
    ],
)
def test_system_root_per_platform(platform: str, environ: dict[str, str], expected: Path) -> None:
    assert system_config_dir(platform, environ) == expected


def test_user_profile_reads_system_then_user(roots_env: tuple[Path, Path]) -> None:
    system, user = roots_env
    roots = resolve_roots()
    assert [(r.scope, r.path) for r in roots] == [(RootScope.SYSTEM, system), (RootScope.USER, user)]
    assert roots.highest() is not None and roots.highest().path == user  # type: ignore[union-attr]
    assert roots.describe() == [f"user {user}", f"system {system}"]


def test_system_profile_reads_only_the_system_root(roots_env: tuple[Path, Path]) -> None:
    system, user = roots_env
    _write(user / "config.yaml")
    roots = resolve_roots(Profile.SYSTEM)
    assert [r.path for r in roots] == [system]
    assert roots.files("config.yaml") == []


def test_config_dir_replaces_both_in_the_given_order(roots_env: tuple[Path, Path], tmp_path: Path) -> None:
    system, user = roots_env
    _write(system / "config.yaml")
    _write(user / "config.yaml")
    a, b = _write(tmp_path / "a" / "config.yaml"), _write(tmp_path / "b" / "config.yaml")
    roots = resolve_roots("user", [str(tmp_path / "a"), tmp_path / "b"])
    assert [r.scope for r in roots] == [RootScope.CONFIG_DIR] * 2
    assert [f.path for f in roots.files("config.yaml")] == [a, b]
    # in the system profile too: an explicit directory is what the operator asked for
    assert [r.path for r in resolve_roots("system", [tmp_path / "b"])] == [tmp_path / "b"]


def test_no_local_config_reads_no_default_root(roots_env: tuple[Path, Path], tmp_path: Path) -> None:
    system, user = roots_env
    _write(system / "config.yaml")
    _write(user / "outputs.d" / "x.yaml")
    roots = resolve_roots(no_local_config=True)
    assert len(roots) == 0
    assert roots.files("config.yaml") == [] and roots.dropins("outputs.d") == []
    assert roots.highest() is None
    # --config-dir still applies with it
    assert [r.path for r in resolve_roots(config_dirs=[tmp_path], no_local_config=True)] == [tmp_path]


def test_dropins_in_root_then_name_order_with_provenance(roots_env: tuple[Path, Path]) -> None:
    system, user = roots_env
    s50 = _write(system / "rules.d" / "50-site.yaml")
    s10 = _write(system / "rules.d" / "10-base.yml")
    u20 = _write(user / "rules.d" / "20-mine.yaml")
    # never read: hidden files, editor leftovers, other suffixes, directories
    _write(system / "rules.d" / ".hidden.yaml")
    _write(system / "rules.d" / "60-x.yaml~")
    _write(system / "rules.d" / "70-x.yaml.swp")
    _write(system / "rules.d" / "README.md")
    (system / "rules.d" / "80-dir.yaml").mkdir()
    found = resolve_roots().dropins("rules.d")
    assert [f.path for f in found] == [s10, s50, u20]
    assert [f.root.scope for f in found] == [RootScope.SYSTEM, RootScope.SYSTEM, RootScope.USER]
    assert found[0].origin == f"system {s10}"
    assert resolve_roots().dropins("overrides.d") == []  # a missing directory is empty
    assert [f.path for f in resolve_roots().dropins("rules.d", suffixes=(".yml",))] == [s10]


def test_a_drop_in_path_that_is_a_file_contributes_nothing(roots_env: tuple[Path, Path]) -> None:
    system, _ = roots_env
    _write(system / "rules.d")
    assert resolve_roots().dropins("rules.d") == []


def test_flags_parse_into_roots(roots_env: tuple[Path, Path], tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_config_root_arguments(parser)
    args = parser.parse_args(["--config-dir", str(tmp_path / "a"), "--config-dir", str(tmp_path / "b")])
    assert [r.path for r in roots_from_args(args)] == [tmp_path / "a", tmp_path / "b"]
    args = parser.parse_args(["--no-local-config"])
    assert roots_from_args(args) == ConfigRoots((), Profile.USER)
    # a command without the flags (or without --profile) gets the user profile's roots
    assert [r.scope for r in roots_from_args(argparse.Namespace())] == [RootScope.SYSTEM, RootScope.USER]
    assert [r.scope for r in roots_from_args(argparse.Namespace(profile="system"))] == [RootScope.SYSTEM]


def test_relative_config_dir_is_made_absolute(roots_env: tuple[Path, Path], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert [r.path for r in resolve_roots(config_dirs=["conf"])] == [tmp_path / "conf"]


@pytest.mark.parametrize(
    ("platform", "state", "log"),
    [
        ("linux", "/var/lib/telltale", "/var/log/telltale"),
        ("darwin", "/Library/Application Support/Telltale/state", "/Library/Logs/Telltale"),
    ],
)
def test_system_profile_state_and_log_locations(platform: str, state: str, log: str) -> None:
    from telltale.cli.paths import profile_log_dir, profile_state_dir

    assert profile_state_dir("system", platform) == state
    assert profile_log_dir("system", platform) == log


def test_user_profile_state_and_log_follow_platformdirs(roots_env: tuple[Path, Path], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from telltale.cli.paths import profile_log_path, profile_state_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "st"))
    monkeypatch.delenv("TELLTALE_LOG_PATH", raising=False)
    monkeypatch.delenv("TELLTALE_STATE_PATH", raising=False)
    assert profile_state_path("user") == str(tmp_path / "st" / "telltale" / "state.sqlite")
    assert profile_log_path("user") == str(tmp_path / "st" / "telltale" / "telltale-events.jsonl")
