"""Throughput of the Codex adapter next to a plain msgspec decode of the same lines.

    python bench/gen_codex_tree.py /tmp/codex-bench --mib 256
    python bench/bench_codex_adapter.py /tmp/codex-bench [--repeat 3]

Reports MB/s (10^6 bytes of rollout input per second, best of ``--repeat`` runs) for:
``msgspec.json.decode`` of every line (untyped, the lower bound of any JSON work) and
the adapter (typed decode, mapping, bounds, observation ids, batching and cursors),
plus observations per second. The files are read once first so the page cache is warm
for both measurements.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from telltale.sources.base import AcquireContext
from telltale.sources.codex import CodexAdapter
from telltale.sources.spec import RootType, Source


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


def _adapter(files: list[Path]) -> int:
    adapter = CodexAdapter()
    ctx = AcquireContext()
    count = 0
    for path in files:
        source = Source(
            client="codex",
            kind="codex.sessions",
            path=str(path),
            root_type=RootType.CODEX_HOME,
            store_root=str(path.parent),
            found_by="fixture",
        )
        for batch in adapter.acquire(source, None, ctx):
            count += len(batch.observations)
    return count


def _best(fn: Callable[[list[Path]], int], files: list[Path], repeat: int) -> tuple[float, int]:
    best = float("inf")
    result = 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn(files)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = _files(args.root)
    if not files:
        sys.exit(f"no *.jsonl under {args.root}; run bench/gen_codex_tree.py first")
    size = sum(p.stat().st_size for p in files)
    for path in files:
        path.read_bytes()
    plain_s, lines = _best(_plain, files, args.repeat)
    adapter_s, observations = _best(_adapter, files, args.repeat)
    mb = size / 1e6
    print(f"input: {len(files)} files, {mb:.1f} MB, {lines} lines")
    print(f"msgspec.json.decode per line : {mb / plain_s:8.1f} MB/s ({plain_s:.2f} s)")
    print(
        f"codex adapter                : {mb / adapter_s:8.1f} MB/s ({adapter_s:.2f} s), "
        f"{observations} observations, {observations / adapter_s:,.0f} obs/s"
    )


if __name__ == "__main__":
    main()
