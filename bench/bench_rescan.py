"""The no-change re-scan: CPU of ``telltale scan --once`` when nothing changed, optionally before and after.

For a tree made by ``bench_corpus.py`` (its ``WORK/<variant>-<size>/home``), a first scan
fills a state; then ``--runs`` re-scans on that state measure what a timer-driven service
pays every interval when no agent wrote anything: interpreter start, imports, discovery,
one ``stat`` per source, the summary's commit. With ``--before-src DIR`` (a ``src``
directory of another checkout, e.g. ``git archive COMMIT src | tar -x -C /tmp/before``)
the other code gets a state of its own and the runs alternate (before, after, before, …),
so a loaded host weighs on both alike. CPU is the child's user+sys (its own rusage).
With ``--instructions`` each code also makes one re-scan under ``valgrind --tool=cachegrind``
and its instruction count is printed: a figure the host's load does not move.

With ``--one-new-line`` each run first appends one message to a Claude Code transcript (a
copy of its last line with a fresh ``uuid``), in a private copy of the tree per code: the
scan a timer-driven service pays every interval while an agent is working (the changed
source is read, the rule pack comes from its cache, the new events are written).

    python bench/bench_rescan.py /tmp/telltale-bench-corpus/all-54/home [--runs 15]
                                 [--before-src /tmp/before/src] [--instructions]
                                 [--one-new-line]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import instructions  # noqa: E402

#: Spawns the scan and reports its CPU and exit code (its own rusage, not this script's).
_WRAP = """
import json, os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, ru = os.wait4(pid, 0)
print("TT-CPU " + json.dumps([ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)]), file=sys.stderr)
"""


def _scan_argv(home: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "telltale", "scan", "--once", "--root", str(home), "--json",
            "--log-path", str(out / "events.jsonl"), "--state-path", str(out / "state.sqlite")]


def _scan_env(src: Path, home: Path, out: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TELLTALE_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HOME=str(home), PYTHONPATH=str(src), XDG_CACHE_HOME=str(out / "cache"))
    return env


def scan_instructions(src: Path, home: Path, out: Path) -> int:
    """The instructions one ``scan --once`` executes (cachegrind's ``I refs``)."""
    return instructions.count(_scan_argv(home, out), _scan_env(src, home, out))


def scan_cpu(src: Path, home: Path, out: Path) -> float:
    """One ``scan --once`` of ``home`` with the code in ``src`` into ``out``: its CPU seconds."""
    argv = [sys.executable, "-c", _WRAP, *_scan_argv(home, out)]
    done = subprocess.run(argv, env=_scan_env(src, home, out), capture_output=True, text=True, check=False)
    line = next((ln for ln in done.stderr.splitlines() if ln.startswith("TT-CPU ")), None)
    if line is None:
        raise SystemExit(f"no CPU figure from the scan: {done.stderr[-500:]}")
    cpu, code = json.loads(line[len("TT-CPU "):])
    if code != 0:  # a failed scan's time measures nothing
        raise SystemExit(f"scan exited {code}: {done.stderr[-500:]}")
    return float(cpu)


def _transcript(home: Path) -> Path:
    """The largest Claude Code transcript of a tree (the one a new line is appended to)."""
    found = sorted((home / ".claude" / "projects").rglob("*.jsonl"), key=lambda p: (-p.stat().st_size, str(p)))
    if not found:
        raise SystemExit(f"--one-new-line needs a Claude Code transcript under {home}/.claude/projects")
    return found[0]


def append_line(transcript: Path) -> None:
    """Append a copy of the transcript's last record with a fresh ``uuid`` (a new message)."""
    last = transcript.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    record = json.loads(last)
    record["uuid"] = str(uuid.uuid4())
    with transcript.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before-src", type=Path, help="another checkout's src directory, run alternately")
    parser.add_argument("--instructions", action="store_true",
                        help="also count one re-scan's instructions per code (needs valgrind)")
    parser.add_argument("--one-new-line", action="store_true",
                        help="before each run append one message to a transcript (private copies of the tree)")
    args = parser.parse_args()
    if args.instructions and not instructions.available():
        parser.error("--instructions needs valgrind on PATH (Debian package valgrind)")
    codes = {"after": HERE.parent / "src"}
    if args.before_src:
        codes = {"before": args.before_src, **codes}
    runs: dict[str, list[float]] = {name: [] for name in codes}
    with tempfile.TemporaryDirectory(prefix="telltale-bench-rescan-") as tmp:
        outs = {name: Path(tmp) / name for name in codes}
        homes = {name: args.home for name in codes}
        for name, src in codes.items():
            outs[name].mkdir()
            if args.one_new_line:
                homes[name] = outs[name] / "home"
                shutil.copytree(args.home, homes[name], symlinks=True)
            scan_cpu(src, homes[name], outs[name])  # the cold scan that fills the state

        def scan(name: str, src: Path, count: bool = False) -> float:
            if args.one_new_line:
                append_line(_transcript(homes[name]))
            if count:
                return scan_instructions(src, homes[name], outs[name])
            return scan_cpu(src, homes[name], outs[name])

        for _ in range(args.runs):
            for name, src in codes.items():
                runs[name].append(scan(name, src))
        counts = {name: scan(name, src, count=True) for name, src in codes.items() if args.instructions}
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    what = "one new line" if args.one_new_line else "no-change re-scan"
    print(f"{args.home}: {what}, CPU of {args.runs} runs (load {load})")
    for name, cpus in runs.items():
        print(f"  {name}: median {statistics.median(cpus):.3f}s, best {min(cpus):.3f}s, "
              f"worst {max(cpus):.3f}s" + (f", {counts[name] / 1e6:,.1f} M instructions" if counts else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
