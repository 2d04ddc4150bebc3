"""Sizing figures for a fleet: events, bytes and CPU per host-day, from the real corpus.

The corpus (``/work/shared/corpus``) holds real sessions of several agents over a number of
days. It is laid out in each agent's layout once (``gen_corpus_tree.py``) and scanned cold by
the real CLI (default rules, ``--content redacted``), ``--repeat`` times into fresh outputs.
From the log:

* active days: the distinct local dates of activity events that carry a source time;
* events and bytes per dataset, and their rate per active day (an agent-using host-day);
* CPU (user + system of the scan process) per 1,000 events;
* what an output with ``include: [detection, health]`` receives per day;
* the idle cost of ``watch``: CPU seconds over ``--idle`` seconds with nothing changing,
  scaled to a day.

    python bench/bench_sizing.py [--corpus /work/shared/corpus] [--repeat 3] [--idle 60]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import signal
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


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TELLTALE_", "XDG_", "CLAUDE_", "CODEX_"))}
    env.update(HOME=str(home), TELLTALE_SYSTEM_CONFIG_DIR=str(home / ".no-system-config"),
               PYTHONPATH=str(HERE.parent / "src"))
    return env


def _scan(home: Path, out: Path) -> tuple[float, float]:
    """One cold scan by the CLI; (CPU seconds of the child, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "telltale", "scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"),
         "--state-path", str(out / "s.sqlite"), "--install-inventory-disabled", "--json"],
        env=_env(home), check=True, capture_output=True, cwd=str(home),
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _idle_watch(home: Path, out: Path, seconds: float) -> float:
    """CPU seconds ``watch`` spends over ``seconds`` with nothing changing (after its first scan)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "telltale", "watch", "--root", str(home), "--log-path", str(out / "e.jsonl"),
         "--state-path", str(out / "s.sqlite"), "--install-inventory-disabled", "--json"],
        env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=str(home),
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # the first scan's summary: from here on nothing changes
        start = _cpu_of(proc.pid)
        time.sleep(seconds)
        return _cpu_of(proc.pid) - start
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def _analyse(log: Path) -> dict[str, Any]:
    counts: collections.Counter[str] = collections.Counter()
    sizes: collections.Counter[str] = collections.Counter()
    days: set[str] = set()
    selected = [0, 0]
    with log.open("rb") as fh:
        for line in fh:
            doc = json.loads(line)
            dataset = doc["event"]["dataset"].removeprefix("telltale.")
            counts[dataset] += 1
            sizes[dataset] += len(line)
            if dataset in ("detection", "health"):
                selected[0] += 1
                selected[1] += len(line)
            if dataset == "activity" and doc.get("telltale", {}).get("time_source") == "source":
                days.add(doc["@timestamp"][:10])
    return {"counts": dict(counts), "bytes": dict(sizes), "active_days": len(days), "selected": selected}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tt-sizing-") as tmp:
        home = Path(tmp) / "home"
        size = build(args.corpus, home, copies=1)
        for path in home.rglob("*"):  # warm the page cache: CPU-bound figures
            if path.is_file():
                path.read_bytes()
        cpus: list[float] = []
        walls: list[float] = []
        for run in range(args.repeat):
            out = Path(tmp) / f"out{run}"
            cpu, wall = _scan(home, out)
            cpus.append(cpu)
            walls.append(wall)
        facts = _analyse(Path(tmp) / "out0" / "e.jsonl")
        idle = _idle_watch(home, Path(tmp) / "out0", args.idle) if args.idle > 0 else 0.0
    events = sum(facts["counts"].values())
    total_bytes = sum(facts["bytes"].values())
    days = max(1, facts["active_days"])
    cpu = statistics.median(cpus)
    report = {
        "corpus_bytes": size,
        "events": facts["counts"],
        "event_bytes": facts["bytes"],
        "active_days": facts["active_days"],
        "per_active_day": {
            "events": round(events / days),
            "bytes": round(total_bytes / days),
            "detections_and_health": {"events": round(facts["selected"][0] / days),
                                      "bytes": round(facts["selected"][1] / days)},
            "scan_cpu_s": round(cpu / days, 3),
        },
        "bytes_per_event": round(total_bytes / max(1, events)),
        "cpu_ms_per_1000_events": round(1000 * cpu / max(1, events) * 1000, 1),
        "scan_cpu_s_median": round(cpu, 3),
        "scan_wall_s_median": round(statistics.median(walls), 3),
        "runs": args.repeat,
        "watch_idle_cpu_s_per_day": round(idle / args.idle * 86_400, 1) if args.idle > 0 else None,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
