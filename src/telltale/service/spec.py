"""What a service runs: a long-lived ``watch`` or a periodic ``scan --once``, for a user or the host."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Literal

from telltale.errors import UsageError

Scope = Literal["user", "system"]
Mode = Literal["watch", "timer"]

#: The name every init system knows the service by (unit ``telltale.service``, launchd label, task name).
NAME = "telltale"
LAUNCHD_LABEL = "dev.telltale.sensor"
DEFAULT_EVERY = 300
MIN_EVERY = 30

_DURATION = re.compile(r"^\s*(\d+)\s*(s|sec|m|min|h|hr)?\s*$", re.IGNORECASE)
_UNIT = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600}


def parse_every(text: str) -> int:
    """``5m`` -> 300; plain numbers are seconds. At least 30 s (a scan of an idle host is cheap,
    but a fleet firing every few seconds is not)."""
    match = _DURATION.match(text)
    if match is None:
        raise UsageError(f"--every {text!r}: expected a duration such as 90s, 5m or 1h")
    seconds = int(match.group(1)) * _UNIT[(match.group(2) or "s").lower()]
    if seconds < MIN_EVERY:
        raise UsageError(f"--every {text!r}: at least {MIN_EVERY}s")
    return seconds


@dataclass(frozen=True)
class ServiceSpec:
    """One service definition, independent of the init system that runs it."""

    scope: Scope
    mode: Mode
    state_dir: str
    log_dir: str
    every: int = DEFAULT_EVERY
    #: How to start Telltale: this interpreter with ``-m telltale`` (absolute, so a venv works).
    command: tuple[str, ...] = field(default_factory=lambda: (sys.executable, "-m", "telltale"))

    @property
    def argv(self) -> list[str]:
        run = ["watch"] if self.mode == "watch" else ["scan", "--once"]
        return [*self.command, *run, "--profile", self.scope]

    @property
    def description(self) -> str:
        what = "watching" if self.mode == "watch" else f"scanning every {duration(self.every)}"
        whose = "this user's" if self.scope == "user" else "every local user's"
        return f"Telltale: {what} {whose} AI coding-agent session stores"


def duration(seconds: int) -> str:
    """``300`` -> ``5min`` (systemd's spelling, readable everywhere)."""
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}min"
    return f"{seconds}s"
