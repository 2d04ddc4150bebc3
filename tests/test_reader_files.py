"""Bounded whole-file reads shared by the whole-document sources and their sidecars."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from telltale.errors import SourceError
from telltale.readers.files import read_document, read_small
from telltale.sources.cline import wire as cline_wire
from telltale.sources.cline.adapter import _read_sidecar

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


def test_read_small_reads_a_file_within_its_bound(tmp_path: Path) -> None:
    f = tmp_path / "a.json"
    f.write_bytes(b"x" * 10)
    assert read_small(str(f), 10) == b"x" * 10
    assert read_small(str(f), 9) is None


def test_read_small_refuses_missing_directory_and_link(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "target.json").write_bytes(b"{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "target.json")
    assert read_small(str(tmp_path / "missing.json"), 10) is None
    assert read_small(str(tmp_path / "dir.json"), 10) is None
    assert read_small(str(tmp_path / "link.json"), 10) is None


@needs_fifo
def test_a_fifo_in_place_of_a_sidecar_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "history_item.json"
    os.mkfifo(fifo)
    assert read_small(str(fifo), 1 << 20) is None
    assert _read_sidecar(str(fifo), cline_wire.history_item) is None


def test_a_directory_in_place_of_a_sidecar_means_unknown_not_a_failure(tmp_path: Path) -> None:
    (tmp_path / "task_metadata.json").mkdir()
    assert _read_sidecar(str(tmp_path / "task_metadata.json"), cline_wire.task_metadata) is None


def test_read_document_reasons(tmp_path: Path) -> None:
    f = tmp_path / "doc.json"
    f.write_bytes(b"[1, 2]")
    data, st = read_document(str(f), 6)
    assert data == b"[1, 2]" and st.st_size == 6
    with pytest.raises(SourceError) as over:
        read_document(str(f), 5)
    assert over.value.reason == "over_budget"
    with pytest.raises(SourceError) as gone:
        read_document(str(tmp_path / "gone.json"), 10)
    assert gone.value.reason == "vanished"
    (tmp_path / "d.json").mkdir()
    with pytest.raises(SourceError) as directory:
        read_document(str(tmp_path / "d.json"), 10)
    assert directory.value.reason == "not_regular_file"


@needs_fifo
def test_read_document_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "ui_messages.json"
    os.mkfifo(fifo)
    with pytest.raises(SourceError) as err:
        read_document(str(fifo), 10)
    assert err.value.reason == "not_regular_file"
