"""systemd units: ``telltale.service`` (and ``telltale.timer`` in timer mode).

The system unit is sandboxed: the whole file system is read-only to it (``ProtectSystem=strict``,
``ProtectHome=read-only`` keeps the users' homes readable, which is the point), and it may
write only its ``StateDirectory`` and ``LogsDirectory`` (``/var/lib/telltale``,
``/var/log/telltale``, created by systemd with modes 0700 and 0750). It keeps one capability,
``CAP_DAC_READ_SEARCH``, to read transcripts that are private to their owners. The user unit
gets the settings that need no namespaces (a user manager may not have them).

Stopping sends SIGTERM; Telltale commits what it read and exits 143, which counts as a clean
stop. Exit 2 (configuration error) is not restarted: it would fail the same way again.
"""

from __future__ import annotations

from telltale.service.spec import NAME, ServiceSpec, duration

#: Hardening for the system unit (each line is one systemd.exec(5) setting).
SYSTEM_HARDENING = (
    "NoNewPrivileges=yes",
    "ProtectSystem=strict",
    "ProtectHome=read-only",
    "PrivateTmp=yes",
    "PrivateDevices=yes",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes",
    "ProtectClock=yes",
    "ProtectHostname=yes",
    "ProtectProc=invisible",
    "RestrictNamespaces=yes",
    "RestrictRealtime=yes",
    "RestrictSUIDSGID=yes",
    "LockPersonality=yes",
    "RemoveIPC=yes",
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
    "SystemCallArchitectures=native",
    "SystemCallFilter=@system-service",
    "SystemCallFilter=~@privileged @resources",
    "CapabilityBoundingSet=CAP_DAC_READ_SEARCH",
    "UMask=0027",
    "StateDirectory=telltale",
    "StateDirectoryMode=0700",
    "LogsDirectory=telltale",
    "LogsDirectoryMode=0750",
)

#: What a user manager can apply without user namespaces.
USER_HARDENING = (
    "NoNewPrivileges=yes",
    "LockPersonality=yes",
    "RestrictRealtime=yes",
    "RestrictSUIDSGID=yes",
    "SystemCallArchitectures=native",
    "UMask=0077",
)


def quote(arg: str) -> str:
    """One ExecStart word: ``%`` doubled (specifiers), quoted when it holds blanks or quotes."""
    arg = arg.replace("%", "%%")
    if arg and not any(c in arg for c in ' \t"\'\\;$'):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$") + '"'


def exec_start(spec: ServiceSpec) -> str:
    return " ".join(quote(a) for a in spec.argv)


def service_unit(spec: ServiceSpec) -> str:
    watch = spec.mode == "watch"
    unit = [
        "[Unit]",
        f"Description={spec.description}",
    ]
    if spec.scope == "system":
        unit += ["Wants=network-online.target", "After=network-online.target"]
    service = [
        "",
        "[Service]",
        f"Type={'exec' if watch else 'oneshot'}",
        f"ExecStart={exec_start(spec)}",
        # `systemctl reload`: a watch reads its rules again (a timer's scan reads them each run).
        *(["ExecReload=/bin/kill -HUP $MAINPID"] if watch else []),
        # SIGTERM: committed work stays committed and the exit status is 143 (a clean stop);
        # 75: another writer holds the state, the next run will do the work.
        "SuccessExitStatus=143 75",
        "Restart=on-failure",
        "RestartSec=30s",
        "RestartPreventExitStatus=2",
        "TimeoutStopSec=60s",
        "StandardOutput=journal",
        "StandardError=journal",
        f"SyslogIdentifier={NAME}",
        "Nice=10",
        "IOSchedulingClass=idle",
    ]
    service += list(SYSTEM_HARDENING if spec.scope == "system" else USER_HARDENING)
    install = ["", "[Install]"]
    if watch:
        install.append(f"WantedBy={'multi-user.target' if spec.scope == 'system' else 'default.target'}")
    else:
        # Started by its timer only; an [Install] section with nothing in it says so.
        install = []
    return "\n".join(unit + service + install) + "\n"


def timer_unit(spec: ServiceSpec) -> str:
    """Runs ``telltale.service`` ``every`` seconds after the previous run ended (never overlapping),
    with a random delay so a fleet does not scan and send in step."""
    return "\n".join([
        "[Unit]",
        f"Description={spec.description} (timer)",
        "",
        "[Timer]",
        "OnActiveSec=1min",
        f"OnUnitInactiveSec={duration(spec.every)}",
        f"RandomizedDelaySec={duration(max(1, spec.every // 10))}",
        f"Unit={NAME}.service",
        "",
        "[Install]",
        "WantedBy=timers.target",
    ]) + "\n"


def units(spec: ServiceSpec) -> dict[str, str]:
    """File name -> text of every unit of ``spec``."""
    out = {f"{NAME}.service": service_unit(spec)}
    if spec.mode == "timer":
        out[f"{NAME}.timer"] = timer_unit(spec)
    return out
