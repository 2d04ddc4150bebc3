"""Default locations of the log and the state per profile (light: read commands import only this).

``user`` (default): platformdirs' user state directory holds both. ``system`` (a service
watching the host): ``/var/lib/telltale`` and ``/var/log/telltale`` on Linux and other Unix,
``/Library/Application Support/Telltale/state`` and ``/Library/Logs/Telltale`` on macOS,
``%ProgramData%\\Telltale\\state`` and ``...\\logs`` on Windows. ``TELLTALE_LOG_PATH`` and
``TELLTALE_STATE_PATH`` (and the flags) override either.
"""

from __future__ import annotations

import os
import sys

import platformdirs

PROFILES = ("user", "system")


def _system_dirs(platform: str | None = None) -> tuple[str, str]:
    platform = sys.platform if platform is None else platform
    if platform == "darwin":
        return "/Library/Application Support/Telltale/state", "/Library/Logs/Telltale"
    if platform.startswith("win"):
        base = os.path.join(os.environ.get("PROGRAMDATA") or r"C:\ProgramData", "Telltale")
        return os.path.join(base, "state"), os.path.join(base, "logs")
    return "/var/lib/telltale", "/var/log/telltale"


def profile_state_dir(profile: str = "user", platform: str | None = None) -> str:
    if profile == "system":
        return _system_dirs(platform)[0]
    return platformdirs.user_state_dir("telltale", appauthor=False)


def profile_log_dir(profile: str = "user", platform: str | None = None) -> str:
    if profile == "system":
        return _system_dirs(platform)[1]
    return profile_state_dir("user")


def profile_log_path(profile: str = "user") -> str:
    return os.environ.get("TELLTALE_LOG_PATH") or os.path.join(profile_log_dir(profile), "telltale-events.jsonl")


def profile_state_path(profile: str = "user") -> str:
    return os.environ.get("TELLTALE_STATE_PATH") or os.path.join(profile_state_dir(profile), "state.sqlite")


def default_state_dir() -> str:
    return profile_state_dir("user")


def default_log_path() -> str:
    return profile_log_path("user")


def default_state_path() -> str:
    return profile_state_path("user")
