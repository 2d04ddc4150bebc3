"""End-to-end scan benchmark on a generated Claude Code tree.

Measures, with the real CLI in a subprocess (one core: the scanner is single-threaded):

* cold full-scan throughput (MB/s of transcript bytes) with ``--content redacted``, with and
  without the default detection rules, next to a plain ``msgspec`` decode of the same lines;
* a re-scan with no changes, as a fraction of the cold scan;
* peak RSS of a scan of one large transcript (``--big-mb``, default 1000).

    python bench/bench_scan.py [--size-mb 200] [--big-mb 1000] [--work DIR] [--skip-big]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def generate(projects: Path, size_mb: int, files: int) -> int:
    if not projects.exists():
        subprocess.run(
            [sys.executable, str(HERE / "gen_claude_tree.py"), str(projects), "--size-mb", str(size_mb),
             "--files", str(files)],
            check=True,
        )
    return sum(p.stat().st_size for p in projects.rglob("*.jsonl"))


def plain_decode(projects: Path) -> float:
    """CPU seconds to read every line and msgspec-decode it (untyped), the floor to compare with."""
    decoder = msgspec.json.Decoder()
    start = time.process_time()
    for path in sorted(projects.rglob("*.jsonl")):
        with path.open("rb") as fh:
            for line in fh:
                with contextlib.suppress(msgspec.DecodeError):
                    decoder.decode(line)
    return time.process_time() - start


def scan(home: Path, out: Path, *extra: str) -> tuple[dict[str, object], float, float]:
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(REPO / "src"))
    cmd = [sys.executable, "-m", "telltale", "scan", "--once", "--root", str(home), "--json",
           "--log-path", str(out / "events.jsonl"), "--state-path", str(out / "state.sqlite"),
           "--content", "redacted", "--install-inventory-disabled", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return json.loads(proc.stdout), elapsed, cpu


def peak_rss_kib(home: Path, out: Path) -> int:
    """Peak RSS of one scan, measured by a fresh wrapper process so earlier runs don't count."""
    code = (
        "import resource,subprocess,sys;"
        "subprocess.run(sys.argv[1:],check=True,stdout=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(REPO / "src"))
    cmd = [sys.executable, "-c", code, sys.executable, "-m", "telltale", "scan", "--once", "--root", str(home),
           "--json", "--log-path", str(out / "events.jsonl"), "--state-path", str(out / "state.sqlite"),
           "--install-inventory-disabled"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return int(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--files", type=int, default=48)
    ap.add_argument("--big-mb", type=int, default=1000)
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "telltale-bench")
    args = ap.parse_args()

    home = args.work / f"home-{args.size_mb}"
    projects = home / ".claude" / "projects"
    total = generate(projects, args.size_mb, args.files)
    mb = total / 1e6
    print(f"tree: {mb:.1f} MB in {sum(1 for _ in projects.rglob('*.jsonl'))} transcripts")

    base = plain_decode(projects)
    print(f"plain msgspec decode: {base:.2f}s = {mb / base:.0f} MB/s")

    for label, extra in (("no detection", ("--no-detect",)), ("default rules", ())):
        out = args.work / f"out-{label.replace(' ', '-')}"
        shutil.rmtree(out, ignore_errors=True)
        summary, wall, cpu = scan(home, out, *extra)
        inner = float(summary["duration_s"])  # type: ignore[arg-type]
        print(
            f"cold scan ({label}): {inner:.2f}s in-scan ({mb / inner:.0f} MB/s), {wall:.2f}s wall incl. startup "
            f"({mb / wall:.0f} MB/s), {cpu:.2f}s CPU incl. startup ({mb / cpu:.0f} MB/s); ratio to plain decode "
            f"{inner / base:.2f}x; {summary['emitted_count']} events, {summary['detection_count']} detections"
        )
        summary2, wall2, _ = scan(home, out, *extra)
        inner2 = float(summary2["duration_s"])  # type: ignore[arg-type]
        print(
            f"re-scan, no changes ({label}): {inner2 * 1000:.1f} ms in-scan = {100 * inner2 / inner:.2f}% of cold; "
            f"{wall2:.2f}s wall incl. interpreter startup; {summary2['sources_unchanged']} sources unchanged"
        )

    if not args.skip_big:
        big_home = args.work / f"big-{args.big_mb}"
        big_projects = big_home / ".claude" / "projects"
        big_total = generate(big_projects, args.big_mb, 1)
        largest = max(p.stat().st_size for p in big_projects.rglob("*.jsonl"))
        out = args.work / "out-big"
        shutil.rmtree(out, ignore_errors=True)
        rss = peak_rss_kib(big_home, out)
        print(
            f"single large transcript: {big_total / 1e6:.0f} MB tree, largest file {largest / 1e6:.0f} MB; "
            f"peak RSS {rss / 1024:.0f} MiB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
