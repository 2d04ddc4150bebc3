"""Helpers shared by the tests of the agents built from documented shapes (Zed, Amp,
Factory Droid, Kiro) and of the stores reported ``unsupported``."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scan_helpers import read_events, run_cli
from telltale.model import Observation
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.registry import adapter_for, spec_for
from telltale.sources.spec import Source


def tree_digest(root: Path, skip: Iterable[str] = ("out", ".state-out")) -> str:
    """Names, bytes, mtimes and modes of every file below ``root`` (the store untouched)."""
    digest = hashlib.sha256()
    skipped = set(skip)
    for path in sorted(p for p in root.rglob("*") if not skipped & set(p.relative_to(root).parts)):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            st = path.stat()
            digest.update(path.read_bytes() + f"{st.st_mtime_ns}:{st.st_mode}".encode())
    return digest.hexdigest()


def source(kind: str, path: Path) -> Source:
    spec = spec_for(kind)
    return Source(client=spec.client, kind=kind, path=str(path), root_type=spec.root_type,
                  store_root=str(path.parent), found_by="test")


def acquire(kind: str, path: Path, cursor: bytes | None = None,
            ctx: AcquireContext | None = None) -> tuple[list[Batch], bytes | None]:
    """Every batch of one acquisition and the last cursor it returned."""
    batches = list(adapter_for(kind).acquire(source(kind, path), cursor, ctx or AcquireContext()))
    last = cursor
    for batch in batches:
        if batch.cursor is not None:
            last = batch.cursor
    return batches, last


def observations(batches: list[Batch]) -> list[Observation]:
    return [o for b in batches for o in b.observations]


def scan(home: Path, out: Path, *clients: str) -> list[dict[str, Any]]:
    """One ``scan --once`` through the real CLI; the events it appended."""
    log = out / "e.jsonl"
    before = len(read_events(log))
    args = ["scan", "--once", "--root", str(home), "--log-path", str(log), "--state-path", str(out / "s.sqlite")]
    for client in clients:
        args += ["--client", client]
    run_cli(args, home)
    return read_events(log)[before:]


def activity(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"]["dataset"] in ("telltale.activity", "telltale.detection")]


def actions(events: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in events:
        if e["event"]["dataset"] == "telltale.activity":
            counts[e["event"]["action"]] = counts.get(e["event"]["action"], 0) + 1
    return counts
