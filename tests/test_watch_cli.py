"""End-to-end: the real ``telltale watch`` CLI in a subprocess over synthetic stores."""

from __future__ import annotations

import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import activity, cli_env, read_events, run_cli, write_claude_session

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from build_opencode import Writer, build

REPO = Path(__file__).resolve().parents[1]
FAST = ["--debounce-ms", "50", "--min-scan-interval-ms", "100"]
COMMON = ["--no-detect", "--install-inventory-disabled", "--json"]


class Watch:
    """A ``telltale watch`` subprocess whose summary lines are read as they arrive."""

    def __init__(self, home: Path, out: Path, *args: str, root: str | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        self.log = out / "e.jsonl"
        self.state = out / "s.sqlite"
        cmd = [sys.executable, "-m", "telltale", "watch", "--root", root or str(home), "--log-path", str(self.log),
               "--state-path", str(self.state), *COMMON, *FAST, *args]
        self.proc = subprocess.Popen(cmd, env=cli_env(home, extra_env), cwd=str(home), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def summary(self, timeout: float = 15.0) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise AssertionError(f"no summary line within {timeout}s; stderr:\n{self.stderr}") from None
        data: dict[str, Any] = json.loads(line)
        return data

    def no_summary(self, seconds: float) -> None:
        try:
            line = self.lines.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected scan: {line[:300]}")

    def finish(self, timeout: float = 20.0) -> int:
        try:
            _, self.stderr = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        _, self.stderr = self.proc.communicate()


def acts(path: Path) -> list[dict[str, Any]]:
    return activity(read_events(path))


def ids_unique(events: list[dict[str, Any]]) -> bool:
    ids = [e["event"]["id"] for e in events]
    return len(ids) == len(set(ids))


def test_watch_emits_appends_new_transcripts_and_replaced_files(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    s1 = write_claude_session(home, "-work-p", "sess-1", 2)
    w = Watch(home, out, "--iterations", "3")
    first = w.summary()
    assert first["trigger"] == ["initial"] and first["targeted"] is False
    baseline = len(acts(w.log))
    assert Counter(e["event"]["action"] for e in acts(w.log))["tool_call"] == 2

    write_claude_session(home, "-work-p", "sess-1", 1, start=2)  # append one turn
    appended = w.summary()
    assert appended["trigger"] == ["native"] and appended["targeted"] is True
    assert appended["sources_scanned"] == 1
    events = acts(w.log)
    assert len(events) - baseline == appended["sources"][0]["observations"] > 0
    assert Counter(e["event"]["action"] for e in events[baseline:])["tool_call"] == 1

    write_claude_session(home, "-work-new", "sess-2", 1)  # a new project directory and transcript
    created = w.summary()
    assert "rediscovery" in created["trigger"]
    new_events = acts(w.log)[len(events):]
    assert new_events and {e["gen_ai"]["conversation"]["id"] for e in new_events} == {"sess-2"}

    # Replace sess-1 atomically with a different conversation (rename over it).
    staging = tmp_path / "staging"
    fresh = write_claude_session(staging, "-work-p", "sess-1b", 1)
    before = len(acts(w.log))
    os.replace(fresh, s1)
    replaced = w.summary()
    assert replaced["targeted"] is True
    after = acts(w.log)[before:]
    assert after and {e["gen_ai"]["conversation"]["id"] for e in after} == {"sess-1b"}
    assert w.finish() == 0
    assert ids_unique(acts(w.log))
    # One scan_summary per scan, each a health event in the log as well as a stdout line.
    summaries = [e for e in read_events(w.log) if e["event"]["action"] == "scan_summary"]
    assert len(summaries) == 4


def _opencode_insert(writer: Writer, n: int) -> None:
    t = 1785420100000 + n * 1000
    writer.run("BEGIN")
    writer.run(
        f"INSERT INTO message VALUES ('msg_w{n}', 'ses_demo_main', {t}, {t}, "
        f"'{{\"role\":\"user\",\"time\":{{\"created\":{t}}}}}')"
    )
    writer.run(
        f"INSERT INTO part VALUES ('prt_w{n}', 'msg_w{n}', 'ses_demo_main', {t + 10}, {t + 10}, "
        f"'{{\"type\":\"text\",\"text\":\"watch commit {n}\"}}')"
    )
    writer.run("COMMIT")


def test_watch_opencode_wal_commit_with_open_writer_and_shm_churn_ignored(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    db = build(home / ".local" / "share" / "opencode" / "opencode.db", "legacy", wal=True)
    with Writer(db, "PRAGMA journal_mode=WAL", "SELECT count(*) FROM part") as writer:
        shm = Path(str(db) + "-shm")
        assert shm.exists() and Path(str(db) + "-wal").exists()
        w = Watch(home, out, "--iterations", "1")
        first = w.summary()
        assert first["sources"] and first["sources"][0]["kind"] == "opencode.sqlite"
        before = len(acts(w.log))
        assert before > 0
        # SHM churn alone (readers touching the index) triggers nothing (WATCH-4).
        for i in range(10):
            os.utime(shm, ns=(time.time_ns(), time.time_ns() + i))
            time.sleep(0.05)
        w.no_summary(1.0)
        # A commit through the still-open writer: the WAL grows, the main file does not.
        _opencode_insert(writer, 1)
        scanned = w.summary()
        assert scanned["trigger"] == ["native"] and scanned["targeted"] is True
        assert w.finish() == 0
    new = acts(w.log)[before:]
    assert [e["event"]["action"] for e in new] == ["message"]
    assert new[0]["gen_ai"]["conversation"]["id"] == "ses_demo_main"


def test_watch_poll_mode_without_native_events(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    write_claude_session(home, "-work-p", "sess-1", 1)
    db = build(home / ".local" / "share" / "opencode" / "opencode.db", "legacy", wal=True)
    w = Watch(home, out, "--poll", "--no-native", "--iterations", "5")
    w.summary()
    before = len(acts(w.log))
    write_claude_session(home, "-work-p", "sess-1", 1, start=1)
    appended = w.summary()
    assert appended["trigger"] == ["sample"]
    with Writer(db) as writer:
        _opencode_insert(writer, 1)
        committed = w.summary()
        # The writer's new -wal/-shm also moved the directory's mtime: a rediscovery too.
        assert "sample" in committed["trigger"]
        assert [s["kind"] for s in committed["sources"]] == ["opencode.sqlite"]
    time.sleep(0.05)
    # The project directory appears with its transcript in it (one rename): a poll between
    # the mkdir and the write would otherwise rediscover an empty directory (a race that
    # loaded machines lose).
    write_claude_session(tmp_path / "staging", "-work-q", "sess-2", 1)
    os.replace(tmp_path / "staging" / ".claude" / "projects" / "-work-q", home / ".claude" / "projects" / "-work-q")
    created = w.summary()
    if not any(s["kind"] == "claude.projects" for s in created["sources"]):
        # Closing the writer (its -wal/-shm going) may wake one more scan before the rename.
        created = w.summary()
    assert "rediscovery" in created["trigger"] and "sample" in created["trigger"]
    assert "claude.projects" in [s["kind"] for s in created["sources"]]
    w.proc.send_signal(signal.SIGTERM)  # a stop is how a watch normally ends
    assert w.finish() == 0
    events = acts(w.log)
    assert ids_unique(events)
    convs = Counter(e["gen_ai"]["conversation"]["id"] for e in events[before:])
    calls = Counter(e["gen_ai"]["conversation"]["id"] for e in events[before:] if e["event"]["action"] == "tool_call")
    assert calls == {"sess-1": 1, "sess-2": 1}
    assert convs["sess-1"] == 4 and convs["ses_demo_main"] == 1


def test_WATCH_5_state_or_log_inside_a_watched_root_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 1)
    inside = home / ".claude" / "projects" / "-work-p"
    for flag in ("--log-path", "--state-path"):
        args = ["watch", "--root", str(home), *COMMON, "--iterations", "0",
                "--log-path", str(tmp_path / "o" / "e.jsonl"), "--state-path", str(tmp_path / "o" / "s.sqlite"),
                flag, str(inside / "telltale.out")]
        proc = run_cli(args, home, check=False, timeout=30)
        assert proc.returncode == 2, proc.stderr
        assert "inside a scanned session store" in proc.stderr and flag in proc.stderr
        assert not (inside / "telltale.out").exists()


def test_WATCH_5_and_6_opencode_override_parent(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    home.mkdir()
    custom = tmp_path / "custom"
    custom.mkdir()
    env = {"OPENCODE_DB": str(custom / "agent-data")}
    # The override's parent is watched, so state beside the database is refused.
    proc = run_cli(["watch", "--root", ".", *COMMON, "--iterations", "0", "--log-path", str(out / "e.jsonl"),
                    "--state-path", str(custom / "s.sqlite")], home, extra_env=env, check=False, timeout=30)
    assert proc.returncode == 2 and "inside a scanned session store" in proc.stderr
    w = Watch(home, out, "--iterations", "1", root=".", extra_env=env)
    w.summary()
    (custom / "notes.txt").write_text("unrelated sibling")  # WATCH-6: ignored
    (custom / "other.db").write_bytes(b"x")
    w.no_summary(0.8)
    build(custom / "agent-data", "legacy", wal=True)  # the configured file appears
    created = w.summary()
    assert [s["kind"] for s in created["sources"]] == ["opencode.sqlite"]
    assert w.finish() == 0
    assert any(e["event"]["action"] == "tool_call" for e in acts(w.log))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_after_the_scan_with_no_pending_window(tmp_path: Path, sig: int) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    write_claude_session(home, "-work-p", "sess-1", 1)
    w = Watch(home, out)
    w.summary()
    stop = threading.Event()
    turns = [1]

    def writer() -> None:
        while not stop.is_set():
            write_claude_session(home, "-work-p", "sess-1", 1, start=turns[0])
            turns[0] += 1
            time.sleep(0.01)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        w.summary()  # at least one triggered scan under load
        w.proc.send_signal(sig)
        assert w.finish(timeout=20) == 0
    finally:
        stop.set()
        thread.join()
    conn = sqlite3.connect(f"file:{w.state}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT count(*) FROM pending_window").fetchone() == (0,)
    finally:
        conn.close()
    # A scan sharing the state emits exactly what watch had not: every turn once.
    run_cli(["scan", "--once", "--root", str(home), "--log-path", str(w.log), "--state-path", str(w.state),
             *COMMON], home)
    events = acts(w.log)
    assert ids_unique(events)
    assert Counter(e["event"]["action"] for e in events)["tool_call"] == turns[0]


def test_no_duplicates_across_scan_and_watch_sharing_state(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    write_claude_session(home, "-work-p", "sess-1", 2)
    scan = ["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"), "--state-path",
            str(out / "s.sqlite"), *COMMON]
    run_cli(scan, home)
    w = Watch(home, out, "--iterations", "1")
    initial = w.summary()
    assert initial["sources_unchanged"] == 1 and initial["sources_scanned"] == 0  # scan already took it
    write_claude_session(home, "-work-p", "sess-1", 1, start=2)
    w.summary()
    assert w.finish() == 0
    write_claude_session(home, "-work-p", "sess-1", 1, start=3)
    run_cli(scan, home)
    events = acts(w.log)
    assert ids_unique(events)
    assert Counter(e["event"]["action"] for e in events)["tool_call"] == 4


def test_fixture_guard_and_dry_run(tmp_path: Path) -> None:
    demo = REPO / "examples" / "demo"
    proc = run_cli(["watch", "--root", str(demo), "--iterations", "0", "--log-path", str(tmp_path / "e.jsonl"),
                    "--state-path", str(tmp_path / "s.sqlite"), *COMMON], tmp_path, check=False, timeout=30)
    assert proc.returncode == 2 and "--allow-fixtures" in proc.stderr
    home, out = tmp_path / "home", tmp_path / "out"
    write_claude_session(home, "-work-p", "sess-1", 1)
    w = Watch(home, out, "--dry-run", "--iterations", "1")
    assert w.summary()["dry_run"] is True
    write_claude_session(home, "-work-p", "sess-1", 1, start=1)
    assert w.summary()["dry_run"] is True
    assert w.finish() == 0
    assert not out.exists()


def test_usage_errors(tmp_path: Path) -> None:
    for bad in (["--debounce-ms", "-1"], ["--max-watches", "0"], ["--poll-rate", "0"], ["--iterations", "-2"]):
        proc = run_cli(["watch", "--root", str(tmp_path), *bad], tmp_path, check=False, timeout=30)
        assert proc.returncode == 2, bad


def test_watch_limit_reached_is_reported_and_alerted(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    write_claude_session(home, "-work-p", "sess-1", 1)
    write_claude_session(home, "-work-q", "sess-2", 1)
    w = Watch(home, out, "--max-watches", "2", "--iterations", "1")
    w.summary()
    write_claude_session(home, "-work-q", "sess-2", 1, start=1)  # -work-q is beyond the limit
    assert "sample" in w.summary()["trigger"]
    assert w.finish() == 0
    assert "watch limit reached" in w.stderr and "--max-watches 2" in w.stderr
    alerts = [e for e in read_events(w.log) if e["event"]["action"] == "operational_alert"]
    assert [a["telltale"]["alert_type"] for a in alerts] == ["watch_limit_reached"]
    assert alerts[0]["telltale"]["alert"]["max_watches"] == 2
    assert alerts[0]["telltale"]["alert"]["unwatched"] == 1


def test_watch_started_before_any_agent_ran_notices_the_first_session(tmp_path: Path) -> None:
    """No store directory exists at start: watch waits on the nearest existing ancestor."""
    home, out = tmp_path / "home", tmp_path / "out"
    home.mkdir()
    w = Watch(home, out, "--iterations", "1", "--client", "claude")
    first = w.summary()
    assert first["trigger"] == ["initial"]
    time.sleep(0.3)
    write_claude_session(home, "-work-p", "sess-1", 1)  # creates ~/.claude/projects/<slug>/<session>.jsonl
    found = w.summary(timeout=20)
    assert "rediscovery" in found["trigger"]
    assert w.finish() == 0
    assert "waiting for one to appear" in w.stderr
    assert Counter(e["event"]["action"] for e in acts(w.log))["tool_call"] == 1


def test_anchor_events_that_lead_nowhere_are_ignored(tmp_path: Path) -> None:
    from telltale.watch.native import anchor_directories
    from telltale.watch.paths import ADDED, Action, PathFilter

    pending = [str(tmp_path / ".claude" / "projects")]
    assert anchor_directories(pending) == [str(tmp_path)]
    flt = PathFilter((), {}, pending)
    assert flt.classify(ADDED, str(tmp_path / ".claude")).action is Action.REDISCOVER
    assert flt.classify(ADDED, str(tmp_path / ".claude" / "projects")).action is Action.REDISCOVER
    assert flt.classify(ADDED, str(tmp_path / ".bash_history")).action is Action.IGNORE
    assert flt.classify(ADDED, str(tmp_path / ".claudette")).action is Action.IGNORE


@pytest.mark.parametrize("action", ["term", "int"])
def test_signal_during_a_long_scan_stops_it_at_a_source_boundary(tmp_path: Path, action: str) -> None:
    """A stop signal in the middle of the initial scan does not wait for the whole scan:
    it ends at the next source boundary with what it read committed, reports a
    ``scan_interrupted`` health event, exits 0 (a stop is how a watch ends) and the next
    scan emits the rest, every event once."""
    home, out = tmp_path / "home", tmp_path / "out"
    for s in range(8):
        write_claude_session(home, f"-work-p{s}", f"sess-{s}", 3)
    # The third source boundary of the initial scan raises the signal inside the process.
    w = Watch(home, out, extra_env={"TELLTALE_FAULT": f"source:3:{action}"})
    first = w.summary()
    assert w.finish(timeout=30) == 0, w.stderr
    assert first["interrupted"]["sources_done"] == 2 and first["interrupted"]["sources_total"] == 8
    health = [e for e in read_events(w.log) if e["event"]["action"] == "scan_interrupted"]
    assert len(health) == 1
    conn = sqlite3.connect(f"file:{w.state}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT count(*) FROM pending_window").fetchone() == (0,)
    finally:
        conn.close()
    done = Counter(e["gen_ai"]["conversation"]["id"] for e in acts(w.log))
    assert 2 <= len(done) <= 3  # the third source stops at its first batch boundary
    run_cli(["scan", "--once", "--root", str(home), "--log-path", str(w.log), "--state-path", str(w.state),
             *COMMON], home)
    events = acts(w.log)
    assert ids_unique(events)
    assert Counter(e["event"]["action"] for e in events)["tool_call"] == 8 * 3
