"""Detection's cost in a cold scan (A/B against ``--no-detect``), optionally before and after.

For a tree made by ``bench_corpus.py`` (its ``WORK/<variant>-<size>/home``), runs
``telltale scan --once --jobs 1`` from a fresh state, interleaved: without detection,
with the default rules from nothing ("first scan", unless ``--cached-only``) and with
the compiled pack left beside the state by the previous run ("pack cached": the first
of these runs compiles it), ``--runs`` times, and prints the CPU (user+sys) medians and detection's share. With
``--before-src DIR`` (a ``src`` directory of another checkout, e.g. made by ``git archive
COMMIT src | tar -x -C /tmp/before``) the same runs are made with that code too, each
configuration of both in turn, so a loaded host weighs on both alike.

With ``--instructions`` each code also makes one scan of each configuration under
``valgrind --tool=cachegrind`` (``bench/instructions.py``), and detection's share is
printed in instructions too: a figure the host's load does not move (CPU medians of the
same code on this host have moved by ten points of share between runs).

    python bench/bench_detect_cost.py /tmp/telltale-bench-corpus/claude-54/home [--runs 9]
                                      [--cached-only] [--before-src /tmp/before/src] [--instructions]
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import instructions  # noqa: E402

#: Spawns the scan and reports its CPU (its own rusage, not this script's).
_WRAP = """
import json, os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, ru = os.wait4(pid, 0)
print("TT-CPU " + json.dumps([ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)]), file=sys.stderr)
"""


def _scan(src: Path, home: Path, out: Path, extra: list[str]) -> tuple[list[str], dict[str, str]]:
    """The scan's command line and environment (a fresh state in ``out``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TELLTALE_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HOME=str(home), PYTHONPATH=str(src), XDG_CACHE_HOME=str(out.parent / "cache"))
    args = ["scan", "--once", "--root", str(home), "--json", "--log-path", str(out / "e.jsonl"),
            "--state-path", str(out / "s.sqlite"), *extra]
    return [sys.executable, "-m", "telltale", *args], env


def scan_cpu(src: Path, home: Path, out: Path, extra: list[str]) -> float:
    argv, env = _scan(src, home, out, extra)
    proc = subprocess.run([sys.executable, "-c", _WRAP, *argv], env=env, capture_output=True, text=True)
    report = [line for line in proc.stderr.splitlines() if line.startswith("TT-CPU ")]
    if not report:
        raise SystemExit(f"scan failed: {proc.stderr[-2000:]}")
    cpu, code = json.loads(report[-1].split(" ", 1)[1])
    if code not in (0, 3):
        raise SystemExit(f"scan exit {code}: {proc.stderr[-2000:]}")
    return float(cpu)


def _fresh(out: Path, keep_pack: bool) -> None:
    """An empty state directory; with ``keep_pack``, the compiled pack stays if there is one."""
    if keep_pack and out.exists():
        for path in out.iterdir():
            if path.name != "rules.cache":
                path.unlink()
    else:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("home", type=Path)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--cached-only", action="store_true", help="no 'first scan' configuration")
    ap.add_argument("--before-src", type=Path, help="another checkout's src directory, measured alike")
    ap.add_argument("--instructions", action="store_true",
                    help="also count one scan of each configuration's instructions per code (needs valgrind)")
    args = ap.parse_args()
    if args.instructions and not instructions.available():
        ap.error("--instructions needs valgrind on PATH (Debian package valgrind)")
    codes = {"after": HERE.parent / "src"}
    if args.before_src is not None:
        codes = {"before": args.before_src, **codes}
    for src in codes.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True, stdout=subprocess.DEVNULL)
    configs = [("no-detect", ["--no-detect"]), ("pack cached", [])]
    if not args.cached_only:
        configs.insert(1, ("first scan", []))
    cpu: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="telltale-detect-cost-") as tmp:
        for _ in range(args.runs):
            for code, src in codes.items():
                # --jobs exists only in newer code; one job either way.
                jobs = ["--jobs", "1"] if (src / "telltale" / "readpool.py").exists() else []
                for name, extra in configs:
                    out = Path(tmp) / code / name
                    _fresh(out, keep_pack=name == "pack cached")
                    cpu.setdefault((code, name), []).append(scan_cpu(src, args.home, out, [*extra, *jobs]))
        counted: dict[tuple[str, str], int] = {}
        for code, src in codes.items() if args.instructions else ():
            jobs = ["--jobs", "1"] if (src / "telltale" / "readpool.py").exists() else []
            for name, extra in configs:
                out = Path(tmp) / code / name
                _fresh(out, keep_pack=name == "pack cached")
                if name == "pack cached" and not (out / "rules.cache").exists():
                    scan_cpu(src, args.home, out, [*extra, *jobs])  # compiles the pack, not counted
                    _fresh(out, keep_pack=True)
                argv, env = _scan(src, args.home, out, [*extra, *jobs])
                counted[(code, name)] = instructions.count(argv, env, ok=(0, 3))
    print(f"{args.home}: CPU medians of {args.runs} (load {os.getloadavg()[0]:.1f})")
    for code in codes:
        plain = statistics.median(cpu[(code, "no-detect")])
        parts = [f"no-detect {plain:.2f}s"]
        for name, _extra in configs[1:]:
            value = statistics.median(cpu[(code, name)])
            parts.append(f"{name} {value:.2f}s (+{value - plain:.2f}s = +{100 * (value - plain) / plain:.0f}%)")
        print(f"  {code}: " + ", ".join(parts))
    for code in codes if counted else ():
        plain_ir = counted[(code, "no-detect")]
        parts = [f"no-detect {plain_ir / 1e6:,.0f} M"]
        for name, _extra in configs[1:]:
            value_ir = counted[(code, name)]
            parts.append(f"{name} {value_ir / 1e6:,.0f} M (+{100 * (value_ir - plain_ir) / plain_ir:.1f}%)")
        print(f"  {code}, instructions of one scan each: " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
