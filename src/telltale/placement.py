"""Where Telltale may write: the log and the state, checked before anything is written.

A log or state path that is, or resolves into, an agent's store would write Telltale's
output into the agent's files (a symlinked ``--log-path`` into a transcript directory
appends events to the transcript). Every check here runs on *resolved* paths, before
the lock, the state or the log is created, and refuses with one line (exit 2).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from telltale.errors import UsageError

#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
#: Files SQLite and the lock keep beside a state database.
STATE_COMPANIONS = ("-wal", "-shm", "-journal", ".lock")
#: Bytes of an existing log read to tell whether it is a JSONL event log.
_HEAD_BYTES = 4096


def check_write_paths(
    state_path: str,
    log_path: str,
    *,
    stores: Iterable[str] = (),
) -> None:
    """Refuse a state or log path Telltale must not write (see the module docstring).

    ``stores``: directories holding agent data (store roots, watched and pending roots,
    the directories of discovered sources).
    """
    labelled = {"--state-path": state_path, "--log-path": log_path}
    resolved = {label: _resolve(label, path) for label, path in labelled.items()}
    for label, path in labelled.items():
        _check_kind(label, path, resolved[label])
    _check_distinct(state_path, log_path, resolved["--state-path"], resolved["--log-path"])
    dirs = _StoreDirs(stores)
    for label, path in labelled.items():
        target = resolved[label]
        inside = dirs.containing(target)
        if inside:
            shown = f" (resolves to {target})" if target != os.path.abspath(path) else ""
            raise UsageError(
                f"{label} {path}{shown} is inside a scanned session store ({inside}); choose a path outside it"
            )
    _check_log_content(log_path, resolved["--log-path"])


class _StoreDirs:
    """Store directories, each as it can be compared with a resolved path cheaply.

    One that exists is kept as its identity (device, inode: one ``stat``); one that does
    not (a root where a store may appear) as its resolved path, resolving only its nearest
    existing ancestor (shared by many, resolved once). Resolving hundreds of store
    directories component by component was most of a no-change scan's placement check.
    """

    def __init__(self, stores: Iterable[str]) -> None:
        self.identities: dict[tuple[int, int], str] = {}
        self.paths: set[str] = set()
        resolved_parents: dict[str, str] = {}
        for d in set(stores):
            try:
                st = os.stat(d)
            except OSError:
                self.paths.add(_resolve_missing(d, resolved_parents))
            else:
                self.identities.setdefault((st.st_dev, st.st_ino), d)

    def containing(self, target: str) -> str | None:
        """The resolved store directory (the first in name order) that is, or holds, the
        resolved path ``target``; ``None`` when there is none."""
        found = [
            p for p in self.paths if target == p or target.startswith(p.rstrip(os.sep) + os.sep)
        ]
        node = target
        while True:
            try:
                st = os.stat(node)
            except OSError:
                pass
            else:
                d = self.identities.get((st.st_dev, st.st_ino))
                if d is not None:
                    found.append(os.path.realpath(d))
            parent = os.path.dirname(node)
            if parent == node:
                break
            node = parent
        return min(found) if found else None


def _resolve_missing(path: str, memo: dict[str, str]) -> str:
    """``os.path.realpath`` of a path that does not exist: its nearest existing ancestor
    resolved (memoised), the missing rest appended as it is."""
    path = os.path.abspath(path)
    if ".." in path.split(os.sep):
        return os.path.realpath(path)
    missing: list[str] = []
    node = path
    while node not in memo:
        parent, name = os.path.split(node)
        if not name or os.path.lexists(node):
            memo[node] = os.path.realpath(node)
            break
        missing.append(node)
        node = parent
    for child in reversed(missing):  # each missing directory on the way, resolved once
        memo[child] = os.path.join(memo[node], os.path.basename(child))
        node = child
    return memo[path]


def _resolve(label: str, path: str) -> str:
    if os.path.islink(path) and not os.path.exists(path):
        raise UsageError(f"{label} {path} is a dangling symbolic link (to {os.readlink(path)}); "
                         "remove the link or point it at a real file")
    return os.path.realpath(path)


def _check_kind(label: str, path: str, target: str) -> None:
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"{label} {path} cannot be examined: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{label} {path} is a directory; name a file")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{label} {path} is not a regular file")


def _check_distinct(state_path: str, log_path: str, state: str, log: str) -> None:
    same = state == log
    if not same and os.path.exists(state) and os.path.exists(log):
        same = os.path.samefile(state, log)  # hard links
    if same:
        raise UsageError(f"--log-path {log_path} and --state-path {state_path} are the same file; give each its own")
    for suffix in STATE_COMPANIONS:
        if log == state + suffix:
            raise UsageError(f"--log-path {log_path} is the state database's {suffix} file; choose another path")


def _check_log_content(log_path: str, target: str) -> None:
    """An existing, non-empty log must look like a JSONL event log (we append to it)."""
    try:
        with open(target, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"--log-path {log_path} cannot be read: {exc.strerror}") from None
    if not head:
        return
    if head.startswith(SQLITE_HEADER):
        raise UsageError(f"--log-path {log_path} is a SQLite database, not a JSONL event log; choose another path")
    if not head.lstrip(b" \t\r\n").startswith(b"{") or b"\x00" in head:
        raise UsageError(
            f"--log-path {log_path} exists and is not a JSONL event log (its first line is not a JSON object); "
            "choose another path"
        )
