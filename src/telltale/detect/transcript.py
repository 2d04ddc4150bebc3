"""Run the effective pack over one session file, outside any scan (``rules test --transcript``).

The file goes through the same adapter, normalisation stage, engine and per-session
folding as in ``telltale scan``, read-only and from its start, with fresh session windows
and no state: what a rule author sees here is what a scan of that file would alert on.
The adapter is chosen from the file's place and name (``--kind`` settles an ambiguous one).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from telltale.detect.ledger import AlertBatch
from telltale.detect.model import Detection, SessionWindow
from telltale.errors import UsageError
from telltale.normalize.stage import normalize_batch
from telltale.sources.base import AcquireContext, HistoryMode
from telltale.sources.registry import REGISTRY, adapter_for, spec_for
from telltale.sources.spec import RootType, Source, SourceSpec


@dataclass
class TranscriptRun:
    kind: str
    records: int = 0
    observations: int = 0
    quarantined: int = 0
    detections: list[Detection] = field(default_factory=list)
    rollups: list[dict[str, Any]] = field(default_factory=list)


def candidate_kinds(path: str) -> list[str]:
    """Source kinds whose file patterns match ``path``, those whose store directory is in
    the path first (``.claude/projects/x/s.jsonl`` is Claude's before any other ``*.jsonl``)."""
    name = os.path.basename(path)
    parent = os.path.basename(os.path.dirname(path))
    real = os.path.realpath(path).replace(os.sep, "/")
    placed: list[str] = []
    named: list[str] = []
    for spec in REGISTRY:
        if spec.unsupported is not None or not spec.adapter or not spec.matches(name, parent):
            continue
        dirs = (spec.relative_path, *spec.also_relative_paths, spec.fixture_relative_path)
        if any(d and f"/{d.strip('/')}/" in real for d in dirs):
            placed.append(spec.kind)
        else:
            named.append(spec.kind)
    return placed + named


def _source(path: str, spec: SourceSpec) -> Source:
    st = os.stat(path)
    return Source(
        client=spec.client, kind=spec.kind, path=os.path.abspath(path), root_type=RootType.HOME,
        store_root=os.path.dirname(os.path.abspath(path)), found_by="explicit_root", device=st.st_dev,
        inode=st.st_ino,
    )


def run_transcript(engine: Any, path: str, kind: str | None = None) -> TranscriptRun:
    """Alerts (folded per session and rule, as a scan window folds them) and the session
    risk rollups of one file; raises ``UsageError`` when no adapter reads it."""
    if not os.path.isfile(path):
        raise UsageError(f"{path}: not a file")
    kinds = [kind] if kind else candidate_kinds(path)
    if not kinds:
        raise UsageError(f"{path}: no supported agent format matches this file (name it with --kind)")
    best: TranscriptRun | None = None
    failures: list[str] = []
    for candidate in kinds:
        try:
            spec = spec_for(candidate)
        except KeyError:
            raise UsageError(f"unknown kind {candidate!r}") from None
        try:
            run = _run(engine, path, spec)
        except Exception as exc:  # this adapter cannot read it: say so, try the next kind
            failures.append(f"{candidate}: {type(exc).__name__}")
            continue
        if run.observations and (kind or not run.quarantined):
            return run
        if best is None or run.observations > best.observations:
            best = run
    if best is None:
        raise UsageError(f"{path}: no adapter could read it ({'; '.join(failures)})")
    return best


def _run(engine: Any, path: str, spec: SourceSpec) -> TranscriptRun:
    run = TranscriptRun(kind=spec.kind)
    ctx = AcquireContext(history=HistoryMode.ALL, dry_run=True, now=time.time())
    windows: dict[str, SessionWindow] = {}
    batch = AlertBatch()
    for got in adapter_for(spec.kind).acquire(_source(path, spec), None, ctx):
        run.records += got.records_read
        run.quarantined += len(got.quarantined)
        observations = normalize_batch(got.observations) if got.observations else []
        run.observations += len(observations)
        for det in engine.evaluate(observations, windows):
            batch.add(det)
    run.detections = batch.drain()
    run.rollups = engine.rollups(windows, time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()))
    return run
