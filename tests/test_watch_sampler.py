"""Metadata sampler: rate limit, round robin, baselines before acquisition (WATCH-9..18)."""

from __future__ import annotations

import builtins
import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.watch.sampler import (
    MISSING,
    REJECTED,
    MetadataSampler,
    directory_item,
    file_item,
    signature,
    sqlite_item,
)


@dataclass(frozen=True)
class FakeStat:
    st_mode: int
    st_dev: int = 1
    st_ino: int = 1
    st_size: int = 0
    st_mtime_ns: int = 0


class FakeFS:
    """Paths to metadata; records every lookup so tests can see what was sampled."""

    def __init__(self) -> None:
        self.entries: dict[str, FakeStat] = {"/": FakeStat(stat.S_IFDIR | 0o755)}
        self.calls: list[str] = []
        self._ino = 100

    def mkdir(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/" + "/".join(parts[:i])
            self.entries.setdefault(p, FakeStat(stat.S_IFDIR | 0o755, st_ino=self._next()))

    def _next(self) -> int:
        self._ino += 1
        return self._ino

    def write(self, path: str, size: int, mtime_ns: int = 1, *, new_inode: bool = False) -> None:
        self.mkdir(os.path.dirname(path))
        prior = self.entries.get(path)
        ino = prior.st_ino if prior is not None and not new_inode else self._next()
        self.entries[path] = FakeStat(stat.S_IFREG | 0o644, st_ino=ino, st_size=size, st_mtime_ns=mtime_ns)

    def lstat(self, path: str) -> os.stat_result:
        self.calls.append(path)
        try:
            return self.entries[path]  # type: ignore[return-value]
        except KeyError:
            raise FileNotFoundError(path) from None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(fs: FakeFS, clock: Clock, rate: int = 64, tick: float = 0.25) -> MetadataSampler:
    return MetadataSampler(rate, tick=tick, clock=clock, lstat=fs.lstat, stat_=fs.lstat)


# -- rate limit and round robin (WATCH-10) ------------------------------------------------
def test_WATCH_10_at_most_64_pairs_in_any_second() -> None:
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock)
    for i in range(500):
        fs.write(f"/d/db{i:03}.sqlite", 10)
        sampler.add(sqlite_item(f"/d/db{i:03}.sqlite"))
    times: list[float] = []
    for step in range(400):  # 10 seconds, offered a turn every 25 ms (more often than the tick)
        clock.now = step * 0.025
        before = sampler.samples
        sampler.sample()
        times.extend([clock.now] * (sampler.samples - before))
    assert times, "nothing was sampled"
    window: deque[float] = deque()
    for t in times:
        window.append(t)
        while window[0] <= t - 1.0:
            window.popleft()
        assert len(window) <= 64
    assert len(times) >= 64 * 9  # and the budget is actually used (~64 per second)


def test_WATCH_10_round_robin_covers_every_pair_before_repeating() -> None:
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock, rate=8, tick=0.25)  # 2 per tick
    paths = [f"/d/db{i}.sqlite" for i in range(7)]
    for p in paths:
        fs.write(p, 1)
        sampler.add(sqlite_item(p))
    fs.calls.clear()
    for step in range(7):  # 14 samples: two full passes
        clock.now = 10 + step * 0.25
        sampler.sample()
    mains = [c for c in fs.calls if c.endswith(".sqlite")]
    assert mains == paths + paths
    wals = [c for c in fs.calls if c.endswith("-wal")]
    assert wals == [p + "-wal" for p in paths + paths]


def test_sampling_waits_for_its_tick_and_reports_nothing_when_unchanged() -> None:
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock)
    assert sampler.next_due() is None  # nothing indexed: the loop need not wake up for us
    fs.write("/d/a.db", 5)
    sampler.add(sqlite_item("/d/a.db"))
    assert sampler.sample() == []  # unchanged: no scan (WATCH-14)
    taken = sampler.samples
    clock.now = 0.1
    assert sampler.sample() == [] and sampler.samples == taken  # before the next tick: no stat at all
    next_due = sampler.next_due()
    assert next_due == pytest.approx(0.25)


