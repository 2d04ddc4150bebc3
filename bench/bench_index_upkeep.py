"""What the read-side index costs a cold scan, measured inside the scan.

Runs cold scans of a tree in-process, alternating scans whose index upkeep runs (timed
with ``time.thread_time`` around each window's ``index_window``, on the scanning thread)
and scans where it is replaced by a no-op, and reports the medians: the scan's CPU
(``time.process_time``) with and without upkeep, and upkeep alone as a share of the scan
without it. CPU time, not wall time, so a busy host disturbs the ratio less.

    python bench/bench_index_upkeep.py ROOT [--repeat 5] [--no-rules]

ROOT is a home or fixture tree (e.g. one made by ``gen_claude_tree.py``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

import telltale.pipeline as pipeline  # noqa: E402
from telltale.discovery import DiscoveryOptions, discover  # noqa: E402
from telltale.pipeline import Scanner, ScanOptions  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-rules", action="store_true", help="scan without the default rule pack")
    args = ap.parse_args()
    sources = discover(DiscoveryOptions(root=args.root, env={})).sources
    detector = None
    if not args.no_rules:
        from telltale.detect.engine import DetectionEngine

        detector = DetectionEngine.load()
    real = pipeline.index_window
    spent = [0.0]

    def timed(*a: Any, **k: Any) -> int:
        t = time.thread_time()
        try:
            return real(*a, **k)
        finally:
            spent[0] += time.thread_time() - t

    def skipped(*a: Any, **k: Any) -> int:
        return 0

    runs: dict[str, list[float]] = {"with": [], "without": [], "upkeep": []}
    events = 0
    for _ in range(args.repeat):
        for mode in ("with", "without"):
            work = tempfile.mkdtemp(prefix="telltale-upkeep-")
            pipeline.index_window = timed if mode == "with" else skipped  # type: ignore[assignment]
            spent[0] = 0.0
            scanner = Scanner(ScanOptions(log_path=f"{work}/e.jsonl", state_path=f"{work}/s.sqlite"), detector=detector)
            try:
                t = time.process_time()
                result = scanner.scan(sources)
                runs[mode].append(time.process_time() - t)
            finally:
                scanner.close()
                shutil.rmtree(work, ignore_errors=True)
            if mode == "with":
                runs["upkeep"].append(spent[0])
                events = result.emitted_count
    pipeline.index_window = real  # type: ignore[assignment]
    with_, without, upkeep = (statistics.median(runs[k]) for k in ("with", "without", "upkeep"))
    print(f"{events:,} events, {'no rules' if args.no_rules else 'default rules'}, median of {args.repeat}:")
    print(f"  scan CPU with upkeep {with_:.3f} s, without {without:.3f} s")
    print(f"  upkeep alone {upkeep:.3f} s = {100 * upkeep / without:.1f}% of the scan without it "
          f"({upkeep / max(events, 1) * 1e6:.2f} µs/event)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
