"""config.yaml and TELLTALE_<KEY>: every scan/watch flag as a setting, precedence, provenance, refusals."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import read_events, run_cli, write_claude_session
from telltale.cli.main import build_parser
from telltale.config.roots import resolve_roots
from telltale.config.settings import REFUSED, SettingsSpec, apply_settings, resolve_settings
from telltale.errors import ConfigError, UsageError


def _spec(command: str) -> SettingsSpec:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    spec: SettingsSpec = sub.choices[command].get_default("settings_spec")
    return spec


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    system, user = tmp_path / "etc", tmp_path / "xdg" / "telltale"
    system.mkdir(parents=True)
    user.mkdir(parents=True)
    monkeypatch.setenv("TELLTALE_SYSTEM_CONFIG_DIR", str(system))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return system, user


def _parse(command: str, *argv: str) -> argparse.Namespace:
    return build_parser(command).parse_args([command, *argv])


def test_every_scan_and_watch_flag_is_a_key_with_the_flag_name() -> None:
    scan, watch = _spec("scan"), _spec("watch")
    for key in ("log_path", "state_path", "content", "interval_seconds", "log_rotate_max_size", "rules", "client",
                "no_detect", "outputs", "delivery_seconds", "scanner_error_threshold"):
        assert key in scan.keys, key
    for key in ("debounce_ms", "poll", "max_watches", "rescan_interval_seconds", "log_path"):
        assert key in watch.keys, key
    assert scan.keys["log_path"].flag == "--log-path"
    assert "window_bytes" not in scan.keys  # a hidden test knob is not a setting
    assert {"once", "dry_run", "backfill", "history"} <= set(scan.keys) & set(REFUSED)


def test_precedence_flag_env_user_system_default(roots: tuple[Path, Path]) -> None:
    system, user = roots
    (system / "config.yaml").write_text("content: none\nlog_rotate_keep: 3\ndelivery_seconds: 4\nclient: [codex]\n")
    (user / "config.yaml").write_text("content: full\nlog_rotate_keep: 4\n")
    env = {"TELLTALE_LOG_ROTATE_KEEP": "7", "TELLTALE_CLIENT": "claude, gemini"}
    args = _parse("scan", "--once", "--log-rotate-keep", "9")
    settings = apply_settings(args, environ=env)
    assert args.log_rotate_keep == 9 and settings.origin("log_rotate_keep") == "flag"
    assert args.client == ["claude", "gemini"] and settings.origin("client") == "env TELLTALE_CLIENT"
    assert args.content == "full" and settings.origin("content") == f"user {user / 'config.yaml'}:1"
    assert args.delivery_seconds == 4.0 and settings.origin("delivery_seconds") == f"system {system / 'config.yaml'}:3"
    assert args.log_rotate_max_size == 100 << 20 and settings.origin("log_rotate_max_size") == "default"
    assert args.once is True and args.dry_run is False
    assert settings.files == [f"system {system / 'config.yaml'}", f"user {user / 'config.yaml'}"]


def test_system_profile_reads_only_the_system_root(roots: tuple[Path, Path]) -> None:
    system, user = roots
    (system / "config.yaml").write_text("no_detect: false\ncontent: none\n")
    (user / "config.yaml").write_text("no_detect: true\ncontent: full\n")
    args = _parse("watch", "--profile", "system")
    settings = apply_settings(args, environ={})
    assert args.no_detect is False and args.content == "none"
    assert settings.files == [f"system {system / 'config.yaml'}"]


@pytest.mark.parametrize(
    ("text", "line", "key", "needle"),
    [
        ("content: none\nlog_pth: /x\n", 2, "log_pth", "unknown key"),
        ("content: none\nonce: true\n", 2, "once", "run-mode flag"),
        ("dry_run: true\n", 1, "dry_run", "run-mode flag"),
        ("backfill: true\n", 1, "backfill", "run-mode flag"),
        ("history: all\n", 1, "history", "run-mode flag"),
        ("profile: system\n", 1, "profile", "chooses which configuration"),
        ("content: bogus\n", 1, "content", "must be one of none, redacted, full"),
        ("interval_seconds: soon\n", 1, "interval_seconds", "could not convert"),
        ("scanner_error_threshold: 2.5\n", 1, "scanner_error_threshold", "whole number"),
        ("no_detect: 1\n", 1, "no_detect", "true or false"),
        ("rules: {a: 1}\n", 1, "rules", "list of strings"),
        ("\n\nlog_rotate_max_size: lots\n", 3, "log_rotate_max_size", "not a size"),
        ("jobs: 0\n", 1, "jobs", "between 1 and 256"),  # a YAML int passes the flag's own range check
        ("jobs: 9999\n", 1, "jobs", "between 1 and 256"),
    ],
)
def test_bad_keys_and_values_name_file_line_and_key(roots: tuple[Path, Path], text: str, line: int, key: str,
                                                     needle: str) -> None:
    system, _ = roots
    (system / "config.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        resolve_settings(_spec("scan"), resolve_roots(), environ={})
    message = str(info.value)
    assert message.startswith(f"{system / 'config.yaml'}:{line}: {key}: "), message
    assert needle in message


def test_values_convert_like_flags_and_paths_are_relative_to_the_file(roots: tuple[Path, Path]) -> None:
    _, user = roots
    (user / "config.yaml").write_text(
        "log_rotate_max_size: 10M\ninterval_seconds: 60\nlog_path: logs/e.jsonl\nrules: r.yaml\n"
        "state_path: ~/s.sqlite\n"
    )
    args = _parse("scan")
    apply_settings(args, environ={})
    assert args.log_rotate_max_size == 10 << 20
    assert args.interval_seconds == 60.0 and isinstance(args.interval_seconds, float)
    assert args.log_path == str(user / "logs" / "e.jsonl")
    assert args.rules == [str(user / "r.yaml")]
    assert args.state_path == str(Path("~/s.sqlite").expanduser())


def test_bad_environment_values_are_usage_errors(roots: tuple[Path, Path]) -> None:
    with pytest.raises(UsageError, match="environment TELLTALE_NO_DETECT: must be true or false"):
        apply_settings(_parse("scan"), environ={"TELLTALE_NO_DETECT": "maybe"})
    # a run-mode flag in the environment is not read at all
    args = _parse("scan")
    apply_settings(args, environ={"TELLTALE_DRY_RUN": "1", "TELLTALE_NO_DETECT": "yes"})
    assert args.dry_run is False and args.no_detect is True


def test_config_dir_replaces_the_roots_and_no_local_config_reads_none(roots: tuple[Path, Path],
                                                                      tmp_path: Path) -> None:
    system, user = roots
    (system / "config.yaml").write_text("content: none\n")
    (user / "config.yaml").write_text("content: full\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.yaml").write_text("log_rotate_keep: 2\n")
    args = _parse("scan", "--config-dir", str(other))
    apply_settings(args, environ={})
    assert args.content == "redacted" and args.log_rotate_keep == 2
    args = _parse("scan", "--no-local-config")
    settings = apply_settings(args, environ={})
    assert args.content == "redacted" and settings.files == []


# -- through the CLI ---------------------------------------------------------------------------------
def _cli_env(tmp_path: Path) -> dict[str, str]:
    return {"TELLTALE_SYSTEM_CONFIG_DIR": str(tmp_path / "etc"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def test_scan_takes_log_path_and_content_from_config_and_a_flag_beats_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 2)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "config.yaml").write_text(
        f"log_path: {tmp_path / 'out' / 'e.jsonl'}\nstate_path: {tmp_path / 'out' / 's.sqlite'}\ncontent: none\n"
        "install_inventory_disabled: true\n"
    )
    run_cli(["scan", "--once", "--root", str(home), "--json"], home, extra_env=_cli_env(tmp_path))
    events = read_events(tmp_path / "out" / "e.jsonl")
    assert events and {e["telltale"]["content_mode"] for e in events if "content_mode" in e["telltale"]} == {"none"}
    assert not any(e["event"]["dataset"] == "telltale.inventory" for e in events)
    write_claude_session(home, "-work-p", "sess-1", 1, start=2)
    run_cli(["scan", "--once", "--root", str(home), "--content", "full", "--json"], home,
            extra_env=_cli_env(tmp_path))
    modes = [e["telltale"].get("content_mode") for e in read_events(tmp_path / "out" / "e.jsonl")[len(events):]]
    assert "full" in modes and "none" not in modes


def test_a_run_mode_flag_in_config_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 1)
    (tmp_path / "xdg" / "telltale").mkdir(parents=True)
    cfg = tmp_path / "xdg" / "telltale" / "config.yaml"
    cfg.write_text(f"log_path: {tmp_path / 'out' / 'e.jsonl'}\ndry_run: true\n")
    proc = run_cli(["scan", "--once", "--root", str(home)], home, extra_env=_cli_env(tmp_path), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"telltale: error: {cfg}:2: dry_run: not allowed in config.yaml: a run-mode flag: " \
                                  "give it on the command line"
    assert not (tmp_path / "out").exists()


def test_once_on_the_command_line_beats_a_configured_interval(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 1)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "config.yaml").write_text("interval_seconds: 3600\n")
    proc = run_cli(["scan", "--once", "--root", str(home), "--log-path", str(tmp_path / "e.jsonl"),
                    "--state-path", str(tmp_path / "s.sqlite"), "--json"], home, extra_env=_cli_env(tmp_path),
                   timeout=60)
    assert json.loads(proc.stdout)["sources_scanned"] == 1


def test_config_validate_shows_each_value_with_where_it_came_from(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "etc" / "outputs.d").mkdir(parents=True)
    (tmp_path / "etc" / "config.yaml").write_text("content: none\ndebounce_ms: 250\n")
    (tmp_path / "etc" / "outputs.d" / "50-siem.yaml").write_text(
        "outputs:\n  siem:\n    type: otlp\n    endpoint: http://127.0.0.1:4318\n    include: [detection, health]\n")
    (tmp_path / "xdg" / "telltale").mkdir(parents=True)
    (tmp_path / "xdg" / "telltale" / "config.yaml").write_text("content: full\n")
    env = {**_cli_env(tmp_path), "TELLTALE_POLL_RATE": "64"}
    data: dict[str, Any] = json.loads(run_cli(["config", "validate", "--json"], home, extra_env=env).stdout)
    settings = data["settings"]
    assert settings["content"] == {"value": "full", "origin": f"user {tmp_path / 'xdg/telltale/config.yaml'}:1"}
    assert settings["debounce_ms"] == {"value": 250, "origin": f"system {tmp_path / 'etc/config.yaml'}:2"}
    assert settings["poll_rate"] == {"value": 64, "origin": "env TELLTALE_POLL_RATE"}
    assert settings["log_rotate_keep"]["origin"] == "default"
    assert "once" not in settings and "dry_run" not in settings
    assert data["roots"] == [f"user {tmp_path / 'xdg/telltale'}", f"system {tmp_path / 'etc'}"]
    siem = data["outputs"]["siem"]
    assert siem["takes"] == {"include": ["detection", "health"]}
    assert siem["defined_in"] == [f"system {tmp_path / 'etc/outputs.d/50-siem.yaml'}:2"]
    text = run_cli(["config", "validate"], home, extra_env=env).stdout
    assert 'content: "full"' in text and f"# user {tmp_path / 'xdg/telltale/config.yaml'}:1" in text
    assert "# env TELLTALE_POLL_RATE" in text
    # the system profile shows only the system root's values
    data = json.loads(run_cli(["config", "validate", "--json", "--profile", "system"], home, extra_env=env).stdout)
    assert data["settings"]["content"]["value"] == "none" and data["profile"] == "system"
