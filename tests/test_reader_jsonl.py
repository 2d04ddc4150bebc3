"""Incremental JSONL reader: offsets, partial lines, replacement, oversized lines."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.readers.jsonl import JsonlReader, decode_cursor, encode_cursor


def read_all(path: Path, raw_cursor: bytes | None, **kw: object) -> tuple[list[bytes | None], bytes, JsonlReader]:
    prior = decode_cursor(raw_cursor)
    with JsonlReader(str(path), prior, **kw) as reader:  # type: ignore[arg-type]
        lines = list(reader.lines())
        end = lines[-1].offset + lines[-1].length + 1 if lines else reader.start_offset
        number = lines[-1].number if lines else reader.start_line
        cursor = encode_cursor(reader.cursor(end, number))
    return [line.data for line in lines], cursor, reader


def test_reads_complete_lines_and_leaves_partial_tail(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    data, cursor, reader = read_all(path, None)
    assert data == [b'{"a":1}', b'{"b":2}']
    assert reader.partial_tail
    with path.open("ab") as fh:
        fh.write(b"3}\n")
    data2, _, reader2 = read_all(path, cursor)
    assert data2 == [b'{"c":3}']
    assert reader2.restarted is None
    assert reader2.start_line == 2


def test_no_change_reads_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a":1}\n')
    _, cursor, _ = read_all(path, None)
    data, cursor2, reader = read_all(path, cursor)
    assert data == []
    assert reader.restarted is None
    assert decode_cursor(cursor2) == decode_cursor(cursor)


def test_truncated_file_is_read_from_start(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n')
    _, cursor, _ = read_all(path, None)
    path.write_bytes(b'{"z":1}\n')
    data, _, reader = read_all(path, cursor)
    assert data == [b'{"z":1}']
    assert reader.restarted in {"truncated", "head_changed", "identity_changed"}


def test_replaced_file_with_same_size_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a":1}\n')
    _, cursor, _ = read_all(path, None)
    replacement = tmp_path / "b.jsonl"
    replacement.write_bytes(b'{"q":1}\n{"r":2}\n')
    os.replace(replacement, path)
    data, _, reader = read_all(path, cursor)
    assert data == [b'{"q":1}', b'{"r":2}']
    assert reader.restarted is not None


def test_rewritten_middle_is_detected_by_tail_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    body = b"".join(b'{"n":%04d}\n' % i for i in range(200))
    path.write_bytes(body)
    _, cursor, _ = read_all(path, None)
    changed = bytearray(body)
    changed[-5] = ord("9")
    with path.open("r+b") as fh:
        fh.write(bytes(changed) + b'{"n":9999}\n')
    data, _, reader = read_all(path, cursor)
    assert reader.restarted == "tail_changed"
    assert len(data) == 201


def test_oversized_line_is_skipped_by_coordinate(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a":1}\n' + b"x" * 5000 + b'\n{"b":2}\n')
    prior = None
    with JsonlReader(str(path), prior, max_line_bytes=1000) as reader:
        lines = list(reader.lines())
    assert [line.data for line in lines] == [b'{"a":1}', None, b'{"b":2}']
    assert lines[1].offset == 8 and lines[1].length == 5000 and lines[1].number == 2
    assert lines[2].offset == 8 + 5001


def test_oversized_line_spanning_read_chunks(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    big = b"y" * (3 << 20)
    path.write_bytes(big + b'\n{"b":2}\n')
    with JsonlReader(str(path), None, max_line_bytes=1 << 20) as reader:
        lines = list(reader.lines())
    assert lines[0].data is None and lines[0].length == len(big)
    assert lines[1].data == b'{"b":2}' and lines[1].offset == len(big) + 1


def test_symlinked_file_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    target.write_bytes(b"{}\n")
    link = tmp_path / "l.jsonl"
    link.symlink_to(target)
    import pytest

    from telltale.errors import SourceError

    with pytest.raises(SourceError), JsonlReader(str(link), None):
        pass


def test_vanished_file_is_a_bounded_source_error(tmp_path: Path) -> None:
    import pytest

    from telltale.errors import SourceError

    with pytest.raises(SourceError) as info, JsonlReader(str(tmp_path / "gone.jsonl"), None):
        pass
    assert info.value.reason == "vanished"


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(st.text(alphabet="ab\u00e9{}\":", max_size=30), min_size=1, max_size=25),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=6),
)
def test_property_any_append_split_yields_same_lines(records: list[str], cuts: list[int]) -> None:
    """Appending a file in arbitrary byte chunks across reads gives the same lines as one read."""
    import tempfile

    payload = b"".join(r.encode() + b"\n" for r in records)
    positions = sorted({min(c, len(payload)) for c in cuts} | {len(payload)})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_bytes(b"")
        cursor: bytes | None = None
        got: list[bytes | None] = []
        written = 0
        for pos in positions:
            with path.open("ab") as fh:
                fh.write(payload[written:pos])
            written = pos
            data, cursor, _ = read_all(path, cursor)
            got.extend(data)
    assert got == [r.encode() for r in records]


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=30),
    tail=st.integers(min_value=0, max_value=30),
    chunk=st.integers(min_value=1, max_value=17),
    max_line=st.integers(min_value=5, max_value=45),
)
def test_property_lines_across_read_chunks_match_a_plain_split(
    lengths: list[int], tail: int, chunk: int, max_line: int
) -> None:
    """With tiny read chunks, every line (spanning chunks, oversized or not) keeps its bytes,
    number and offset, and an unterminated tail is held back: the same as splitting the file."""
    import tempfile

    import telltale.readers.jsonl as reader_module

    lines = [bytes([97 + i % 26]) * n for i, n in enumerate(lengths)]
    payload = b"".join(line + b"\n" for line in lines) + b"z" * tail
    expected = []
    offset = 0
    for number, line in enumerate(lines, 1):
        expected.append((number, offset, line if len(line) <= max_line else None, len(line)))
        offset += len(line) + 1
    saved = reader_module.READ_CHUNK
    reader_module.READ_CHUNK = chunk
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "c.jsonl"
            path.write_bytes(payload)
            with JsonlReader(str(path), None, max_line_bytes=max_line) as reader:
                got = [(x.number, x.offset, x.data, x.length) for x in reader.lines()]
                assert reader.partial_tail is (tail > 0)
    finally:
        reader_module.READ_CHUNK = saved
    assert got == expected
