"""End-to-end scan benchmark on a generated Claude Code or Codex tree.

Measures, with the real CLI in a subprocess (one core: the scanner does its reading,
mapping and encoding on one thread; a second thread only waits for write and fsync):

* cold full-scan throughput (MB/s of transcript bytes) with ``--content redacted``, with and
  without the default detection rules, next to a plain ``msgspec`` decode of the same lines
  (the floor of any JSON work) and the ratio of the two;
* a re-scan with no changes, as a fraction of the cold scan;
* peak RSS of a scan of one large transcript (``--big-mb``, default 1000; Claude Code only).

The tree is read once before timing so every figure is CPU-bound, not disk-bound. Each
cold scan runs ``--repeat`` times into a fresh output directory, the runs with and
without detection alternating; the best run is the figure (the least disturbed by other
work on the machine) and the median is shown next to it. ``scan`` figures are the
scan's own ``duration_s`` (discovery to last commit); ``wall`` adds interpreter start-up
and imports.

    python bench/bench_scan.py [--agent claude|codex] [--size-mb 200] [--repeat 3]
                               [--big-mb 1000] [--skip-big] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def generate(agent: str, home: Path, size_mb: int, files: int) -> Path:
    """The store directory under ``home`` (generated when absent)."""
    if agent == "codex":
        store = home / ".codex" / "sessions"
        cmd = [str(HERE / "gen_codex_tree.py"), str(store), "--mib", str(max(1, round(size_mb / 1.048576))),
               "--files", str(max(1, files // 3))]
    else:
        store = home / ".claude" / "projects"
        cmd = [str(HERE / "gen_claude_tree.py"), str(store), "--size-mb", str(size_mb), "--files", str(files)]
    if not store.exists():
        subprocess.run([sys.executable, *cmd], check=True, stdout=subprocess.DEVNULL)
    return store


def transcripts(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*.jsonl") if p.is_file())


def warm(files: list[Path]) -> None:
    for path in files:
        with path.open("rb") as fh:
            while fh.read(1 << 20):
                pass


def plain_decode(files: list[Path]) -> float:
    """CPU seconds to read every line and msgspec-decode it (untyped), the floor to compare with."""
    decode = msgspec.json.Decoder().decode
    start = time.process_time()
    for path in files:
        with path.open("rb") as fh:
            for line in fh:
                # try/except is zero-cost in 3.11 when nothing is raised; suppress() is a call per line
                try:  # noqa: SIM105
                    decode(line)
                except msgspec.DecodeError:
                    pass
    return time.process_time() - start


def _env(home: Path) -> dict[str, str]:
    return dict(os.environ, HOME=str(home), PYTHONPATH=str(REPO / "src"))


def _cmd(home: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "telltale", "scan", "--once", "--root", str(home), "--json",
            "--log-path", str(out / "events.jsonl"), "--state-path", str(out / "state.sqlite"),
            "--content", "redacted", "--install-inventory-disabled", *extra]


def scan(home: Path, out: Path, *extra: str) -> tuple[dict[str, object], float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(_cmd(home, out, *extra), env=_env(home), capture_output=True, text=True, check=True)
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
    cmd = [sys.executable, "-c", code, *_cmd(home, out)]
    proc = subprocess.run(cmd, env=_env(home), capture_output=True, text=True, check=True)
    return int(proc.stdout.strip().splitlines()[-1])


def cold_scans(
    home: Path, out: Path, repeat: int, *extra: str
) -> tuple[list[float], list[float], list[float], dict[str, object]]:
    inner: list[float] = []
    walls: list[float] = []
    cpus: list[float] = []
    summary: dict[str, object] = {}
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        summary, wall, cpu = scan(home, out, *extra)
        inner.append(float(summary["duration_s"]))  # type: ignore[arg-type]
        walls.append(wall)
        cpus.append(cpu)
    return inner, walls, cpus, summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent", choices=("claude", "codex"), default="claude")
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--files", type=int, default=48)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big-mb", type=int, default=1000)
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "telltale-bench")
    args = ap.parse_args()

    home = args.work / (f"home-{args.size_mb}" if args.agent == "claude" else f"codex-{args.size_mb}")
    store = generate(args.agent, home, args.size_mb, args.files)
    files = transcripts(store)
    total = sum(p.stat().st_size for p in files)
    mb = total / 1e6
    warm(files)
    print(f"tree: {mb:.1f} MB in {len(files)} {args.agent} transcripts")

    base = min(plain_decode(files) for _ in range(2))
    print(f"plain msgspec decode: {base:.2f}s CPU = {mb / base:.0f} MB/s")

    # The two configurations alternate (A, B, A, B, ...): the host's speed drifts, and
    # runs of one after all runs of the other would put the drift into the detection cost.
    configs = (("no detection", ("--no-detect",)), ("default rules", ()))
    runs: dict[str, tuple[list[float], list[float], list[float]]] = {label: ([], [], []) for label, _ in configs}
    summaries: dict[str, dict[str, object]] = {}
    for _ in range(args.repeat):
        for label, extra in configs:
            out = args.work / f"out-{args.agent}-{label.replace(' ', '-')}"
            inner_one, walls_one, cpus_one, summaries[label] = cold_scans(home, out, 1, *extra)
            for series, value in zip(runs[label], (inner_one[0], walls_one[0], cpus_one[0]), strict=True):
                series.append(value)
    medians: dict[str, float] = {}
    no_detect = 0.0
    for label, extra in configs:
        out = args.work / f"out-{args.agent}-{label.replace(' ', '-')}"
        inner, walls, cpus = runs[label]
        summary = summaries[label]
        best = min(inner)
        medians[label] = statistics.median(inner)
        print(
            f"cold scan ({label}): best {best:.2f}s = {mb / best:.0f} MB/s (median {statistics.median(inner):.2f}s"
            f" = {mb / statistics.median(inner):.0f} MB/s, {args.repeat} runs); ratio to plain decode "
            f"{best / base:.2f}x; wall incl. start-up best {min(walls):.2f}s ({mb / min(walls):.0f} MB/s), process "
            f"CPU best {min(cpus):.2f}s; {summary['emitted_count']} events, {summary['detection_count']} detections"
        )
        if label == "no detection":
            no_detect = best
        else:
            plain = medians["no detection"]
            print(f"detection cost: +{best - no_detect:.2f}s = +{100 * (best - no_detect) / no_detect:.0f}% "
                  f"of the cold scan without detection (best runs); "
                  f"+{100 * (medians[label] - plain) / plain:.0f}% (medians of interleaved runs)")
        summary2, wall2, _ = scan(home, out, *extra)
        inner2 = float(summary2["duration_s"])  # type: ignore[arg-type]
        print(
            f"re-scan, no changes ({label}): {inner2 * 1000:.1f} ms = {100 * inner2 / best:.2f}% of cold; "
            f"{wall2:.2f}s wall incl. interpreter start-up; {summary2['sources_unchanged']} sources unchanged"
        )

    if not args.skip_big and args.agent == "claude":
        big_home = args.work / f"big-{args.big_mb}"
        big_store = generate("claude", big_home, args.big_mb, 1)
        big_files = transcripts(big_store)
        largest = max(p.stat().st_size for p in big_files)
        out = args.work / "out-big"
        shutil.rmtree(out, ignore_errors=True)
        rss = peak_rss_kib(big_home, out)
        print(
            f"single large transcript: {sum(p.stat().st_size for p in big_files) / 1e6:.0f} MB tree, largest file "
            f"{largest / 1e6:.0f} MB; peak RSS {rss / 1024:.0f} MiB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
