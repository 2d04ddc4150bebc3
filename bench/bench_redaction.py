"""Redaction's share of a cold scan, on a tree built from the real corpus.

A cold scan (``--content redacted``, default rules, fresh state) runs in a fresh process,
alternately with redaction as shipped and with every redaction entry point replaced by
an identity (values still bounded, exactly as they would be cut): the difference of the
medians, over the median with redaction, is redaction's share of the scan. Each process
also times the redaction calls themselves (wrapped, outermost call only), a second view
of the same cost that does not depend on run-to-run noise.

The tree is the corpus laid out in each agent's real layout (``gen_corpus_tree.py``),
``--copies`` times over; it is read once before timing so the figures are CPU-bound.

    python bench/bench_redaction.py [--corpus /work/shared/corpus] [--copies 12] [--repeat 3]
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
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_corpus_tree import build  # noqa: E402


def _child(home: str, out: str, redaction: bool) -> dict[str, Any]:
    """One cold scan in this process; its duration and the time spent redacting."""
    from telltale.detect.engine import DetectionEngine
    from telltale.detect.lazy import LazyDetector
    from telltale.discovery import DiscoveryOptions, discover
    from telltale.events import activity, detection
    from telltale.events import redaction as red
    from telltale.pipeline import Scanner, ScanOptions

    spent = [0.0]
    depth = [0]

    def timed(fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if depth[0]:
                return fn(*args, **kwargs)
            depth[0] += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start
                depth[0] -= 1

        return wrapper

    def same(value: str, *_: Any, **__: Any) -> str:
        return value

    def arguments(text: str, limit: int | None = None, margin: int = 0) -> tuple[str, bool]:
        if limit is not None and len(text) > limit:
            return text[:limit], True
        return text, False

    modules: list[Any] = [activity, detection]
    try:
        from telltale import pipeline

        modules.append(pipeline)
    except ImportError:  # pragma: no cover
        pass
    replacements = {
        "redact": same, "redact_cached": same, "redact_excerpt": same, "redact_document": same,
        "redact_arguments": arguments,
    }
    for module in modules:
        for name, fake in replacements.items():
            if hasattr(module, name):
                setattr(module, name, timed(getattr(red, name)) if redaction else fake)

    sources = discover(DiscoveryOptions(root=home, env={})).sources
    options = ScanOptions(log_path=os.path.join(out, "e.jsonl"), state_path=os.path.join(out, "s.sqlite"))
    scanner = Scanner(options, detector=LazyDetector(DetectionEngine.load))
    try:
        result = scanner.scan(sources)
    finally:
        scanner.close()
    return {"duration_s": result.duration_s, "redaction_s": spent[0], "events": result.emitted_count,
            "sources": len(sources)}


def _run(home: Path, redaction: bool) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="tt-bench-red-"))
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(home), str(out), "1" if redaction else "0"],
            check=True, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")},
        )
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return result
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], sys.argv[3], sys.argv[4] == "1")))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(os.environ.get("TELLTALE_CORPUS", "/work/shared/corpus")))
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="keep the tree here (built when absent)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tt-bench-corpus-"))
    home = work / "home"
    if not home.exists():
        size = build(args.corpus, home, args.copies)
    else:
        size = sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
    for p in home.rglob("*"):  # warm the page cache: CPU-bound figures
        if p.is_file():
            p.read_bytes()
    with_red: list[dict[str, Any]] = []
    without: list[dict[str, Any]] = []
    for _ in range(args.repeat):
        with_red.append(_run(home, True))
        without.append(_run(home, False))
    on = statistics.median(r["duration_s"] for r in with_red)
    off = statistics.median(r["duration_s"] for r in without)
    inside = statistics.median(r["redaction_s"] for r in with_red)
    print(f"tree: {size / 1e6:.1f} MB, {with_red[0]['sources']} sources, {with_red[0]['events']} events")
    print(f"cold scan with redaction:    median {on:.3f}s  runs {[round(r['duration_s'], 3) for r in with_red]}")
    print(f"cold scan without redaction: median {off:.3f}s  runs {[round(r['duration_s'], 3) for r in without]}")
    print(f"redaction share (A/B):       {(on - off) / on:.1%}")
    print(f"time inside redaction calls: median {inside:.3f}s = {inside / on:.1%} of the scan")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