def test_remove_and_retain_keep_the_rotation_consistent() -> None:
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock, rate=4, tick=0.25)  # 1 per tick
    for name in "abcd":
        fs.write(f"/d/{name}.db", 1)
        sampler.add(sqlite_item(f"/d/{name}.db"))
    clock.now = 1
    sampler.sample()  # a
    sampler.remove("/d/b.db")
    sampler.retain(["/d/a.db", "/d/c.db"])
    assert sampler.keys() == ["/d/a.db", "/d/c.db"]
    fs.calls.clear()
    for step in range(4):
        clock.now = 2 + step
        sampler.sample()
    assert [c for c in fs.calls if c.endswith(".db")] == ["/d/c.db", "/d/a.db", "/d/c.db", "/d/a.db"]


# -- what is compared (WATCH-12) ----------------------------------------------------------
@pytest.mark.parametrize(
    "mutate",
    [
        lambda fs: fs.write("/d/a.db", 10, 1),  # size
        lambda fs: fs.write("/d/a.db", 5, 2),  # nanosecond mtime only
        lambda fs: fs.write("/d/a.db", 5, 1, new_inode=True),  # identity (replaced, same size and mtime)
        lambda fs: fs.write("/d/a.db-wal", 4096, 1),  # the WAL appears
        lambda fs: fs.entries.pop("/d/a.db"),  # gone
    ],
)
def test_WATCH_12_identity_length_and_ns_mtime_changes_are_seen_once(mutate: object) -> None:
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock)
    fs.write("/d/a.db", 5, 1)
    sampler.add(sqlite_item("/d/a.db"))
    mutate(fs)  # type: ignore[operator]
    clock.now = 1
    assert sampler.sample() == ["/d/a.db"]
    clock.now = 2
    assert sampler.sample() == []  # the baseline moved: one change, one report


def test_WATCH_12_sampling_never_opens_or_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "opencode.db"
    db.write_bytes(b"x" * 100)
    sampler = MetadataSampler(64)
    sampler.add(sqlite_item(str(db)))
    (tmp_path / "opencode.db-wal").write_bytes(b"w" * 4096)  # a commit

    def no_open(*_a: object, **_k: object) -> None:
        raise AssertionError("sampling opened a file")

    monkeypatch.setattr(builtins, "open", no_open)
    monkeypatch.setattr(os, "open", no_open)
    monkeypatch.setattr(os, "scandir", no_open)
    monkeypatch.setattr(os, "listdir", no_open)
    sampler._next_at = 0  # the next turn is due now
    assert sampler.sample() == [str(db)]


# -- baselines before acquisition (WATCH-11) ----------------------------------------------
def test_WATCH_11_commit_during_scan_still_counts_as_a_change() -> None:
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock)
    fs.write("/d/a.db", 5, 1)
    sampler.add(sqlite_item("/d/a.db"))
    # A requested scan: the baseline is captured before acquisition ...
    sampler.baseline(["/d/a.db"])
    # ... the scan reads the database, and meanwhile the agent commits again.
    fs.write("/d/a.db-wal", 8192, 7)
    clock.now = 1
    assert sampler.sample() == ["/d/a.db"], "a commit during the scan must trigger another scan"


def test_WATCH_11_a_post_scan_baseline_would_hide_it() -> None:
    # The counterfactual that the rule forbids: baseline after acquisition loses the commit.
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock)
    fs.write("/d/a.db", 5, 1)
    sampler.add(sqlite_item("/d/a.db"))
    fs.write("/d/a.db-wal", 8192, 7)  # commit during the scan
    sampler.baseline(["/d/a.db"])  # too late
    clock.now = 1
    assert sampler.sample() == []


def test_add_captures_the_baseline_at_indexing_time() -> None:
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock)
    fs.write("/d/a.db", 5, 1)
    assert sampler.add(sqlite_item("/d/a.db")) is True
    fs.write("/d/a.db", 6, 2)
    assert sampler.add(sqlite_item("/d/a.db")) is False  # re-adding keeps the old baseline
    clock.now = 1
    assert sampler.sample() == ["/d/a.db"]


