"""Exactly once under any kill: SIGKILL `telltale scan` at random instants, then compare.

    python bench/kill_stress.py --kills 300 [--rounds 30] [--claude-mb 4] [--seed 1]

Builds a home with several agents' stores (generated Claude Code and Codex trees, the
Qwen, OpenClaw JSONL and SQLite, Copilot session-state and OpenCode stores of the test
fixtures, a few hostile lines so ``record_quarantined`` is in play), scans it once
uninterrupted for the reference, then runs ``--rounds`` series. Each series starts from an
empty state and log, kills ``telltale scan`` again and again — at fault points
(``telltale.faults``: before a source, after a batch, after the window's intent, half-way
through the writer thread's write, before and after its fsync, inside the state commit,
in the outbox enqueue, in the inventory step, inside the recovery of a killed window) or
after a random delay — and then lets one scan finish.

The final log's multiset of record-event ids (activity, detections, inventory,
record_quarantined, source_* events) is compared with the reference's; per-run events
(scan_summary, scan_interrupted, scanner_error, operational_alert) are left out, and
rollups (``session_risk_summary``) are compared by the last one per session (DECISIONS
"Event identity"). Prints kills, lost and duplicated; exits 1 when either is not 0.
``tests/test_kill_stress.py`` runs a smaller series in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "session_stores"

#: Fault points and whether they are passed once per window (the others once per source,
#: batch or scan).
POINTS = ("source", "batch", "begin", "write", "fsync", "written", "commit", "enqueue", "committed",
          "inventory", "recover")
PER_RUN = frozenset({"scan_summary", "scan_interrupted", "scanner_error", "operational_alert"})
ROLLUPS = frozenset({"session_risk_summary"})

_HOSTILE = b'{"type":"user",\n' + b'{"a":' * 2000 + b"\n" + b'{"type":"user","message":"\\ud800"}\n'


def build_home(home: Path, *, claude_mb: float, codex_mib: int, seed: int) -> None:
    """A home with every agent's store (generated where a generator exists)."""
    py = sys.executable
    subprocess.run([py, str(REPO / "bench" / "gen_claude_tree.py"), str(home / ".claude"), "--size-mb",
                    str(claude_mb), "--files", "6", "--seed", str(seed)], check=True, capture_output=True)
    if codex_mib > 0:
        subprocess.run([py, str(REPO / "bench" / "gen_codex_tree.py"), str(home / ".codex"), "--mib", str(codex_mib),
                        "--files", "4", "--seed", str(seed)], check=True, capture_output=True)
    first = sorted((home / ".claude" / "projects").rglob("*.jsonl"))[0]
    with first.open("ab") as fh:
        fh.write(_HOSTILE)
    shutil.copytree(FIXTURES / "qwen" / "projects", home / ".qwen" / "projects")
    shutil.copytree(FIXTURES / "openclaw" / "agents", home / ".openclaw" / "agents",
                    ignore=shutil.ignore_patterns("*.sql"))
    sql = FIXTURES / "openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sql"
    conn = sqlite3.connect(home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    conn.executescript(sql.read_text(encoding="utf-8"))
    conn.close()
    shutil.copytree(FIXTURES / "copilot" / "session-state", home / ".copilot" / "session-state")
    (home / ".local" / "share" / "opencode").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "opencode" / "opencode.db", home / ".local" / "share" / "opencode" / "opencode.db")


