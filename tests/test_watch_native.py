"""Watch planning (which directories, how many), the inbox, the native watcher thread,
and the debounce / minimum-interval schedule."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from telltale.discovery.api import StoreRoot
from telltale.watch.native import Inbox, NativeWatcher, plan_watches
from telltale.watch.paths import ADDED, MODIFIED
from telltale.watch.schedule import Coalescer


def tree(base: Path, *dirs: str) -> None:
    for d in dirs:
        (base / d).mkdir(parents=True, exist_ok=True)


# -- plan_watches -----------------------------------------------------------------------
def test_plan_recursive_root_watches_every_real_subdirectory(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    tree(root, "-work-p/s1/subagents", "-work-q")
    (root / "linked").symlink_to(tmp_path, target_is_directory=True)  # never entered
    (root / "file.jsonl").write_text("")
    plan = plan_watches([StoreRoot(path=str(root), recursive=True, kinds=("claude.projects",))])
    assert plan.directories == [
        str(root), str(root / "-work-p"), str(root / "-work-q"), str(root / "-work-p/s1"),
        str(root / "-work-p/s1/subagents"),
    ]
    assert not plan.limited
    assert all(plan.owner[d] == str(root) for d in plan.directories)


def test_WATCH_1_plan_opencode_directory_is_not_recursive(tmp_path: Path) -> None:
    data = tmp_path / "opencode"
    tree(data, "storage/session", "log")
    plan = plan_watches([StoreRoot(path=str(data), recursive=False, kinds=("opencode.sqlite",))])
    assert plan.directories == [str(data)]


def test_WATCH_1_shared_directory_recursive_when_another_kind_needs_it(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    tree(agents, "main/agent", "main/sessions")
    root = StoreRoot(path=str(agents), recursive=True, kinds=("openclaw.agents", "openclaw.sqlite"))
    plan = plan_watches([root])
    assert set(plan.directories) == {str(agents), str(agents / "main"), str(agents / "main/agent"),
                                     str(agents / "main/sessions")}


def test_plan_depth_follows_the_kinds_layout(tmp_path: Path) -> None:
    state = tmp_path / "session-state"
    tree(state, "abc/deeper/still")
    plan = plan_watches([StoreRoot(path=str(state), recursive=True, kinds=("copilot.session_state",))])
    # <id>/events.jsonl is as deep as that store goes: deeper directories cannot hold sources.
    assert plan.directories == [str(state), str(state / "abc")]


def test_plan_limit_roots_first_then_breadth_first(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    tree(a, "x/y", "z")
    tree(b, "w")
    roots = [StoreRoot(path=str(a), recursive=True, kinds=("claude.projects",)),
             StoreRoot(path=str(b), recursive=True, kinds=("codex.sessions",))]
    plan = plan_watches(roots, max_watches=3)
    assert plan.directories == [str(a), str(b), str(a / "x")]
    assert plan.unwatched == [str(a / "z"), str(b / "w"), str(a / "x/y")]
    assert plan.limited and plan.total == 6
    assert plan.owner[str(b / "w")] == str(b)


def test_plan_skips_missing_roots_and_duplicates(tmp_path: Path) -> None:
    tree(tmp_path, "r")
    roots = [StoreRoot(path=str(tmp_path / "gone"), recursive=True, kinds=("claude.projects",)),
             StoreRoot(path=str(tmp_path / "r"), recursive=False, kinds=("opencode.sqlite",)),
             StoreRoot(path=str(tmp_path / "r") + "/.", recursive=False, kinds=("opencode.sqlite",))]
    assert plan_watches(roots).directories == [str(tmp_path / "r")]


# -- inbox --------------------------------------------------------------------------------
def test_inbox_dedups_overflows_and_stops() -> None:
    now = [5.0]
    inbox = Inbox(limit=3, clock=lambda: now[0])
    inbox.put({(MODIFIED, "/a"), (MODIFIED, "/b")})
    now[0] = 6.0
    inbox.put({(MODIFIED, "/a")})
    drained = inbox.drain()
    assert drained.changes == {(MODIFIED, "/a"), (MODIFIED, "/b")}
    assert drained.first_at == 5.0 and not drained.overflow
    inbox.put({(ADDED, f"/{i}") for i in range(5)})
    drained = inbox.drain()
    assert drained.overflow and drained.changes == set()
    assert inbox.drain().first_at is None  # drained means empty
    started = time.monotonic()
    threading.Timer(0.05, inbox.stop).start()
    inbox.wait(5.0)
    assert time.monotonic() - started < 2.0
    assert inbox.drain().stopped


def test_inbox_wait_times_out_without_spinning() -> None:
    inbox = Inbox()
    cpu = time.process_time()
    started = time.monotonic()
    inbox.wait(0.3)
    assert time.monotonic() - started >= 0.25
    assert time.process_time() - cpu < 0.1


# -- native watcher -------------------------------------------------------------------------
def _wait_for(inbox: Inbox, predicate: object, timeout: float = 5.0) -> set[tuple[int, str]]:
    seen: set[tuple[int, str]] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inbox.wait(0.1)
        seen |= inbox.drain().changes
        if predicate(seen):  # type: ignore[operator]
            return seen
    return seen


def test_native_watcher_reports_direct_children_only(tmp_path: Path) -> None:
    tree(tmp_path, "sub")
    inbox = Inbox()
    watcher = NativeWatcher([str(tmp_path)], inbox)
    watcher.start()
    try:
        (tmp_path / "sub" / "deep.jsonl").write_text("x\n")  # below: not watched
        (tmp_path / "s.jsonl").write_text("x\n")
        seen = _wait_for(inbox, lambda s: any(p.endswith("s.jsonl") and "sub" not in p for _, p in s))
        paths = {p for _, p in seen}
        assert str(tmp_path / "s.jsonl") in paths
        assert str(tmp_path / "sub" / "deep.jsonl") not in paths
    finally:
        started = time.monotonic()
        watcher.stop()
        assert time.monotonic() - started < 2.0


def test_native_watcher_start_fails_for_a_vanished_directory(tmp_path: Path) -> None:
    watcher = NativeWatcher([str(tmp_path / "gone")], Inbox())
    with pytest.raises(FileNotFoundError):
        watcher.start()
    watcher.stop()
    tolerant = NativeWatcher([str(tmp_path / "gone"), str(tmp_path)], Inbox())
    tolerant.start(tolerant=True)  # the last resort: skip what cannot be watched
    assert tolerant.partial
    tolerant.stop()


def test_native_watcher_failure_is_reported_not_raised() -> None:
    class Broken:
        def watch(self, *_a: object) -> object:
            raise RuntimeError("inotify queue overflow")

        def close(self) -> None:
            return None

    inbox = Inbox()
    watcher = NativeWatcher(["/x"], inbox, factory=lambda *_a: Broken())
    watcher.start()
    inbox.wait(5)
    assert inbox.drain().errors == ["RuntimeError"]
    watcher.stop()


def test_native_watcher_idle_uses_little_cpu(tmp_path: Path) -> None:
    dirs = []
    for i in range(200):
        d = tmp_path / f"d{i}"
        d.mkdir()
        dirs.append(str(d))
    watcher = NativeWatcher(dirs, Inbox())
    watcher.start()
    try:
        time.sleep(0.2)
        cpu = os.times()
        time.sleep(1.5)
        after = os.times()
        used = (after.user - cpu.user) + (after.system - cpu.system)
        assert used < 0.05 * 1.5, f"idle watcher used {used:.3f}s CPU in 1.5s"
    finally:
        watcher.stop()


# -- schedule ---------------------------------------------------------------------------------
def test_coalescer_debounce_is_a_window_from_the_first_change() -> None:
    c = Coalescer(debounce=0.5, min_interval=2.0)
    assert c.ready_at() is None and not c.ready(100)
    c.note(10.0)
    c.note(10.4)  # a burst: same window, no postponement
    assert c.ready_at() == 10.5
    assert not c.ready(10.49) and c.ready(10.5)
    c.started()
    c.finished(11.0)
    c.note(11.1)
    assert c.ready_at() == 13.0  # the minimum interval since the last scan ended wins
    c.started()
    c.finished(13.2)
    c.note(20.0)
    assert c.ready_at() == 20.5  # long after: only the debounce applies
    c.note(19.0)  # an earlier arrival (drained late) moves the window back
    assert c.ready_at() == 19.5


def test_WATCH_2_linked_opencode_data_directory_is_never_watched(tmp_path: Path) -> None:
    from telltale.discovery import DiscoveryOptions, discover

    home = tmp_path / "home"
    elsewhere = tmp_path / "elsewhere" / "opencode"
    elsewhere.mkdir(parents=True)
    (home / ".local" / "share").mkdir(parents=True)
    (home / ".local" / "share" / "opencode").symlink_to(elsewhere, target_is_directory=True)
    (home / ".claude" / "projects").mkdir(parents=True)
    result = discover(DiscoveryOptions(root=".", env={"HOME": str(home)}, platform="linux"))
    plan = plan_watches(result.store_roots)
    assert str(home / ".claude" / "projects") in plan.directories
    assert str(home / ".local" / "share" / "opencode") not in plan.directories
    assert not any(d.startswith(str(elsewhere)) for d in plan.directories)
    assert any(i.reason == "symlink_component" for i in result.errors)
