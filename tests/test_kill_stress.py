"""Exactly once under any kill (issue 15, item 2): the crash harness of
``bench/kill_stress.py`` on a small multi-agent home, in the suite.

The measured run (hundreds of kills) is ``python bench/kill_stress.py``; its figures are in
docs/performance.md. ``TELLTALE_KILLS`` raises the number of random kills here.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest


@pytest.fixture(scope="module")
def harness(ks: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("kills")
    home = work / "home"
    ks.build_home(home, claude_mb=0.6, codex_mib=1, seed=11)
    (work / "outputs.yaml").write_text(ks.OUTPUTS, encoding="utf-8")
    h = ks.Harness(home, work, window_bytes=48 << 10, seed=int(os.environ.get("TELLTALE_KILL_SEED", "11")))
    h.reference()
    return h


def test_the_inventory_is_written_once_when_the_scan_dies_after_writing_it(ks: Any, harness: Any) -> None:
    """The cause of the duplicated inventory: its digest was recorded after the window that
    wrote its events, so a scan killed between the write and the commit left the events
    in the log and no digest; recovery committed the window's cursors, and the next scan
    emitted the 12 agent events and the summary again with the same ids. The digest now
    travels with the window's intent and recovery installs it."""
    out = harness.work / "inventory"
    windows = harness.hits["written"]
    assert harness._run(out, fault=f"written:{windows}") == -9  # after the last window's fsync
    harness._run(out)
    ids, _ = ks.record_ids(out / "e.jsonl")
    assert ids == harness.reference_ids
    assert "inventory_summary" in ks._kinds(out / "e.jsonl", Counter(ids))


def test_every_fault_point_in_one_series_loses_and_duplicates_nothing(ks: Any, harness: Any) -> None:
    figures = ks.Figures()
    points = ["source:3", "batch:4", "begin:2", "write:2", "recover:1", "fsync:1", "written:1", "recover:1",
              "commit:2", "enqueue:1", "committed:1", "inventory:1"]
    harness.fixed_series(points, figures)
    assert set(figures.by_point) >= {"source", "batch", "begin", "write", "fsync", "written", "commit", "enqueue",
                                     "inventory", "recover"}
    assert (figures.lost, figures.duplicated, figures.rollup_mismatch) == (0, 0, 0), figures.failures


@pytest.mark.slow
def test_forty_random_kills_lose_and_duplicate_nothing(ks: Any, harness: Any) -> None:
    figures = ks.Figures()
    kills = int(os.environ.get("TELLTALE_KILLS", "40"))
    while figures.kills < kills:
        harness.series(min(8, kills - figures.kills), figures)
    assert figures.kills >= kills
    assert len(figures.by_point) >= 5  # timer kills and several fault points
    assert (figures.lost, figures.duplicated, figures.rollup_mismatch) == (0, 0, 0), figures.failures


def test_with_two_jobs_every_fault_point_and_dead_workers_lose_and_duplicate_nothing(
    ks: Any, harness: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``scan --jobs 2`` (issue 24): the same home read by two worker processes gives the
    same record events as one job; killed at every fault point of the writer, and with its
    workers killing themselves (``worker``), it still loses and duplicates nothing, and a
    killed scan leaves no worker running."""
    work = tmp_path_factory.mktemp("kills-jobs")
    (work / "outputs.yaml").write_text(ks.OUTPUTS, encoding="utf-8")
    jobs = ks.Harness(harness.home, work, window_bytes=48 << 10, seed=12, jobs=2)
    jobs.reference()
    assert (jobs.reference_ids, jobs.reference_rollups) == (harness.reference_ids, harness.reference_rollups)
    figures = ks.Figures()
    points = ["source:3", "batch:4", "worker:2", "begin:2", "write:2", "recover:1", "fsync:1", "worker:5",
              "written:1", "commit:2", "enqueue:1", "committed:1", "inventory:1"]
    jobs.fixed_series(points, figures)
    assert figures.kills >= 10 and figures.completed_early >= 2  # the workers' deaths do not kill the scan
    assert (figures.lost, figures.duplicated, figures.rollup_mismatch, figures.strays) == (0, 0, 0, 0), (
        figures.failures)