def _env(home: Path, fault: str | None = None, trace: Path | None = None) -> dict[str, str]:
    scrub = ("CODEX_", "CLAUDE_", "OPENCODE_", "TELLTALE_", "XDG_", "COPILOT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(scrub)}
    env.update({"HOME": str(home), "XDG_STATE_HOME": str(home / ".state-out"), "PYTHONPATH": str(REPO / "src")})
    env["TELLTALE_HEC_TOKEN"] = "kill-stress-token"
    if fault:
        env["TELLTALE_FAULT"] = fault
    if trace:
        env["TELLTALE_FAULT_TRACE"] = str(trace)
    return env


#: A remote output, so every window is also queued in the outbox (in its commit); the
#: port is closed and delivery gets no time: only the enqueue is exercised.
OUTPUTS = """outputs:
  splunk:
    type: splunk_hec
    url: http://127.0.0.1:9
    token_env: TELLTALE_HEC_TOKEN
"""


def _command(home: Path, out: Path, window_bytes: int, jobs: int = 1) -> list[str]:
    # With --jobs N the worker processes read every changed source (no minimum size).
    return [sys.executable, "-m", "telltale", "scan", "--once", "--root", str(home), "--log-path",
            str(out / "e.jsonl"), "--state-path", str(out / "s.sqlite"), "--json", "--window-bytes",
            str(window_bytes), "--install-inventory-interval-seconds", "0", "--outputs",
            str(home.parent / "outputs.yaml"), "--delivery-seconds", "0", "--jobs", str(jobs),
            "--jobs-min-bytes", "0"]


def record_ids(log: Path) -> tuple[Counter[str], dict[str, str]]:
    """Record-event ids of a log (per-run events left out) and the last rollup per session."""
    ids: Counter[str] = Counter()
    rollups: dict[str, str] = {}
    if not log.exists():
        return ids, rollups
    with log.open("rb") as fh:
        for line in fh:
            doc = json.loads(line)
            event = doc["event"]
            if event["action"] in PER_RUN:
                continue
            if event["action"] in ROLLUPS:
                session = json.dumps(doc.get("gen_ai", {}).get("conversation", {}).get("id"))
                rollups[session] = event["id"]
                continue
            ids[event["id"]] += 1
    return ids, rollups


@dataclass
class Figures:
    kills: int = 0
    by_point: Counter[str] = field(default_factory=Counter)
    completed_early: int = 0
    lost: int = 0
    duplicated: int = 0
    rollup_mismatch: int = 0
    #: Processes of a killed scan (``--jobs`` workers) still running after it (Linux: by cwd).
    strays: int = 0
    series: int = 0
    failures: list[str] = field(default_factory=list)


class Harness:
    def __init__(self, home: Path, work: Path, *, window_bytes: int, seed: int, jobs: int = 1) -> None:
        self.home = home
        self.jobs = jobs
        self.work = work
        self.window_bytes = window_bytes
        self.rng = random.Random(seed)
        self.reference_ids: Counter[str] = Counter()
        self.reference_rollups: dict[str, str] = {}
        self.hits: dict[str, int] = {}
        self.duration = 1.0

    def _run(self, out: Path, *, fault: str | None = None, trace: Path | None = None,
             kill_after: float | None = None) -> int:
        proc = subprocess.Popen(_command(self.home, out, self.window_bytes, self.jobs),
                                env=_env(self.home, fault, trace), cwd=str(self.home), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            _out, err = proc.communicate(timeout=kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            _out, err = proc.communicate()
        if proc.returncode not in (0, -signal.SIGKILL) or b"Traceback" in err:
            raise RuntimeError(f"scan exited {proc.returncode}: {err.decode(errors='replace')[-2000:]}")
        return proc.returncode

    def reference(self) -> None:
        out = self.work / "reference"
        trace = self.work / "trace.txt"
        started = time.perf_counter()
        self._run(out, trace=trace)
        self.duration = time.perf_counter() - started
        self.reference_ids, self.reference_rollups = record_ids(out / "e.jsonl")
        line = trace.read_text(encoding="utf-8").split()
        self.hits = {k: int(v) for k, v in (item.split("=") for item in line)}
        # A second uninterrupted scan adds no record event (the baseline of "exactly once").
        self._run(out)
        again, _ = record_ids(out / "e.jsonl")
        if again != self.reference_ids:
            raise RuntimeError("an uninterrupted re-scan changed the record events")

    def _plan(self, left: float, recovering: bool) -> tuple[str | None, float | None, str, float]:
        """A fault (``point:n``) or a delay for the next kill, within the work ``left``
        (the fraction of the reference's windows not yet committed, estimated), and that
        fraction after the kill."""
        if self.rng.random() < 0.2:
            cut = self.rng.uniform(0.0, 1.0)
            return None, 0.3 + cut * left * self.duration, "timer", left * (1 - cut)
        choices = [p for p in POINTS if self.hits.get(p, 0)] + (["recover"] if recovering else [])
        point = self.rng.choice(choices)
        if point in ("inventory", "recover"):
            return f"{point}:1", None, point, left
        top = max(int(self.hits[point] * left), 1)
        n = self.rng.randint(1, top)
        return f"{point}:{n}", None, point, left * (1 - n / top)

    def fixed_series(self, faults: list[str], figures: Figures) -> None:
        """One series with the given faults in order (each resuming the last), then a
        scan to the end: every point is passed at least once in the suite's run."""
        out = self.work / f"series-{figures.series}"
        figures.series += 1
        for fault in faults:
            if self._run(out, fault=fault) == -signal.SIGKILL:
                figures.kills += 1
                figures.by_point[fault.partition(":")[0]] += 1
            else:
                figures.completed_early += 1
        self._finish(out, figures)

    def series(self, kills: int, figures: Figures) -> None:
        """Kill one scan after another (each resuming the last) until ``kills`` kills or the
        work is done; then one scan runs to the end."""
        out = self.work / f"series-{figures.series}"
        figures.series += 1
        left = 1.0
        recovering = False
        for _ in range(kills):
            fault, delay, label, after = self._plan(left, recovering)
            code = self._run(out, fault=fault, kill_after=delay)
            if code != -signal.SIGKILL:
                figures.completed_early += 1
                break
            figures.kills += 1
            figures.by_point[label] += 1
            left = max(after, 0.02)
            recovering = label in ("write", "fsync", "written", "commit", "enqueue", "begin", "timer")
        self._finish(out, figures)

    def _finish(self, out: Path, figures: Figures) -> None:
        figures.strays += _strays(self.home)
        self._run(out)  # the scan that finishes the work
        ids, rollups = record_ids(out / "e.jsonl")
        lost = self.reference_ids - ids
        duplicated = ids - self.reference_ids
        figures.lost += sum(lost.values())
        figures.duplicated += sum(duplicated.values())
        figures.rollup_mismatch += sum(1 for k, v in self.reference_rollups.items() if rollups.get(k) != v)
        if lost or duplicated:
            figures.failures.append(f"series {figures.series - 1}: lost {sum(lost.values())}, duplicated "
                                    f"{sum(duplicated.values())} ({_kinds(out / 'e.jsonl', lost + duplicated)})")
        shutil.rmtree(out, ignore_errors=True)


def _strays(home: Path, wait: float = 5.0) -> int:
    """Processes still running in ``home`` (every scan runs there; its workers inherit it),
    after giving them ``wait`` seconds to notice that their scan is gone."""
    proc = Path("/proc")
    if not proc.is_dir():
        return 0
    deadline = time.monotonic() + wait
    while True:
        left = 0
        for entry in proc.iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    left += os.readlink(entry / "cwd") == str(home)
                except OSError:
                    continue
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _kinds(log: Path, ids: Counter[str]) -> str:
    actions: Counter[str] = Counter()
    with log.open("rb") as fh:
        for line in fh:
            doc = json.loads(line)
            if doc["event"]["id"] in ids:
                actions[doc["event"]["action"]] += 1
    return ", ".join(f"{a} {n}" for a, n in actions.most_common()) or "ids not in the log"


def stress(work: Path, *, kills: int, rounds: int, claude_mb: float, codex_mib: int, window_bytes: int,
           seed: int, jobs: int = 1) -> tuple[Figures, Harness]:
    home = work / "home"
    build_home(home, claude_mb=claude_mb, codex_mib=codex_mib, seed=seed)
    (work / "outputs.yaml").write_text(OUTPUTS, encoding="utf-8")
    harness = Harness(home, work, window_bytes=window_bytes, seed=seed, jobs=jobs)
    harness.reference()
    figures = Figures()
    per_round = max(1, -(-kills // rounds))
    while figures.kills < kills:
        harness.series(min(per_round, kills - figures.kills), figures)
    return figures, harness


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=30, help="series (each from an empty state)")
    parser.add_argument("--claude-mb", type=float, default=4.0)
    parser.add_argument("--codex-mib", type=int, default=1)
    parser.add_argument("--window-bytes", type=int, default=256 << 10, help="small windows: many commits")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="scan --jobs N (worker processes read every source)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        figures, harness = stress(Path(tmp), kills=args.kills, rounds=args.rounds, claude_mb=args.claude_mb,
                                  codex_mib=args.codex_mib, window_bytes=args.window_bytes, seed=args.seed,
                                  jobs=args.jobs)
        elapsed = time.perf_counter() - started
    print(f"reference: {sum(harness.reference_ids.values())} record events, scan {harness.duration:.2f}s, "
          f"fault points passed: {harness.hits}")
    print(f"series: {figures.series}; kills: {figures.kills} ({dict(sorted(figures.by_point.items()))}); "
          f"runs that finished before their fault: {figures.completed_early}; {elapsed:.0f}s")
    print(f"lost: {figures.lost}; duplicated: {figures.duplicated}; rollup mismatches: {figures.rollup_mismatch}; "
          f"processes left running after a killed scan: {figures.strays}")
    for failure in figures.failures:
        print("FAIL", failure)
    return 1 if figures.lost or figures.duplicated or figures.rollup_mismatch or figures.strays else 0


if __name__ == "__main__":
    sys.exit(main())
