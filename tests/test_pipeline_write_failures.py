"""Failures of the event log while windows are written on the writer thread: the scan ends,
the torn window's intent stays for ``recover``, and the next scan neither loses nor
duplicates an event. Also: the last window's commit is settled before the health alerts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import write_claude_session
from telltale import pipeline
from telltale.discovery import DiscoveryOptions, discover
from telltale.errors import OutputError
from telltale.model import Family, Provenance, make_observation
from telltale.pipeline import Scanner, ScanOptions
from telltale.sinks import jsonl as sink_module
from telltale.sources.base import Batch
from telltale.sources.spec import Source
from telltale.state import StateStore


class _TwoBatchAdapter:
    """One batch per source, two for ``C`` (its first batch fills a window mid-source)."""

    kind = "claude.projects"

    def acquire(self, source: Source, cursor: bytes | None, ctx: Any) -> Iterator[Batch]:
        start = int(cursor or b"0")
        for b in range(2 if source.path.endswith("C") else 1):
            if b < start:
                continue
            observations = [
                make_observation(
                    adapter="claude.projects", source_identity=source.path, coordinate=f"c{b * 10 + i}",
                    family=Family.MESSAGE, client="claude", sequence=b * 10 + i, session_id=Path(source.path).name,
                    role="user", text="y" * 400, provenance=Provenance(source_kind="claude.projects", path=source.path),
                )
                for i in range(5)
            ]
            yield Batch(observations=observations, quarantined=[], cursor=str(b + 1).encode(), records_read=5)


def _source(root: Path, name: str) -> Source:
    path = root / name
    path.write_text("x")
    return Source(client="claude", kind="claude.projects", path=str(path), root_type="home",
                  store_root=str(root), found_by="home")


def _activity_lines(log: Path) -> tuple[list[str], int]:
    ids, corrupt = [], 0
    for line in log.read_bytes().split(b"\n")[:-1]:
        try:
            doc = json.loads(line)
        except ValueError:
            corrupt += 1
            continue
        if doc["event"]["dataset"] == "telltale.activity":
            ids.append(doc["event"]["id"])
    return ids, corrupt


def test_a_torn_window_write_ends_the_scan_and_the_next_scan_recovers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "adapter_for", lambda kind: _TwoBatchAdapter())
    real_write = sink_module.JsonlSink.write
    calls = {"n": 0}

    def torn_then_fine(self: sink_module.JsonlSink, lines: list[bytes]) -> int:
        calls["n"] += 1
        if calls["n"] == 1:  # half the window lands, ending mid-line, then the disk is full
            data = b"".join(line + b"\n" for line in lines)
            with open(self.path, "ab") as fh:
                fh.write(data[: len(data) // 2 + 7])
            raise OutputError("cannot write event log: No space left on device (simulated)")
        return real_write(self, lines)

    monkeypatch.setattr(sink_module.JsonlSink, "write", torn_then_fine)
    sources = [_source(tmp_path, "A"), _source(tmp_path, "B"), _source(tmp_path, "C")]
    out = tmp_path / "out"
    options = ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"), window_bytes=6000)

    scanner = Scanner(options)
    try:
        # A and B share a window (flushed between sources, written while C is read); its
        # failure surfaces when C's first batch fills the next window: not C's error.
        with pytest.raises(OutputError):
            scanner.scan(sources)
    finally:
        scanner.close()
    state = StateStore(options.state_path)
    try:
        assert state.pending() is not None  # the torn window's intent is left to recover
    finally:
        state.close()

    monkeypatch.setattr(sink_module.JsonlSink, "write", real_write)
    scanner = Scanner(options)
    try:
        result = scanner.scan(sources)
    finally:
        scanner.close()
    assert result.recovered == "rolled_back"
    ids, corrupt = _activity_lines(out / "e.jsonl")
    assert corrupt == 0
    assert len(ids) == len(set(ids)) == 20  # 5 + 5 + 10 observations, each exactly once


def test_outbox_capacity_alert_sees_the_last_window_commit(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    write_claude_session(home, "-a", "aaaa", 3)
    write_claude_session(home, "-b", "bbbb", 3)
    sources = sorted(discover(DiscoveryOptions(root=str(home), env={})).sources, key=lambda s: s.path)
    options = ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"), window_bytes=1,
                          remote_sinks=("elastic",), outbox_capacity=5)
    scanner = Scanner(options)
    try:
        scanner.scan(sources)
    finally:
        scanner.close()
    assert scanner.outbox_full
    alerts = [line for line in (out / "e.jsonl").read_text().splitlines() if '"outbox_capacity_reached"' in line]
    assert len(alerts) == 1
