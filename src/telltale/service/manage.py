"""Install, remove and inspect the service on this platform (systemd, launchd or Task Scheduler).

Files are written atomically (0644: init systems read them as another user) and only under
the init system's own directories, or under ``--dest`` for packaging and review. Enabling and
starting go through the init system's own tool; when it cannot be reached (a container
without a user manager) the files stay installed and the error says the command to run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from telltale.errors import TelltaleError
from telltale.exitcodes import ExitCode
from telltale.service import launchd, systemd, windows
from telltale.service.spec import LAUNCHD_LABEL, NAME, ServiceSpec

#: Seconds a single init-system command may take.
TOOL_TIMEOUT = 30


class EnableError(TelltaleError):
    """The files are installed but the init system did not take them."""

    exit_code = ExitCode.FAILED


def platform_kind(platform: str | None = None) -> str:
    platform = sys.platform if platform is None else platform
    if platform == "darwin":
        return "launchd"
    if platform.startswith("win"):
        return "windows"
    return "systemd"


def unit_dir(kind: str, scope: str, dest: str | None = None) -> Path:
    """Where the init system reads service definitions of ``scope``."""
    if dest:
        return Path(dest)
    home = Path.home()
    if kind == "systemd":
        if scope == "system":
            return Path("/etc/systemd/system")
        base = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
        return Path(base) / "systemd" / "user"
    if kind == "launchd":
        return Path("/Library/LaunchDaemons") if scope == "system" else home / "Library" / "LaunchAgents"
    from telltale.config.roots import system_config_dir, user_config_dir

    return (system_config_dir() if scope == "system" else user_config_dir()) / "service"


def render(kind: str, spec: ServiceSpec) -> dict[str, bytes]:
    """File name -> bytes of every file the service needs on ``kind``."""
    if kind == "systemd":
        return {name: text.encode() for name, text in systemd.units(spec).items()}
    if kind == "launchd":
        return {f"{LAUNCHD_LABEL}.plist": launchd.render(spec)}
    return {f"{NAME}.xml": windows.render(spec)}


#: Every file name any mode may have written (a mode change removes the other mode's files).
def _all_names(kind: str) -> tuple[str, ...]:
    if kind == "systemd":
        return (f"{NAME}.service", f"{NAME}.timer")
    if kind == "launchd":
        return (f"{LAUNCHD_LABEL}.plist",)
    return (f"{NAME}.xml",)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


@dataclass
class Result:
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


def _tool(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    if shutil.which(argv[0]) is None:
        raise FileNotFoundError(argv[0])
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=TOOL_TIMEOUT, check=False)


def _systemctl(scope: str, *words: str) -> list[str]:
    return ["systemctl", *(["--user"] if scope == "user" else []), *words]


def _enable_commands(kind: str, spec: ServiceSpec, directory: Path) -> list[list[str]]:
    if kind == "systemd":
        target = f"{NAME}.timer" if spec.mode == "timer" else f"{NAME}.service"
        return [_systemctl(spec.scope, "daemon-reload"), _systemctl(spec.scope, "enable", "--now", target)]
    if kind == "launchd":
        domain = "system" if spec.scope == "system" else f"gui/{os.getuid()}"
        path = str(directory / f"{LAUNCHD_LABEL}.plist")
        return [["launchctl", "bootout", f"{domain}/{LAUNCHD_LABEL}"], ["launchctl", "bootstrap", domain, path]]
    return [["schtasks", "/Create", "/TN", NAME, "/XML", str(directory / f"{NAME}.xml"), "/F"]]


def _disable_commands(kind: str, scope: str) -> list[list[str]]:
    if kind == "systemd":
        return [_systemctl(scope, "disable", "--now", f"{NAME}.timer", f"{NAME}.service"),
                _systemctl(scope, "daemon-reload")]
    if kind == "launchd":
        domain = "system" if scope == "system" else f"gui/{os.getuid()}"
        return [["launchctl", "bootout", f"{domain}/{LAUNCHD_LABEL}"]]
    return [["schtasks", "/Delete", "/TN", NAME, "/F"]]


def _run_all(commands: list[list[str]], *, tolerate_first: bool = False) -> list[str]:
    """Run each command; the first failure raises with the commands left to run by hand."""
    done: list[str] = []
    for index, argv in enumerate(commands):
        shown = " ".join(argv)
        try:
            proc = _tool(argv)
        except (FileNotFoundError, OSError, subprocess.TimeoutExpired) as exc:
            reason = f"{argv[0]} not found" if isinstance(exc, FileNotFoundError) else type(exc).__name__
            raise EnableError(_left(commands[index:], reason)) from None
        if proc.returncode != 0 and not (tolerate_first and index == 0):
            reason = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:200]
            raise EnableError(_left(commands[index:], reason))
        done.append(shown)
    return done


def _left(commands: list[list[str]], reason: str) -> str:
    todo = "; ".join(" ".join(c) for c in commands)
    return f"the service files are installed, but the init system did not take them ({reason}); run: {todo}"


def install(kind: str, spec: ServiceSpec, *, dest: str | None = None, enable: bool = True) -> Result:
    directory = unit_dir(kind, spec.scope, dest)
    files = render(kind, spec)
    result = Result()
    for name in _all_names(kind):
        path = directory / name
        if name not in files and path.exists():
            path.unlink()  # e.g. the timer of an earlier timer-mode install, when switching to watch
            result.removed.append(str(path))
    for name, data in files.items():
        _write(directory / name, data)
        result.written.append(str(directory / name))
    if enable and dest is None:
        # launchd: bootout of a job not loaded fails, which is fine before a bootstrap.
        result.commands = _run_all(_enable_commands(kind, spec, directory), tolerate_first=kind == "launchd")
    return result


def uninstall(kind: str, scope: str, *, dest: str | None = None, disable: bool = True) -> Result:
    directory = unit_dir(kind, scope, dest)
    result = Result()
    present = [directory / n for n in _all_names(kind) if (directory / n).exists()]
    if disable and dest is None and present:
        with contextlib.suppress(EnableError):  # removing the files is what matters; status tells the rest
            result.commands = _run_all(_disable_commands(kind, scope)[:1])
    for path in present:
        path.unlink()
        result.removed.append(str(path))
    if disable and dest is None and present and kind == "systemd":
        with contextlib.suppress(EnableError):
            result.commands += _run_all(_disable_commands(kind, scope)[1:])
    return result


def _query(argv: list[str]) -> str:
    try:
        proc = _tool(argv)
    except (FileNotFoundError, OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({argv[0]} not found)" if isinstance(exc, FileNotFoundError) else "unknown"
    out = proc.stdout.strip().splitlines()
    if out:
        return out[0]
    err = proc.stderr.strip().splitlines()
    return f"unknown ({err[-1][:120]})" if err else f"unknown (exit {proc.returncode})"


def state(kind: str, scope: str, dest: str | None = None) -> dict[str, Any]:
    """Installed (files), enabled and running as the init system reports them."""
    directory = unit_dir(kind, scope, dest)
    files = [str(directory / n) for n in _all_names(kind) if (directory / n).exists()]
    info: dict[str, Any] = {"init": kind, "scope": scope, "installed": bool(files), "files": files}
    mode = None
    if files:
        mode = "timer" if any(f.endswith(".timer") for f in files) else "watch"
        if kind == "launchd":
            mode = "timer" if b"StartInterval" in Path(files[0]).read_bytes() else "watch"
        elif kind == "windows":
            mode = "timer" if "TimeTrigger" in Path(files[0]).read_bytes().decode("utf-16") else "watch"
    info["mode"] = mode
    if not files:
        info["enabled"] = info["running"] = "no"
        return info
    if kind == "systemd":
        unit = f"{NAME}.timer" if mode == "timer" else f"{NAME}.service"
        info["enabled"] = _query(_systemctl(scope, "is-enabled", unit))
        info["running"] = _query(_systemctl(scope, "is-active", f"{NAME}.service"))
        if mode == "timer":
            info["timer"] = _query(_systemctl(scope, "is-active", unit))
    elif kind == "launchd":
        domain = "system" if scope == "system" else f"gui/{os.getuid()}"
        loaded = _query(["launchctl", "print", f"{domain}/{LAUNCHD_LABEL}"])
        info["enabled"] = "unknown" if loaded.startswith("unknown") else "loaded"
        info["running"] = loaded
    else:
        info["enabled"] = info["running"] = _query(["schtasks", "/Query", "/TN", NAME, "/FO", "LIST"])
    return info
