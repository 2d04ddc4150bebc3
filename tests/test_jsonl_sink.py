"""Local JSONL sink: whole lines, fsync, size rotation that never splits a line."""

from __future__ import annotations

from pathlib import Path

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
