"""Default locations of the log and the state (light: read commands import only this)."""

from __future__ import annotations

import os

import platformdirs


def default_state_dir() -> str:
    return platformdirs.user_state_dir("telltale", appauthor=False)


def default_log_path() -> str:
    return os.environ.get("TELLTALE_LOG_PATH") or os.path.join(default_state_dir(), "telltale-events.jsonl")


def default_state_path() -> str:
    return os.environ.get("TELLTALE_STATE_PATH") or os.path.join(default_state_dir(), "state.sqlite")
