"""One error hierarchy, so every boundary knows what it may catch.

Messages are bounded and content-free: they name a path hash, a coordinate or a
reason, never transcript text.
"""

from __future__ import annotations

from typing import Any

from telltale.exitcodes import ExitCode


class TelltaleError(Exception):
    """Base of every error Telltale raises on purpose; ``exit_code`` is what the CLI returns."""

    exit_code: ExitCode = ExitCode.FAILED


class UsageError(TelltaleError):
    """Bad command-line usage or configuration: exit code 2, one clear line."""

    exit_code = ExitCode.USAGE


class StateError(TelltaleError):
    """The state database cannot be used (damaged, not a database, read-only, disk full):
    exit 1, one line naming the path, what happened and the recovery step."""

    def __init__(self, path: str, what: str, recovery: str) -> None:
        self.path = path
        self.what = what
        self.recovery = recovery
        super().__init__(f"state database {path}: {what}; {recovery}")


class StateLocked(TelltaleError):
    """Another writer holds the state's lock (exit 75). ``holder`` is a ``LockHolder`` or None."""

    exit_code = ExitCode.LOCKED

    def __init__(self, lock_path: str, holder: Any = None) -> None:
        self.lock_path = lock_path
        self.holder = holder
        who = holder.describe() if holder is not None else "another process (holder not known)"
        state = lock_path.removesuffix(".lock")
        super().__init__(f"state {state} is in use by {who}; try again later or pass --wait-lock SECONDS")


class ConfigError(UsageError):
    """A configuration file is malformed; the message names the file and the problem."""


class DiscoveryError(TelltaleError):
    """A candidate store was rejected (symlink, traversal, not a regular file, budget)."""

    def __init__(self, reason: str, path: str, detail: str = "") -> None:
        self.reason = reason
        self.path = path
        self.detail = detail
        super().__init__(f"{reason}: {path}" + (f" ({detail})" if detail else ""))


class SourceError(TelltaleError):
    """A whole source failed atomically: nothing from it is emitted, its cursor stays.

    ``reason`` is a short machine-readable token (``locked``, ``identity_conflict``,
    ``over_budget``, ``unreadable``, ``schema``...); ``detail`` is bounded and content-free.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail[:512]
        super().__init__(f"{reason}: {self.detail}" if detail else reason)


class UnsupportedSource(SourceError):
    """A store was found but cannot be read (``encrypted``, ``unknown_format``, ``no_decoder``).

    Not a failure of the scan: the pipeline reports the source as ``unsupported`` once
    (a ``source_unsupported`` health event) instead of as a scanner error.
    """


class OutputError(TelltaleError):
    """A required output could not be written durably; cursors must not advance."""
