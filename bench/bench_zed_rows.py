"""Zed ``threads.db``: cold and incremental acquisition cost of the per-row adapter.

Builds a synthetic database of ``--threads`` zstd rows (each ``--turns`` user/agent pairs,
one terminal call and result per pair, in the shape docs/sources/zed.md describes), then
times, in CPU seconds (best of ``--repeat``): a cold acquisition (no cursor), and an
incremental one after one row was rewritten with one more turn (the common case: the
user works in one thread). Also reports the observations, the new facts of the
incremental read and the cursor's size.

    python bench/bench_zed_rows.py [--threads 1000] [--turns 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import zstandard

from telltale.sources.base import AcquireContext
from telltale.sources.registry import adapter_for, spec_for
from telltale.sources.spec import Source


def thread(i: int, turns: int) -> bytes:
    messages: list[dict[str, Any]] = []
    for j in range(turns):
        tid = f"terminal-{i}-{j}"
        messages.append({"User": {"id": f"u{i}-{j}", "content": [{"Text": f"please do step {j} " * 5}]}})
        messages.append({"Agent": {
            "content": [{"Text": "ok " * 20},
                        {"ToolUse": {"id": tid, "name": "terminal", "input": {"command": f"ls -la /tmp/{j}"},
                                     "is_input_complete": True}}],
            "tool_results": {tid: {"tool_use_id": tid, "tool_name": "terminal", "is_error": False,
                                   "content": {"Text": "x" * 200}}}}})
    doc = {"title": f"thread {i}", "version": "0.3.0", "messages": messages,
           "cumulative_token_usage": {"input_tokens": 1000 * turns, "output_tokens": 100 * turns},
           "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"}}
    return zstandard.ZstdCompressor().compress(json.dumps(doc).encode())


def acquire(source: Source, cursor: bytes | None) -> tuple[int, bytes | None, float]:
    start = time.process_time()
    observations = 0
    for batch in adapter_for("zed.threads").acquire(source, cursor, AcquireContext()):
        observations += len(batch.observations)
        cursor = batch.cursor if batch.cursor is not None else cursor
    return observations, cursor, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "threads.db"
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT, updated_at TEXT,"
                         " data_type TEXT, data BLOB)")
            conn.executemany("INSERT INTO threads VALUES (?, 's', ?, 'zstd', ?)",
                             [(f"t{i}", f"2026-01-01T00:00:00.{i:09d}Z", thread(i, args.turns))
                              for i in range(args.threads)])
        conn.close()
        spec = spec_for("zed.threads")
        source = Source(client=spec.client, kind=spec.kind, path=str(db), root_type=spec.root_type,
                        store_root=tmp, found_by="bench")
        colds = [acquire(source, None) for _ in range(args.repeat)]
        observations, cursor, _ = colds[0]
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE threads SET updated_at = '2027-01-01T00:00:00Z', data = ? WHERE id = 't0'",
                         (thread(0, args.turns + 1),))
        conn.close()
        incs = [acquire(source, cursor) for _ in range(args.repeat)]
        print(json.dumps({
            "threads": args.threads, "messages_per_thread": 2 * args.turns, "observations": observations,
            "cold_cpu_s": round(min(c[2] for c in colds), 3),
            "incremental_one_row_cpu_s": round(min(i[2] for i in incs), 4),
            "incremental_new_observations": incs[0][0], "cursor_bytes": len(cursor or b""),
        }))


if __name__ == "__main__":
    main()