# -- what is sampled and what is rejected (WATCH-13/14/18) --------------------------------
def test_WATCH_14_no_shm_or_journal_and_no_listing() -> None:
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock)
    fs.write("/d/a.db", 5)
    fs.write("/d/a.db-shm", 32768)
    fs.write("/d/a.db-journal", 1)
    sampler.add(sqlite_item("/d/a.db"))
    for step in range(8):
        clock.now = step
        fs.write("/d/a.db-shm", 32768, mtime_ns=step + 10)  # readers churn the SHM
        assert sampler.sample() == []
    assert not any(c.endswith(("-shm", "-journal")) for c in fs.calls)


def test_WATCH_13_linked_component_and_non_regular_leaf_are_rejected(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "opencode.db").write_bytes(b"x")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert signature(sqlite_item(str(link / "opencode.db")), str(link / "opencode.db")) == REJECTED
    assert isinstance(signature(sqlite_item(str(real / "opencode.db")), str(real / "opencode.db")), tuple)
    (real / "dir.db").mkdir()
    assert signature(sqlite_item(str(real / "dir.db")), str(real / "dir.db")) == REJECTED
    os.mkfifo(real / "fifo.db")
    assert signature(sqlite_item(str(real / "fifo.db")), str(real / "fifo.db")) == REJECTED
    (real / "target.db").write_bytes(b"x")
    (real / "leaf.db").symlink_to(real / "target.db")
    assert signature(sqlite_item(str(real / "leaf.db")), str(real / "leaf.db")) == REJECTED
    assert signature(sqlite_item(str(real / "absent.db")), str(real / "absent.db")) == MISSING


def test_transcript_items_accept_a_linked_store_root_but_not_links_below_it(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "projects"
    (real / "-work-p").mkdir(parents=True)
    (real / "-work-p" / "s.jsonl").write_text("{}\n")
    root = tmp_path / "projects"
    root.symlink_to(real, target_is_directory=True)  # a dotfile manager's linked store root
    path = str(root / "-work-p" / "s.jsonl")
    assert isinstance(signature(file_item(path, str(root)), path), tuple)
    (real / "linked").symlink_to(real / "-work-p", target_is_directory=True)
    path = str(root / "linked" / "s.jsonl")
    assert signature(file_item(path, str(root)), path) == REJECTED
    assert isinstance(signature(directory_item(str(root), str(root)), str(root)), tuple)


def test_directory_item_sees_new_entries(tmp_path: Path) -> None:
    sampler = MetadataSampler(64)
    sampler.add(directory_item(str(tmp_path), str(tmp_path)))
    before = os.stat(tmp_path).st_mtime_ns
    (tmp_path / "new.jsonl").write_text("")
    if os.stat(tmp_path).st_mtime_ns == before:  # coarse-mtime file system: force a visible change
        os.utime(tmp_path, ns=(before + 1_000_000, before + 1_000_000))
    sampler._next_at = 0
    assert sampler.sample() == [str(tmp_path)]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=300),
    rate=st.integers(min_value=1, max_value=128),
    offsets=st.lists(st.floats(min_value=0.0, max_value=0.6), min_size=1, max_size=120),
)
def test_rate_property_any_schedule(n: int, rate: int, offsets: list[float]) -> None:
    fs, clock = FakeFS(), Clock()
    sampler = make(fs, clock, rate=rate)
    for i in range(n):
        fs.write(f"/d/{i}.db", 1)
        sampler.add(sqlite_item(f"/d/{i}.db"))
    stamps: list[float] = []
    for off in offsets:
        clock.now += off
        before = sampler.samples
        sampler.sample()
        stamps.extend([clock.now] * (sampler.samples - before))
    window: deque[float] = deque()
    for t in stamps:
        window.append(t)
        while window[0] <= t - 1.0:
            window.popleft()
        assert len(window) <= rate
