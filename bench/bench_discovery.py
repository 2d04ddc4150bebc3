"""Benchmark: time ``discover()`` over a synthetic home holding 10,000 session files.

Usage: ``.venv/bin/python bench/bench_discovery.py [--files N] [--runs R] [--bounded]``

The tree mimics real layouts: Codex rollouts in ``YYYY/MM/DD`` directories, Claude
project transcripts (with a few subagent directories), Qwen chats and OpenClaw sessions,
plus OpenCode databases. Files are empty: discovery reads metadata only. Reports the
cold first run and the median and best of the warm runs (page cache hot, the common
case for a scanner running every few seconds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from telltale.discovery import DiscoveryOptions, discover


def build(home: Path, files: int) -> int:
    """Create ``files`` session files below ``home``; return how many were created."""
    made = 0

    def touch(path: Path) -> None:
        nonlocal made
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        made += 1

    codex = files * 5 // 10
    claude = files * 3 // 10
    qwen = files // 10
    openclaw = files - codex - claude - qwen - 3
    for i in range(codex):
        day = home / ".codex/sessions/2026" / f"{1 + i // 1500:02d}" / f"{1 + (i // 50) % 30:02d}"
        touch(day / f"rollout-2026-01-01T00-00-{i:05d}.jsonl")
    for i in range(claude):
        project = home / ".claude/projects" / f"-home-user-project-{i % 40}"
        if i % 10 == 0:
            touch(project / f"session-{i}" / "subagents" / f"agent-{i}.jsonl")
        else:
            touch(project / f"session-{i:05d}.jsonl")
    for i in range(qwen):
        touch(home / ".qwen/projects" / f"hash{i % 20}" / "chats" / f"chat-{i}.jsonl")
    for i in range(openclaw):
        touch(home / ".openclaw/agents" / f"agent{i % 5}" / "sessions" / f"s-{i}.jsonl")
    for name in ("opencode.db", "opencode-beta.db", "opencode-dev.db"):
        touch(home / ".local/share/opencode" / name)
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--bounded", action="store_true", help="bounded discovery (budget checks on)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="telltale-bench-") as tmp:
        home = Path(tmp) / "home"
        made = build(home, args.files)
        options = DiscoveryOptions(
            env={"HOME": str(home)}, platform="linux", bounded=args.bounded, budget=10 * args.files
        )
        timings: list[float] = []
        found = 0
        for _ in range(args.runs + 1):
            start = time.perf_counter()
            result = discover(options)
            timings.append(time.perf_counter() - start)
            found = len(result.sources)
            assert not result.errors, result.errors[:3]
        first, warm = timings[0], timings[1:]
        print(f"files created: {made}, sources found: {found}, bounded: {args.bounded}")
        print(
            f"discover(): first {first * 1000:.1f} ms; warm median {statistics.median(warm) * 1000:.1f} ms, "
            f"best {min(warm) * 1000:.1f} ms over {len(warm)} runs"
        )
        if found != made:
            print("error: not every session file was found", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
