"""Aider, Crush and Goose stores scanned by runs killed at random instants: the events are
exactly those of an uninterrupted run (DECISIONS, "Event identity": no loss, no duplicate)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from scan_helpers import activity, cli_env, read_events, run_cli

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_aider
import build_crush
import build_goose


def _home(home: Path) -> None:
    old = time.time() - 3600
    for p in range(3):
        chat = build_aider.write_project(home / "projects" / f"app{p}",
                                         build_aider.run_start() + build_aider.session_text(25))
        os.utime(chat, (old, old))
    for d in range(2):
        crush = build_crush.CrushDb(home / "projects" / f"svc{d}" / ".crush" / "crush.db", wal=False)
        for s in range(3):
            crush.session(f"c{d}-{s}")
            for n in range(25):
                crush.turn(f"c{d}-{s}", n, zstd=n % 2 == 1)
            crush.tokens(f"c{d}-{s}", 1000 * (s + 1), 100 * (s + 1), 0.01)
        crush.close()
    goose = build_goose.GooseDb(home / ".local" / "share" / "goose" / "sessions" / "sessions.db", wal=False)
    for s in range(4):
        goose.session(f"g{s}")
        for n in range(30):
            goose.turn(f"g{s}", n)
        goose.tokens(f"g{s}", 500 * (s + 1), 50 * (s + 1))
    goose.close()


@pytest.mark.slow
def test_killed_scans_of_aider_crush_and_goose_stores_neither_lose_nor_duplicate(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _home(home)
    clients = ["--client", "aider", "--client", "crush", "--client", "goose"]
    ref = tmp_path / "ref"
    started = time.monotonic()
    run_cli(["scan", "--once", "--root", str(home), *clients, "--log-path", str(ref / "e.jsonl"),
             "--state-path", str(ref / "s.sqlite"), "--window-bytes", "20k", "--json"], home)
    duration = time.monotonic() - started
    reference = Counter(e["event"]["id"] for e in activity(read_events(ref / "e.jsonl")))
    assert reference and max(reference.values()) == 1
    actions = Counter(e["event"]["action"] for e in activity(read_events(ref / "e.jsonl")))
    assert actions["tool_call"] >= 3 * 25 * 2 + 2 * 3 * 25 + 4 * 30

    out = tmp_path / "killed"
    args = [sys.executable, "-m", "telltale", "scan", "--once", "--root", str(home), *clients, "--log-path",
            str(out / "e.jsonl"), "--state-path", str(out / "s.sqlite"), "--window-bytes", "20k", "--json"]
    rng = random.Random(2323)
    kills = 0
    for _attempt in range(6):
        proc = subprocess.Popen(args, env=cli_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.15, max(0.3, duration * 0.7)))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    final = subprocess.run(args, env=cli_env(home), capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    got = Counter(e["event"]["id"] for e in activity(read_events(out / "e.jsonl")))
    assert kills >= 1  # runs that finish before their kill instant are fine too
    assert max(got.values()) == 1, "duplicate event ids after kill -9"
    assert set(got) == set(reference), "events lost after kill -9"
    for line in (out / "e.jsonl").read_text().splitlines():
        json.loads(line)
