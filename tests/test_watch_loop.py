"""The watch loop in-process: triggers, conservative scans, baselines, limits, fallback.

The pipeline is replaced by a recorder (``scan``) so these tests see exactly which sources
the loop asks for and why; discovery and native notifications are the real ones.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from telltale.discovery import DiscoveryOptions, discover
from telltale.watch.loop import AlertQueue, ScanRequest, WatchConfig, WatchSession

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from build_opencode import build

FAST = {"debounce": 0.05, "min_interval": 0.05}


class Recorder:
    def __init__(self, during: Callable[[ScanRequest], None] | None = None) -> None:
        self.requests: list[ScanRequest] = []
        self.during = during

    def __call__(self, request: ScanRequest) -> None:
        self.requests.append(request)
        if self.during is not None:
            self.during(request)

    def wait(self, count: int, timeout: float = 10.0) -> list[ScanRequest]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.requests


class Silent:
    """A notifier that never reports anything (a file system without native events)."""

    def __init__(self, *_a: object) -> None:
        self.closed = False

    def watch(self, _debounce: int, step: int, _timeout: int, stop: Any) -> str:
        while not stop.is_set():
            time.sleep(step / 1000)
        return "stop"

    def close(self) -> None:
        self.closed = True


def start(session: WatchSession) -> tuple[threading.Thread, list[int]]:
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(session.run()), daemon=True)
    thread.start()
    return thread, codes


def session_for(home: Path, config: WatchConfig, scan: Recorder, **kw: Any) -> WatchSession:
    return WatchSession(config, discover=lambda: discover(DiscoveryOptions(root=str(home))), scan=scan, **kw)


def claude(home: Path, slug: str, name: str, lines: int = 1) -> Path:
    d = home / ".claude" / "projects" / slug
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.jsonl"
    with path.open("a") as fh:
        for _ in range(lines):
            fh.write('{"type":"user"}\n')
    return path


def commit(db: Path, n: int) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS t (v INTEGER)")
        conn.execute("INSERT INTO t VALUES (?)", (n,))
    finally:
        conn.close()


def test_initial_full_scan_then_targeted_scan_of_the_changed_source(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s1 = claude(home, "-work-p", "s1")
    claude(home, "-work-p", "s2")
    rec = Recorder()
    session = session_for(home, WatchConfig(iterations=1, **FAST), rec)
    thread, codes = start(session)
    rec.wait(1)
    claude(home, "-work-p", "s1")
    thread.join(10)
    assert codes == [0]
    initial, triggered = rec.requests
    assert initial.triggers == ["initial"] and not initial.targeted and len(initial.sources) == 2
    assert triggered.targeted and [s.path for s in triggered.sources] == [str(s1)]
    assert triggered.triggers == ["native"] and triggered.iteration == 1


def test_WATCH_17_newly_indexed_sqlite_store_gets_one_conservative_scan(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    rec = Recorder()
    session = session_for(home, WatchConfig(iterations=2, sample_sqlite=True, **FAST), rec)
    thread, codes = start(session)
    rec.wait(1)
    assert rec.requests[0].sources == []
    build(data / "opencode.db", "legacy", wal=True)
    thread.join(15)
    assert codes == [0], [r.triggers for r in rec.requests]
    _, found, conservative = rec.requests
    db = str(data / "opencode.db")
    assert "rediscovery" in found.triggers and [s.path for s in found.sources] == [db]
    # A native event of the build that arrives late (a loaded machine) may join it.
    assert conservative.triggers[0] == "conservative" and set(conservative.triggers) <= {"conservative", "native"}
    assert [s.path for s in conservative.sources] == [db]
    assert conservative.iteration == 2  # it used up an iteration (WATCH-17)


def test_WATCH_11_commit_during_a_scan_triggers_another_scan(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    db = build(data / "opencode.db", "legacy", wal=True)

    def commit_while_scanning(request: ScanRequest) -> None:
        if request.iteration == 1:
            commit(db, 2)  # lands after the baseline was captured, before the scan "finishes"

    rec = Recorder(during=commit_while_scanning)
    # No native events at all: only the sampler can notice (the macOS open-WAL case).
    session = session_for(home, WatchConfig(iterations=2, sample_sqlite=True, **FAST), rec, notify_factory=Silent)
    thread, codes = start(session)
    rec.wait(1)
    commit(db, 1)
    thread.join(15)
    assert codes == [0], [r.triggers for r in rec.requests]
    assert [r.triggers for r in rec.requests[1:]] == [["sample"], ["sample"]]
    assert all([s.path for s in r.sources] == [str(db)] for r in rec.requests[1:])


def test_WATCH_14_unchanged_samples_and_shm_churn_trigger_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    db = build(data / "opencode.db", "legacy", wal=True)
    rec = Recorder()
    session = session_for(home, WatchConfig(iterations=1, sample_sqlite=True, **FAST), rec)
    thread, codes = start(session)
    rec.wait(1)
    shm = Path(str(db) + "-shm")
    for i in range(10):
        shm.write_bytes(bytes([i]) * 32768)
        time.sleep(0.05)
    time.sleep(0.6)  # a few sampler passes
    assert len(rec.requests) == 1, [r.triggers for r in rec.requests]
    session.request_stop()
    thread.join(5)
    assert codes == [0]


def test_watch_limit_samples_the_unwatched_directories(tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude(home, "-work-p", "s1")
    q = claude(home, "-work-q", "s2")
    rec = Recorder()
    warnings: list[str] = []
    alerts = AlertQueue()
    session = session_for(home, WatchConfig(iterations=1, max_watches=1, **FAST), rec,
                          warn=warnings.append, alerts=alerts)
    thread, codes = start(session)
    rec.wait(1)
    assert session.plan.directories == [str(home / ".claude" / "projects")]
    assert len(session.plan.unwatched) == 2
    assert any("watch limit reached" in w for w in warnings)
    docs, commit_alerts = alerts.hook(None)(None, "2026-01-01T00:00:00Z")
    assert [d["telltale"]["alert_type"] for d in docs] == ["watch_limit_reached"]
    assert docs[0]["telltale"]["alert"]["unwatched"] == 2
    claude(home, "-work-q", "s2")  # in an unwatched directory: only sampling can see it
    thread.join(10)
    assert codes == [0]
    assert rec.requests[1].triggers == ["sample"] and [s.path for s in rec.requests[1].sources] == [str(q)]
    commit_alerts(None)
    assert len(alerts) == 0


def test_native_failure_degrades_to_sampling(tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude(home, "-work-p", "s1")

    def refuse(*_a: object) -> None:
        raise OSError(28, "inotify watch limit")

    rec = Recorder()
    warnings: list[str] = []
    alerts = AlertQueue()
    session = session_for(home, WatchConfig(iterations=1, **FAST), rec, warn=warnings.append, alerts=alerts,
                          notify_factory=refuse)
    thread, codes = start(session)
    rec.wait(1)
    time.sleep(0.05)
    new = claude(home, "-work-p", "s-new")  # the directory's mtime moves: rediscovery
    thread.join(10)
    assert codes == [0]
    assert any("falling back to metadata sampling" in w for w in warnings)
    docs, _ = alerts.hook(None)(None, "2026-01-01T00:00:00Z")
    assert [d["telltale"]["alert_type"] for d in docs] == ["native_watch_unavailable"]
    assert "rediscovery" in rec.requests[1].triggers
    assert [s.path for s in rec.requests[1].sources] == [str(new)]


def test_poll_mode_sees_appends_without_native_events(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s1 = claude(home, "-work-p", "s1")
    rec = Recorder()
    session = session_for(home, WatchConfig(iterations=2, poll=True, **FAST), rec, notify_factory=Silent)
    thread, codes = start(session)
    rec.wait(1)
    claude(home, "-work-p", "s1")
    rec.wait(2)
    time.sleep(0.05)
    new = claude(home, "-work-x", "s9")  # a new directory: the root's mtime moves
    thread.join(10)
    assert codes == [0], [r.triggers for r in rec.requests]
    assert rec.requests[1].triggers == ["sample"] and [s.path for s in rec.requests[1].sources] == [str(s1)]
    assert "rediscovery" in rec.requests[2].triggers and [s.path for s in rec.requests[2].sources] == [str(new)]


def test_removed_source_rediscovers_without_a_scan(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s1 = claude(home, "-work-p", "s1")
    s2 = claude(home, "-work-p", "s2")
    rec = Recorder()
    session = session_for(home, WatchConfig(iterations=1, **FAST), rec)
    thread, codes = start(session)
    rec.wait(1)
    s1.unlink()
    time.sleep(0.4)
    assert len(rec.requests) == 1  # nothing new to scan: no scan, no iteration used
    assert str(s1) not in session.sources
    claude(home, "-work-p", "s2")
    thread.join(10)
    assert codes == [0]
    assert [s.path for s in rec.requests[1].sources] == [str(s2)]


def test_request_stop_returns_promptly_when_idle(tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude(home, "-work-p", "s1")
    rec = Recorder()
    session = session_for(home, WatchConfig(**FAST), rec)
    thread, codes = start(session)
    rec.wait(1)
    started = time.monotonic()
    session.request_stop()
    thread.join(5)
    assert codes == [0] and time.monotonic() - started < 2


def test_alert_queue_drops_alerts_only_once_committed() -> None:
    alerts = AlertQueue("w1")
    alerts.add("watch_limit_reached", "warning", "limit", {"max_watches": 1})
    inner_committed: list[Any] = []

    def inventory(_state: Any, _observed: str) -> tuple[list[dict[str, Any]], Any]:
        return [{"inventory": True}], inner_committed.append

    hook = alerts.hook(inventory)
    docs, commit_fn = hook(None, "2026-01-01T00:00:00Z")
    assert docs[0] == {"inventory": True}
    assert docs[1]["telltale"]["alert"] == {"max_watches": 1, "watch_id": "w1"}
    assert len(alerts) == 1  # a scan that fails before its commit keeps the alert queued
    commit_fn("conn")
    assert inner_committed == ["conn"] and len(alerts) == 0
    docs, commit_fn = hook(None, "2026-01-01T00:00:00Z")
    assert docs == [{"inventory": True}] and commit_fn == inner_committed.append


@pytest.mark.parametrize("iterations", [0])
def test_zero_iterations_runs_only_the_initial_scan(tmp_path: Path, iterations: int) -> None:
    home = tmp_path / "home"
    claude(home, "-work-p", "s1")
    rec = Recorder()
    assert session_for(home, WatchConfig(iterations=iterations, **FAST), rec).run() == 0
    assert [r.triggers for r in rec.requests] == [["initial"]]


def test_WATCH_15_sampling_discovers_no_new_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    rec = Recorder()
    # SQLite sampling on (the macOS default), no native events: a new store stays unseen.
    session = session_for(home, WatchConfig(sample_sqlite=True, **FAST), rec, notify_factory=Silent)
    thread, codes = start(session)
    rec.wait(1)
    build(data / "opencode.db", "legacy", wal=True)
    time.sleep(0.8)
    assert len(rec.requests) == 1 and len(session.sqlite_sampler) == 0
    session.request_stop()
    thread.join(5)
    assert codes == [0]


def test_WATCH_18_explicit_root_alias_with_linked_component_is_not_sampled(tmp_path: Path) -> None:
    real = tmp_path / "real-home"
    build(real / ".local" / "share" / "opencode" / "opencode.db", "legacy", wal=True)
    alias = tmp_path / "alias-home"
    alias.symlink_to(real, target_is_directory=True)
    rec = Recorder()
    warnings: list[str] = []
    session = session_for(alias, WatchConfig(iterations=0, sample_sqlite=True, **FAST), rec, warn=warnings.append)
    assert session.run() == 0
    # Legacy explicit-root discovery accepts the alias (OC-DISC-27) ...
    assert [s.path for s in rec.requests[0].sources] == [str(alias / ".local/share/opencode/opencode.db")]
    # ... but the metadata fallback does not relax its no-follow rule.
    assert len(session.sqlite_sampler) == 0
    assert any("not sampling" in w and "symbolic link" in w for w in warnings)
    real_session = session_for(real, WatchConfig(iterations=0, sample_sqlite=True, **FAST), Recorder())
    assert real_session.run() == 0 and len(real_session.sqlite_sampler) == 1


def test_bad_project_config_during_watch_skips_rediscovery_but_keeps_watching(tmp_path: Path) -> None:
    from telltale.errors import ConfigError

    home = tmp_path / "home"
    s1 = claude(home, "-work-p", "s1")
    calls = [0]

    def flaky_discover() -> Any:
        calls[0] += 1
        if calls[0] > 2:  # the initial discovery and its settle round succeed
            raise ConfigError("projects.yaml: line 3: not a mapping")
        return discover(DiscoveryOptions(root=str(home)))

    rec = Recorder()
    warnings: list[str] = []
    session = WatchSession(WatchConfig(iterations=1, **FAST), discover=flaky_discover, scan=rec,
                           warn=warnings.append)
    thread, codes = start(session)
    rec.wait(1)
    claude(home, "-work-p", "s-new")  # wants a rediscovery, which fails
    claude(home, "-work-p", "s1")  # a known source: still scanned
    thread.join(10)
    assert codes == [0]
    assert any("rediscovery skipped" in w for w in warnings)
    assert str(s1) in [s.path for s in rec.requests[1].sources]


def test_WATCH_16_sampled_change_uses_targeted_scan_and_debounce(tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude(home, "-work-p", "s1")
    db = build(home / ".local" / "share" / "opencode" / "opencode.db", "legacy", wal=True)
    rec = Recorder()
    config = WatchConfig(iterations=1, sample_sqlite=True, debounce=0.6, min_interval=0.0)
    session = session_for(home, config, rec, notify_factory=Silent)
    thread, codes = start(session)
    rec.wait(1)
    committed_at = time.monotonic()
    commit(db, 1)
    rec.wait(2)
    scanned_at = time.monotonic()
    thread.join(10)
    assert codes == [0]
    request = rec.requests[1]
    assert request.targeted and request.triggers == ["sample"]
    assert [s.path for s in request.sources] == [str(db)]  # the Claude transcript is not rescanned
    assert scanned_at - committed_at >= 0.6  # the debounce applied to the sampled change
