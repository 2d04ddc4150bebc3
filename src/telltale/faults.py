"""Fault points for the crash harness (``bench/kill_stress.py``): kill or signal the scan at
a chosen instant.

``TELLTALE_FAULT=<point>:<n>[:<action>]`` fires ``action`` (``kill`` = SIGKILL, the
default; ``int`` = SIGINT; ``term`` = SIGTERM) at the ``n``-th time the scan passes
``point``. Points, in the order a window passes them:

``source``     before a source is read          ``batch``      after an adapter's batch
``begin``      the window's intent is durable   ``write``      inside the write (half written)
``fsync``      written, before the fsync        ``written``    durable, before the commit
``commit``     inside the commit transaction    ``enqueue``    while queueing for remote outputs
``committed``  after the commit                 ``inventory``  inside the inventory step
``recover``    finishing a killed scan's window

and, in a ``--jobs`` worker process only, ``worker``: after each batch it read (the worker
kills itself; its scan must go on without it).

``TELLTALE_FAULT_TRACE=<file>`` appends how often each point was passed when the process
exits (the harness uses it to pick instants that occur). Unset, every point is a single
global lookup: the hooks cost nothing in production.
"""

from __future__ import annotations

import atexit
import os
import signal
from collections.abc import Callable, Sequence

_ACTIONS = {"kill": signal.SIGKILL, "int": signal.SIGINT, "term": signal.SIGTERM}


def _plan(spec: str | None) -> tuple[str, int, int] | None:
    if not spec:
        return None
    point, _, rest = spec.partition(":")
    count, _, action = rest.partition(":")
    try:
        return point, max(int(count or "1"), 1), _ACTIONS[action or "kill"]
    except (KeyError, ValueError):
        return None


_PLAN = _plan(os.environ.get("TELLTALE_FAULT"))
_TRACE = os.environ.get("TELLTALE_FAULT_TRACE")
_COUNTS: dict[str, int] = {}
ACTIVE = _PLAN is not None or bool(_TRACE)


def _due(point: str) -> bool:
    count = _COUNTS[point] = _COUNTS.get(point, 0) + 1
    return _PLAN is not None and _PLAN[0] == point and _PLAN[1] == count


def disable(keep: str | None = None) -> None:
    """No fault point fires or is counted in this process (a ``--jobs`` worker: the points
    are the scanning process's, and a worker's counts would blur the harness's trace),
    except ``keep`` when it is the planned one (``worker``: a worker kills itself there)."""
    global _PLAN, _TRACE, ACTIVE
    _TRACE = None
    if _PLAN is None or _PLAN[0] != keep:
        _PLAN, ACTIVE = None, False


def _fire() -> None:
    assert _PLAN is not None
    os.kill(os.getpid(), _PLAN[2])


def hit(point: str) -> None:
    """Pass a fault point."""
    if ACTIVE and _due(point):
        _fire()


def write(point: str, fd: int, lines: Sequence[bytes], writer: Callable[[int, Sequence[bytes]], int]) -> int:
    """``writer(fd, lines)``, torn at this point: half the lines and part of the next."""
    if not (ACTIVE and _due(point)):
        return writer(fd, lines)
    half = len(lines) // 2
    written = writer(fd, lines[:half]) if half else 0
    if half < len(lines):
        written += os.write(fd, lines[half][: max(len(lines[half]) // 2, 1)])
    _fire()
    return written


def _dump() -> None:
    if _TRACE:
        with open(_TRACE, "a", encoding="utf-8") as fh:
            fh.write(" ".join(f"{k}={v}" for k, v in sorted(_COUNTS.items())) + "\n")


if _TRACE:
    atexit.register(_dump)
