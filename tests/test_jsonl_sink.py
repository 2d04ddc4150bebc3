"""Local JSONL sink: whole lines, fsync, size rotation that never splits a line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from telltale.sinks.jsonl import JsonlSink


def test_appends_whole_lines(tmp_path: Path) -> None:
    sink = JsonlSink(str(tmp_path / "out" / "e.jsonl"))
    sink.write([b'{"a":1}', b'{"b":2}'])
    sink.write([b'{"c":3}'])
    assert (tmp_path / "out" / "e.jsonl").read_bytes() == b'{"a":1}\n{"b":2}\n{"c":3}\n'
    assert (tmp_path / "out" / "e.jsonl").stat().st_mode & 0o777 == 0o600


def test_rotation_keeps_n_files_and_never_splits(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    sink = JsonlSink(str(path), max_size=100, keep=2)
    for i in range(12):
        line = b'{"i":%d,"pad":"%s"}' % (i, b"x" * 30)
        sink.rotate_if_needed(len(line) + 1)
        sink.write([line])
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["e.jsonl", "e.jsonl.1", "e.jsonl.2"]
    seen = []
    for name in ("e.jsonl.2", "e.jsonl.1", "e.jsonl"):
        data = (tmp_path / name).read_bytes()
        assert data.endswith(b"\n")
        assert len(data) <= 100
        seen.extend(data.splitlines())
    numbers = [int(line.split(b",")[0].split(b":")[1]) for line in seen]
    assert numbers == sorted(numbers) and numbers[-1] == 11


def _many_lines() -> list[bytes]:
    return [b'{"n":%d,"pad":"%s"}' % (i, b"p" * (i % 97)) for i in range(5_000)]


def test_a_window_larger_than_one_writev_batch_is_written_whole(tmp_path: Path) -> None:
    lines = _many_lines()
    sink = JsonlSink(str(tmp_path / "e.jsonl"))
    assert sink.write(lines) == sum(len(x) + 1 for x in lines)
    assert (tmp_path / "e.jsonl").read_bytes() == b"".join(x + b"\n" for x in lines)


def test_short_writev_is_finished_without_loss_or_repeat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.writev

    def short(fd: int, buffers: list[bytes]) -> int:
        # The kernel may write less than asked (signals, quotas): take only part of a batch.
        data = b"".join(buffers)
        return real(fd, [data[: max(1, len(data) // 3)]])

    monkeypatch.setattr(os, "writev", short)
    lines = _many_lines()
    sink = JsonlSink(str(tmp_path / "e.jsonl"))
    sink.write(lines)
    assert (tmp_path / "e.jsonl").read_bytes() == b"".join(x + b"\n" for x in lines)


def test_platforms_without_writev_join_the_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "writev")
    lines = _many_lines()[:50]
    sink = JsonlSink(str(tmp_path / "e.jsonl"))
    assert sink.write(lines) == sum(len(x) + 1 for x in lines)
    assert (tmp_path / "e.jsonl").read_bytes() == b"".join(x + b"\n" for x in lines)
