"""Small changed sources read ahead of the one being written (``telltale.readahead``,
issue 24): the same batches and errors, source by source, in the same order, whatever
is read ahead; and through the pipeline, the same events as one source at a time."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.detect.engine import DetectionEngine
from telltale.discovery import DiscoveryOptions, discover
from telltale.pipeline import Scanner, ScanOptions
from telltale.readahead import ReadAhead
from telltale.sources import registry


class _Source:
    """A fake source: its batches (strings stand in for Prepared), then maybe an error."""

    def __init__(self, index: int, batches: int, size: int, error: bool) -> None:
        self.index = index
        self.batches = [f"{index}.{n}" for n in range(batches)]
        self.size = size
        self.error = ValueError(f"source {index}") if error else None


class _Reader:
    def __init__(self, sources: list[_Source]) -> None:
        self.sources = {s.index: s for s in sources}
        #: (event, index): "start" when a source's reading begins, "batch" per batch produced.
        self.log: list[tuple[str, int]] = []

    def read(self, index: int) -> Iterator[Any]:
        source = self.sources[index]
        self.log.append(("start", index))
        for batch in source.batches:
            self.log.append(("batch", index))
            yield batch
        if source.error is not None:
            raise source.error


def _drain(ahead: ReadAhead, index: int) -> tuple[list[Any], BaseException | None]:
    got: list[Any] = []
    try:
        for batch in ahead.batches(index):
            got.append(batch)
    except ValueError as exc:
        return got, exc
    return got, None


def _ahead(reader: _Reader, order: list[int], **kw: Any) -> ReadAhead:
    sizes = {i: s.size for i, s in reader.sources.items()}
    return ReadAhead(reader.read, order, sizes, lambda: False, **kw)


def test_small_sources_are_read_in_a_group_and_handed_out_one_by_one() -> None:
    reader = _Reader([_Source(i, 2, 100, False) for i in range(6)])
    ahead = _ahead(reader, list(range(6)), source_bytes=1000, ahead_bytes=300)
    assert _drain(ahead, 0) == (["0.0", "0.1"], None)
    # 0, 1 and 2 were read (300 bytes), nothing after them
    assert [i for event, i in reader.log if event == "start"] == [0, 1, 2]
    assert ahead.pending
    assert _drain(ahead, 1) == (["1.0", "1.1"], None)
    assert _drain(ahead, 2) == (["2.0", "2.1"], None)
    assert not ahead.pending
    assert _drain(ahead, 3) == (["3.0", "3.1"], None)
    assert [i for event, i in reader.log if event == "start"] == [0, 1, 2, 3, 4, 5]


def test_a_large_source_is_read_as_it_is_written_and_ends_a_group() -> None:
    reader = _Reader([_Source(0, 1, 10, False), _Source(1, 3, 5000, False), _Source(2, 1, 10, False)])
    ahead = _ahead(reader, [0, 1, 2], source_bytes=1000, ahead_bytes=10_000)
    assert _drain(ahead, 0) == (["0.0"], None)
    assert [i for event, i in reader.log if event == "start"] == [0]  # not the large one
    stream = ahead.batches(1)
    assert next(stream) == "1.0"
    assert reader.log[-1] == ("batch", 1) and reader.log.count(("batch", 1)) == 1  # streamed, not read whole
    assert list(stream) == ["1.1", "1.2"]
    assert _drain(ahead, 2) == (["2.0"], None)


def test_an_error_is_raised_after_the_batches_before_it_and_the_next_source_still_reads() -> None:
    reader = _Reader([_Source(0, 1, 10, False), _Source(1, 2, 10, True), _Source(2, 1, 10, False)])
    ahead = _ahead(reader, [0, 1, 2], source_bytes=1000, ahead_bytes=10_000)
    assert _drain(ahead, 0) == (["0.0"], None)
    got, error = _drain(ahead, 1)
    assert got == ["1.0", "1.1"] and error is reader.sources[1].error
    assert _drain(ahead, 2) == (["2.0"], None)


def test_a_stopped_scan_reads_nothing_more_ahead() -> None:
    reader = _Reader([_Source(i, 1, 10, False) for i in range(4)])
    stop = [False]

    def stopped() -> bool:
        return stop[0]

    ahead = ReadAhead(reader.read, [0, 1, 2, 3], {i: 10 for i in range(4)}, stopped, source_bytes=100,
                      ahead_bytes=15)
    assert _drain(ahead, 0) == (["0.0"], None)  # 0 alone: 1 would pass the budget
    stop[0] = True
    assert _drain(ahead, 1) == (["1.0"], None)  # asked for, so read; nothing after it
    assert [i for event, i in reader.log if event == "start"] == [0, 1]


@settings(max_examples=200, deadline=None)
@given(
    specs=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3000), st.booleans()), min_size=1, max_size=12),
    source_bytes=st.integers(0, 2000),
    ahead_bytes=st.integers(0, 5000),
    unknown=st.sets(st.integers(0, 11)),
)
def test_property_each_source_gives_what_reading_it_alone_gives(
    specs: list[tuple[int, int, bool]], source_bytes: int, ahead_bytes: int, unknown: set[int]
) -> None:
    """Whatever the sizes and budgets (an unknown size included), each source, asked for in
    order, yields its own batches and then its own error, and every source is read once."""
    sources = [_Source(i, n, size, error) for i, (n, size, error) in enumerate(specs)]
    reader = _Reader(sources)
    sizes = {s.index: s.size for s in sources if s.index not in unknown}
    ahead = ReadAhead(reader.read, [s.index for s in sources], sizes, lambda: False,
                      source_bytes=source_bytes, ahead_bytes=ahead_bytes)
    for source in sources:
        assert _drain(ahead, source.index) == (source.batches, source.error)
    assert not ahead.pending
    assert [i for event, i in reader.log if event == "start"] == [s.index for s in sources]


# ------------------------------------------------------------------ through the pipeline


def _scan(home: Path, out: Path, ahead_bytes: int) -> tuple[Any, Any]:
    result = discover(DiscoveryOptions(root=str(home), env={}))
    scanner = Scanner(ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"),
                                  window_bytes=48 << 10, read_ahead_bytes=ahead_bytes, allow_fixtures=True),
                      detector=_engine())
    try:
        summary = scanner.scan(result.sources)
    finally:
        scanner.close()
    return summary, [(r.path, r.status, r.error, r.observations, r.quarantined) for r in summary.sources]


@functools.cache
def _engine() -> DetectionEngine:
    return DetectionEngine.load()


@pytest.fixture(scope="module")
def home(ks: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("ahead") / "home"
    ks.build_home(home, claude_mb=0.4, codex_mib=1, seed=7)
    return home


def test_the_pipeline_emits_the_same_events_with_and_without_reading_ahead(
    ks: Any, home: Path, tmp_path: Path
) -> None:
    one, one_reports = _scan(home, tmp_path / "one", 0)
    grouped, grouped_reports = _scan(home, tmp_path / "grouped", 64 << 10)
    assert one.scanner_error_count == 0 and len(one_reports) > 10
    assert grouped_reports == one_reports
    assert (grouped.emitted_count, grouped.detection_count) == (one.emitted_count, one.detection_count)
    ids, rollups = ks.record_ids(tmp_path / "one" / "e.jsonl")
    assert len(ids) > 500 and rollups
    assert ks.record_ids(tmp_path / "grouped" / "e.jsonl") == (ids, rollups)


def test_a_source_that_fails_while_read_ahead_fails_alone(
    ks: Any, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An adapter that raises on one Claude file after yielding its first batch: with reading ahead,
    that source is one scanner error where it stands, and every other source's events are
    those of the scan that read them one at a time."""
    claude = registry.adapter_for("claude.projects")
    broken = sorted((home / ".claude" / "projects").rglob("*.jsonl"))[2]
    original = type(claude).acquire

    def acquire(self: Any, source: Any, cursor: Any, ctx: Any) -> Iterator[Any]:
        for batch in original(self, source, cursor, ctx):
            yield batch
            if source.path == str(broken):
                raise RuntimeError("adapter bug")

    monkeypatch.setattr(type(claude), "acquire", acquire)
    one, one_reports = _scan(home, tmp_path / "one", 0)
    grouped, grouped_reports = _scan(home, tmp_path / "grouped", 64 << 10)
    assert grouped_reports == one_reports
    assert grouped.scanner_error_count == one.scanner_error_count == 1
    failed = [r for r in grouped_reports if r[1] == "error"]
    assert [(r[0], r[2]) for r in failed] == [(str(broken), "internal_error")]
    assert ks.record_ids(tmp_path / "grouped" / "e.jsonl") == ks.record_ids(tmp_path / "one" / "e.jsonl")
