"""``telltale service``: units, plist and task rendered and validated; install/uninstall into temp dirs."""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from scan_helpers import run_cli
from telltale.errors import UsageError
from telltale.service import launchd, systemd, windows
from telltale.service.spec import ServiceSpec, parse_every

SCHEMA = Path(__file__).parent / "fixtures" / "service" / "task-subset.xsd"
SPECS = [
    ServiceSpec(scope=scope, mode=mode, every=600, state_dir="/var/lib/telltale", log_dir="/var/log/telltale")
    for scope in ("user", "system") for mode in ("watch", "timer")
]  # fmt: skip
IDS = [f"{s.scope}-{s.mode}" for s in SPECS]


@pytest.mark.parametrize(("text", "seconds"), [("5m", 300), ("90s", 90), ("1h", 3600), ("120", 120), ("2 min", 120)])
def test_every_durations(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds


@pytest.mark.parametrize("text", ["5", "soon", "-5m", "1d", ""])
def test_every_refuses_nonsense_and_too_often(text: str) -> None:
    with pytest.raises(UsageError):
        parse_every(text)


def _verify(directory: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("systemd-analyze")
    assert exe is not None, "systemd-analyze is required (Debian package systemd; .ci/run installs it)"
    names = sorted(str(p) for p in directory.iterdir())
    return subprocess.run([exe, "verify", *names], capture_output=True, text=True, cwd=directory, timeout=60,
                          check=False)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_systemd_units_pass_systemd_analyze_verify(spec: ServiceSpec, tmp_path: Path) -> None:
    for name, text in systemd.units(spec).items():
        (tmp_path / name).write_text(text)
    proc = _verify(tmp_path)
    # verify exits 0 on many problems and only warns: a clean unit prints nothing at all
    assert proc.returncode == 0 and proc.stderr.strip() == "" and proc.stdout.strip() == "", proc.stderr


def test_systemd_analyze_verify_would_catch_a_bad_setting(tmp_path: Path) -> None:
    text = systemd.service_unit(SPECS[2]).replace("Restart=on-failure", "Restart=sometimes")
    (tmp_path / "telltale.service").write_text(text)
    assert "restart specifier" in _verify(tmp_path).stderr


def test_system_unit_is_sandboxed_reads_homes_and_writes_only_its_state_and_log() -> None:
    text = systemd.service_unit(SPECS[2])
    lines = set(text.splitlines())
    assert {"ProtectSystem=strict", "ProtectHome=read-only", "NoNewPrivileges=yes", "StateDirectory=telltale",
            "LogsDirectory=telltale", "StateDirectoryMode=0700", "Restart=on-failure", "StandardOutput=journal",
            "RestartPreventExitStatus=2", "CapabilityBoundingSet=CAP_DAC_READ_SEARCH"} <= lines
    assert not any(line.startswith(("ReadWritePaths=", "ProtectHome=yes", "ProtectHome=tmpfs")) for line in lines)
    assert "ExecStart=" + " ".join([sys.executable, "-m", "telltale", "watch", "--profile", "system"]) in lines
    assert "WantedBy=multi-user.target" in lines
    assert "ExecReload=/bin/kill -HUP $MAINPID" in lines  # systemctl reload: the watch reads its rules again


def test_timer_runs_scan_once_every_interval_with_jitter() -> None:
    units = systemd.units(SPECS[3])
    assert set(units) == {"telltale.service", "telltale.timer"}
    assert "Type=oneshot" in units["telltale.service"] and "scan --once --profile system" in units["telltale.service"]
    assert "[Install]" not in units["telltale.service"]  # started by its timer only
    assert "ExecReload=" not in units["telltale.service"]  # each run reads the rules anyway
    timer = units["telltale.timer"].splitlines()
    assert {"OnUnitInactiveSec=10min", "RandomizedDelaySec=1min", "WantedBy=timers.target"} <= set(timer)


def test_exec_start_quotes_blanks_and_escapes_specifiers() -> None:
    spec = ServiceSpec(scope="user", mode="watch", state_dir="/s", log_dir="/l",
                       command=("/opt/My Tools/py%thon", "-m", "telltale"))
    assert systemd.exec_start(spec).startswith('"/opt/My Tools/py%%thon" -m telltale watch')


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_launchd_plist_round_trips(spec: ServiceSpec) -> None:
    data = plistlib.loads(launchd.render(spec))
    assert data["Label"] == "dev.telltale.sensor"
    assert data["ProgramArguments"] == spec.argv
    assert data["RunAtLoad"] is True
    if spec.mode == "watch":
        assert data["KeepAlive"] == {"SuccessfulExit": False} and "StartInterval" not in data
    else:
        assert data["StartInterval"] == 600 and "KeepAlive" not in data
    assert data["StandardErrorPath"].startswith(spec.log_dir)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_windows_task_validates_against_the_task_schema(spec: ServiceSpec) -> None:
    from lxml import etree

    raw = windows.render(spec, user_id="HOST\\dev" if spec.scope == "user" else None)
    assert raw.startswith(b"\xff\xfe")  # UTF-16 with a BOM, as schtasks writes them
    schema = etree.XMLSchema(etree.parse(str(SCHEMA)))
    doc = etree.fromstring(raw)
    assert schema.validate(doc), schema.error_log
    ns = {"t": windows.TASK_NS}
    assert doc.findtext("t:Actions/t:Exec/t:Command", namespaces=ns) == sys.executable
    args = doc.findtext("t:Actions/t:Exec/t:Arguments", namespaces=ns)
    assert args == subprocess.list2cmdline(spec.argv[1:])
    if spec.mode == "timer":
        assert doc.findtext("t:Triggers/t:TimeTrigger/t:Repetition/t:Interval", namespaces=ns) == "PT10M"
    if spec.scope == "system":
        assert doc.findtext("t:Principals/t:Principal/t:UserId", namespaces=ns) == "S-1-5-18"


def test_the_task_schema_rejects_a_broken_task() -> None:
    from lxml import etree

    raw = windows.render(SPECS[1]).decode("utf-16").replace("PT10M", "ten minutes")
    schema = etree.XMLSchema(etree.parse(str(SCHEMA)))
    assert not schema.validate(etree.fromstring(raw.encode("utf-16")))


# -- install / uninstall / status through the CLI -------------------------------------------------------
def _env(tmp_path: Path, *, path: str | None = None) -> dict[str, str]:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    if path is not None:
        env["PATH"] = path
    return env


def _fake_systemctl(tmp_path: Path, *, fail: str | None = None) -> str:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / "systemctl"
    log = tmp_path / "systemctl.log"
    body = f'echo "$@" >> {log}\n'
    answers = 'case "$*" in *is-enabled*) echo enabled;; *is-active*) echo active;; esac\n'
    body += f'echo "{fail}" >&2; exit 1\n' if fail else answers
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"


def test_install_and_uninstall_a_user_unit_in_a_temporary_xdg_config_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _env(tmp_path)
    units = tmp_path / "xdg" / "systemd" / "user"
    proc = run_cli(["service", "install", "--user", "--mode", "timer", "--every", "10m", "--no-enable",
                    "--init", "systemd"], home, extra_env=env)
    assert {p.name for p in units.iterdir()} == {"telltale.service", "telltale.timer"}
    for p in units.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o644
    assert "not enabled" in proc.stdout
    assert _verify(units).stderr == ""
    # switching to watch removes the timer (it would keep starting the service)
    proc = run_cli(["service", "install", "--mode", "watch", "--no-enable", "--init", "systemd"], home, extra_env=env)
    assert {p.name for p in units.iterdir()} == {"telltale.service"}
    assert f"removed {units / 'telltale.timer'}" in proc.stdout
    status = json.loads(run_cli(["service", "status", "--json", "--init", "systemd"], home,
                                extra_env=_env(tmp_path, path=_fake_systemctl(tmp_path))).stdout)
    assert status["installed"] and status["mode"] == "watch"
    assert status["enabled"] == "enabled" and status["running"] == "active" and status["last_scan"] is None
    run_cli(["service", "uninstall", "--no-disable", "--init", "systemd"], home, extra_env=env)
    assert list(units.iterdir()) == []
    status = json.loads(run_cli(["service", "status", "--json", "--init", "systemd"], home, extra_env=env).stdout)
    assert status["installed"] is False and status["enabled"] == "no"


def test_install_enables_through_systemctl(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = _fake_systemctl(tmp_path)
    run_cli(["service", "install", "--user", "--init", "systemd"], home, extra_env=_env(tmp_path, path=path))
    assert (tmp_path / "systemctl.log").read_text().splitlines() == [
        "--user daemon-reload", "--user enable --now telltale.service"]
    run_cli(["service", "uninstall", "--user", "--init", "systemd"], home, extra_env=_env(tmp_path, path=path))
    assert (tmp_path / "systemctl.log").read_text().splitlines()[2:] == [
        "--user disable --now telltale.timer telltale.service", "--user daemon-reload"]


def test_install_without_a_reachable_manager_keeps_the_files_and_says_what_to_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = _fake_systemctl(tmp_path, fail="Failed to connect to bus: No medium found")
    proc = run_cli(["service", "install", "--user", "--init", "systemd"], home,
                   extra_env=_env(tmp_path, path=path), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Failed to connect to bus" in lines[0]
    assert "systemctl --user daemon-reload; systemctl --user enable --now telltale.service" in lines[0]
    assert (tmp_path / "xdg" / "systemd" / "user" / "telltale.service").exists()


def test_every_without_timer_is_a_usage_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = run_cli(["service", "install", "--every", "5m", "--no-enable"], home, extra_env=_env(tmp_path),
                   check=False)
    assert proc.returncode == 2 and "--every goes with --mode timer" in proc.stderr


def test_render_prints_every_file_and_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for init, names in (("systemd", {"telltale.service", "telltale.timer"}), ("launchd", {"dev.telltale.sensor.plist"}),
                        ("windows", {"telltale.xml"})):
        out = json.loads(run_cli(["service", "render", "--system", "--mode", "timer", "--init", init, "--json"], home,
                                 extra_env=_env(tmp_path)).stdout)
        assert set(out) == names
    assert not (tmp_path / "xdg").exists()


def test_system_install_into_a_destination_writes_the_hardened_units(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    dest = tmp_path / "pkgroot" / "lib" / "systemd" / "system"
    run_cli(["service", "install", "--system", "--mode", "timer", "--every", "15m", "--init", "systemd",
             "--dest", str(dest)], home, extra_env=_env(tmp_path))
    assert {p.name for p in dest.iterdir()} == {"telltale.service", "telltale.timer"}
    assert "ProtectSystem=strict" in (dest / "telltale.service").read_text()
    assert "OnUnitInactiveSec=15min" in (dest / "telltale.timer").read_text()
    assert _verify(dest).stderr == ""
    run_cli(["service", "uninstall", "--system", "--init", "systemd", "--dest", str(dest)], home,
            extra_env=_env(tmp_path))
    assert list(dest.iterdir()) == []
