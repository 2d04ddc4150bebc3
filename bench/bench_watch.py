"""``telltale watch`` benchmark: append-to-durable latency and idle CPU.

1. Latency: the real CLI (``watch --json``) over a synthetic Claude Code home with the
   default schedule (``--debounce-ms 500 --min-scan-interval-ms 2000``). ``--appends``
   times (default 50) one turn is appended to a transcript; the clock stops when watch
   prints the summary line of the scan that carried it, which it does only after the
   events were fsynced to the JSONL log and the cursors committed. Appends are spaced so
   the minimum interval never delays one (the next append waits 2.1 s after the previous
   scan ended). Reports median and p95 (target: median < 1.5 s).
2. Idle CPU: ``--files`` transcripts (default 5,000 in 100 project directories) are
   watched for ``--idle-seconds`` (default 60) with nothing changing; CPU is
   utime + stime of the watch process (all threads) from ``/proc/<pid>/stat``. Measured
   natively and with ``--poll`` (every transcript and directory sampled at 256/s).

    python bench/bench_watch.py [--appends 50] [--files 5000] [--idle-seconds 60] [--detect]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from scan_helpers import cli_env, write_claude_session  # noqa: E402


class WatchProc:
    def __init__(self, home: Path, out: Path, *args: str) -> None:
        cmd = [sys.executable, "-m", "telltale", "watch", "--root", str(home), "--log-path", str(out / "e.jsonl"),
               "--state-path", str(out / "s.sqlite"), "--json", "--install-inventory-disabled", *args]
        self.proc = subprocess.Popen(cmd, env=cli_env(home), cwd=str(home), stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), line))

    def summary(self, timeout: float = 120) -> tuple[float, dict[str, Any]]:
        at, line = self.lines.get(timeout=timeout)
        data: dict[str, Any] = json.loads(line)
        return at, data

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of stat(5)
        return (utime + stime) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def latency(work: Path, appends: int, detect: bool) -> dict[str, Any]:
    home, out = work / "lat-home", work / "lat-out"
    write_claude_session(home, "-work-bench", "bench-session", 5)
    args = [] if detect else ["--no-detect"]
    watch = WatchProc(home, out, "--debounce-ms", "500", "--min-scan-interval-ms", "2000", *args)
    try:
        end, _ = watch.summary()
        samples: list[float] = []
        for i in range(appends):
            time.sleep(max(0.0, end + 2.1 - time.monotonic()))
            start = time.monotonic()
            write_claude_session(home, "-work-bench", "bench-session", 1, start=5 + i)
            end, summary = watch.summary()
            observations = sum(s["observations"] for s in summary["sources"])
            if observations < 3:
                raise SystemExit(f"append {i}: the scan carried {observations} observations, expected 3+")
            samples.append(end - start)
    finally:
        watch.stop()
    samples.sort()
    return {
        "appends": appends,
        "detect": detect,
        "median_s": round(statistics.median(samples), 3),
        "p95_s": round(samples[min(len(samples) - 1, int(0.95 * len(samples)))], 3),
        "min_s": round(samples[0], 3),
        "max_s": round(samples[-1], 3),
    }


def make_tree(home: Path, files: int, per_dir: int = 50) -> None:
    projects = home / ".claude" / "projects"
    line = json.dumps({"type": "user", "sessionId": "s", "uuid": "u", "timestamp": "2026-11-20T10:00:00.000Z",
                       "message": {"role": "user", "content": "hello"}}) + "\n"
    for i in range(files):
        d = projects / f"-work-p{i // per_dir:03d}"
        if i % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"session-{i:05d}.jsonl").write_text(line)


def idle(work: Path, files: int, seconds: float, poll: bool) -> dict[str, Any]:
    home, out = work / "idle-home", work / f"idle-out-{'poll' if poll else 'native'}"
    if not home.exists():
        make_tree(home, files)
    args = ["--no-detect", *(["--poll"] if poll else [])]
    watch = WatchProc(home, out, *args)
    try:
        _, first = watch.summary(timeout=600)
        time.sleep(2.0)  # let the initial scan's aftermath settle
        cpu0, t0 = watch.cpu_seconds(), time.monotonic()
        time.sleep(seconds)
        cpu1, t1 = watch.cpu_seconds(), time.monotonic()
        extra = watch.lines.qsize()
    finally:
        watch.stop()
    return {
        "mode": "poll" if poll else "native",
        "files": files,
        "sources_scanned_initially": first["sources_scanned"],
        "seconds": round(t1 - t0, 1),
        "cpu_seconds": round(cpu1 - cpu0, 3),
        "cpu_percent": round(100 * (cpu1 - cpu0) / (t1 - t0), 3),
        "scans_while_idle": extra,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=50)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--detect", action="store_true", help="run the default rules during the latency test")
    parser.add_argument("--work", type=Path, help="working directory (default: a temporary one, removed)")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-idle", action="store_true")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="telltale-bench-watch-"))
    try:
        results: dict[str, Any] = {}
        if not args.skip_latency:
            results["latency"] = latency(work, args.appends, args.detect)
            print(json.dumps(results["latency"]), flush=True)
        if not args.skip_idle:
            for poll in (False, True):
                entry = idle(work, args.files, args.idle_seconds, poll)
                results.setdefault("idle", []).append(entry)
                print(json.dumps(entry), flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
