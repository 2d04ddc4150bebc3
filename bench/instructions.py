"""Instruction counts of one command (cachegrind's ``I refs``), for the benchmarks.

CPU times on a shared host move ±15% between runs of the same command; the instructions
a process executes do not, as long as the interpreter's string hashing is fixed
(``PYTHONHASHSEED=0``: set and dict orders, hence some of the work, follow the seed).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence

VALGRIND = ("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null")


def available() -> bool:
    """Whether valgrind is on PATH (Debian package ``valgrind``)."""
    return shutil.which("valgrind") is not None


def count(argv: Sequence[str], env: Mapping[str, str], *, ok: Sequence[int] = (0,)) -> int:
    """The instructions ``argv`` executes (its exit code must be one of ``ok``)."""
    done = subprocess.run([*VALGRIND, *argv], env={**env, "PYTHONHASHSEED": "0"}, capture_output=True,
                          text=True, check=False)
    found = re.search(r"I\s+refs:\s+([0-9,]+)", done.stderr)
    if done.returncode not in ok or found is None:
        raise SystemExit(f"valgrind gave no instruction count (exit {done.returncode}): {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))
