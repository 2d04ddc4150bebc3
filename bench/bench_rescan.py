"""The no-change re-scan: CPU of ``telltale scan --once`` when nothing changed, optionally before and after.

For a tree made by ``bench_corpus.py`` (its ``WORK/<variant>-<size>/home``), a first scan
fills a state; then ``--runs`` re-scans on that state measure what a timer-driven service
pays every interval when no agent wrote anything: interpreter start, imports, discovery,
one ``stat`` per source, the summary's commit. With ``--before-src DIR`` (a ``src``
directory of another checkout, e.g. ``git archive COMMIT src | tar -x -C /tmp/before``)
the other code gets a state of its own and the runs alternate (before, after, before, …),
so a loaded host weighs on both alike. CPU is the child's user+sys (its own rusage).

    python bench/bench_rescan.py /tmp/telltale-bench-corpus/all-54/home [--runs 15]
                                 [--before-src /tmp/before/src]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Spawns the scan and reports its CPU and exit code (its own rusage, not this script's).
_WRAP = """
import json, os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, ru = os.wait4(pid, 0)
print("TT-CPU " + json.dumps([ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)]), file=sys.stderr)
"""


def scan_cpu(src: Path, home: Path, out: Path) -> float:
    """One ``scan --once`` of ``home`` with the code in ``src`` into ``out``: its CPU seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TELLTALE_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HOME=str(home), PYTHONPATH=str(src), XDG_CACHE_HOME=str(out / "cache"))
    argv = [sys.executable, "-c", _WRAP, sys.executable, "-m", "telltale", "scan", "--once", "--root", str(home),
            "--json", "--log-path", str(out / "events.jsonl"), "--state-path", str(out / "state.sqlite")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    line = next((ln for ln in done.stderr.splitlines() if ln.startswith("TT-CPU ")), None)
    if line is None:
        raise SystemExit(f"no CPU figure from the scan: {done.stderr[-500:]}")
    cpu, code = json.loads(line[len("TT-CPU "):])
    if code != 0:  # a failed scan's time measures nothing
        raise SystemExit(f"scan exited {code}: {done.stderr[-500:]}")
    return float(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before-src", type=Path, help="another checkout's src directory, run alternately")
    args = parser.parse_args()
    codes = {"after": HERE.parent / "src"}
    if args.before_src:
        codes = {"before": args.before_src, **codes}
    runs: dict[str, list[float]] = {name: [] for name in codes}
    with tempfile.TemporaryDirectory(prefix="telltale-bench-rescan-") as tmp:
        outs = {name: Path(tmp) / name for name in codes}
        for name, src in codes.items():
            outs[name].mkdir()
            scan_cpu(src, args.home, outs[name])  # the cold scan that fills the state
        for _ in range(args.runs):
            for name, src in codes.items():
                runs[name].append(scan_cpu(src, args.home, outs[name]))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.home}: no-change re-scan, CPU of {args.runs} runs (load {load})")
    for name, cpus in runs.items():
        print(f"  {name}: median {statistics.median(cpus):.3f}s, best {min(cpus):.3f}s, "
              f"worst {max(cpus):.3f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
