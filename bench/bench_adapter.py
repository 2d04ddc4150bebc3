"""Throughput of a JSONL source adapter next to a plain msgspec decode of the same lines.

    python bench/gen_claude_tree.py /tmp/claude-bench --size-mb 200
    python bench/bench_adapter.py claude.projects /tmp/claude-bench [--repeat 3] [--profile]
    python bench/gen_codex_tree.py /tmp/codex-bench --mib 256
    python bench/bench_adapter.py codex.sessions /tmp/codex-bench

Reports MB/s (10^6 bytes of transcript input per second, best of ``--repeat`` runs, one
core) for ``msgspec.json.decode`` of every line (untyped: the floor of any JSON work) and
for the adapter (reading, typed decode, mapping, bounds, observation ids, response merging,
batching and cursors), their ratio, and observations per second. The files are read once
first so the page cache is warm for both. ``--profile`` prints the adapter's top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from telltale.sources.base import AcquireContext
from telltale.sources.registry import adapter_for, spec_for
from telltale.sources.spec import Source


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.jsonl") if p.is_file())


def _plain(files: list[Path]) -> int:
    decode = msgspec.json.decode
    count = 0
    for path in files:
        with path.open("rb") as fh:
            for line in fh:
                decode(line)
                count += 1
    return count


def _adapter(kind: str, files: list[Path]) -> int:
    adapter = adapter_for(kind)
    spec = spec_for(kind)
    ctx = AcquireContext()
    count = 0
    for path in files:
        source = Source(
            client=spec.client,
            kind=kind,
            path=str(path),
            root_type=spec.root_type,
            store_root=str(path.parent),
            found_by="fixture",
        )
        for batch in adapter.acquire(source, None, ctx):
            count += len(batch.observations)
    return count


def _best(fn: Callable[[list[Path]], int], files: list[Path], repeat: int) -> tuple[float, float, int]:
    """Best wall-clock and best CPU seconds over ``repeat`` runs (CPU time resists a busy host)."""
    wall = cpu = float("inf")
    result = 0
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn(files)
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", help="source kind, e.g. claude.projects or codex.sessions")
    parser.add_argument("root", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    files = _files(args.root)
    if not files:
        sys.exit(f"no *.jsonl under {args.root}; generate one with bench/gen_claude_tree.py or gen_codex_tree.py")
    kind = args.kind
    run_adapter = functools.partial(_adapter, kind)
    size = sum(p.stat().st_size for p in files)
    for path in files:
        path.read_bytes()
    plain_s, plain_cpu, lines = _best(_plain, files, args.repeat)
    adapter_s, adapter_cpu, observations = _best(run_adapter, files, args.repeat)
    mb = size / 1e6
    print(f"input: {len(files)} files, {mb:.1f} MB, {lines} lines ({size / lines:,.0f} bytes/line)")
    print(f"msgspec.json.decode per line : {mb / plain_s:7.1f} MB/s wall, {mb / plain_cpu:7.1f} MB/s cpu")
    print(
        f"{kind + ' adapter':<29}: {mb / adapter_s:7.1f} MB/s wall, {mb / adapter_cpu:7.1f} MB/s cpu, "
        f"{observations} observations, {observations / adapter_cpu:,.0f} obs/cpu-s"
    )
    print(f"adapter / plain decode (cpu) : {plain_cpu / adapter_cpu:7.2f}")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run_adapter, files)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
