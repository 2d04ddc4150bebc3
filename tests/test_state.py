"""State store: write-ahead windows make JSONL output exactly-once across crashes."""

from __future__ import annotations

import os
from pathlib import Path

from telltale.sinks.jsonl import JsonlSink
from telltale.state import CursorUpdate, PendingWindow, StateStore, source_key


def _pending(sink: JsonlSink, lines: list[bytes], cursor: bytes) -> PendingWindow:
    dev, ino, size = sink.identity()
    payload = sum(len(x) + 1 for x in lines)
    key = source_key("claude.projects", "/s.jsonl")
    return PendingWindow(
        log_path=sink.path, log_device=dev, log_inode=ino, start_size=size, end_size=size + payload,
        cursors=[CursorUpdate(key, "claude.projects", "/s.jsonl", cursor)], windows={"c:s": b"w"},
    )


def test_state_file_is_private(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path / "st" / "state.sqlite"))
    assert os.stat(store.path).st_mode & 0o777 == 0o600
    store.close()


def test_commit_installs_cursor_and_window(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path / "state.sqlite"))
    sink = JsonlSink(str(tmp_path / "e.jsonl"))
    p = _pending(sink, [b"{}"], b"c1")
    store.begin_window(p)
    sink.write([b"{}"])
    store.commit_window(p)
    assert store.cursor("claude.projects", "/s.jsonl") == b"c1"
    assert store.detect_windows(["c:s"]) == {"c:s": b"w"}
    assert store.pending() is None


def test_recover_completed_write_installs_cursor(tmp_path: Path) -> None:
    """Killed after the events were written, before the cursor commit: keep both."""
    store = StateStore(str(tmp_path / "state.sqlite"))
    sink = JsonlSink(str(tmp_path / "e.jsonl"))
    p = _pending(sink, [b'{"a":1}', b'{"b":2}'], b"c2")
    store.begin_window(p)
    sink.write([b'{"a":1}', b'{"b":2}'])
    store.close()  # crash here
    store = StateStore(str(tmp_path / "state.sqlite"))
    assert store.recover() == "committed"
    assert store.cursor("claude.projects", "/s.jsonl") == b"c2"
    assert (tmp_path / "e.jsonl").read_bytes() == b'{"a":1}\n{"b":2}\n'


def test_recover_torn_write_truncates_and_keeps_old_cursor(tmp_path: Path) -> None:
    """Killed in the middle of the write: cut the partial events, cursor unchanged."""
    store = StateStore(str(tmp_path / "state.sqlite"))
    sink = JsonlSink(str(tmp_path / "e.jsonl"))
    sink.write([b'{"old":1}'])
    p = _pending(sink, [b'{"a":1}', b'{"b":2}'], b"c3")
    store.begin_window(p)
    with open(sink.path, "ab") as fh:
        fh.write(b'{"a":1}\n{"b"')
    store.close()
    store = StateStore(str(tmp_path / "state.sqlite"))
    assert store.recover() == "rolled_back"
    assert store.cursor("claude.projects", "/s.jsonl") is None
    assert (tmp_path / "e.jsonl").read_bytes() == b'{"old":1}\n'


def test_recover_with_nothing_written(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path / "state.sqlite"))
    sink = JsonlSink(str(tmp_path / "e.jsonl"))
    store.begin_window(_pending(sink, [b"{}"], b"c4"))
    assert store.recover() == "rolled_back"
    assert store.cursor("claude.projects", "/s.jsonl") is None
    assert store.recover() is None
