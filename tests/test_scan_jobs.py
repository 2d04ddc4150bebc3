"""``scan --jobs N`` (issue 24): worker processes read, normalise and encode the changed
sources; the scanning process stays the one writer. Through the real CLI, on a home with
several agents' stores (the crash harness's: generated Claude Code and Codex trees, the
Qwen, OpenClaw, Copilot and OpenCode fixtures, hostile lines).

``--jobs-min-bytes 0`` makes the workers read even this small home (by default they start
only when the changed sources hold 8 MiB or more).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import read_events, run_cli

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def home(ks: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("jobs") / "home"
    ks.build_home(home, claude_mb=0.6, codex_mib=1, seed=5)
    return home


def _scan(home: Path, out: Path, *extra: str, env: dict[str, str] | None = None, check: bool = True) -> Any:
    return run_cli(["scan", "--once", "--root", str(home), "--json", "--log-path", str(out / "e.jsonl"),
                    "--state-path", str(out / "s.sqlite"), "--window-bytes", "48K", *extra], home,
                   extra_env=env, check=check)


def _summary(proc: Any) -> dict[str, Any]:
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reference(ks: Any, home: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """Record-event ids (and the last rollup per session) of a scan with one job."""
    out = tmp_path_factory.mktemp("one-job")
    summary = _summary(_scan(home, out, "--jobs", "1", "--jobs-min-bytes", "0"))
    assert "worker_processes" not in summary
    ids, rollups = ks.record_ids(out / "e.jsonl")
    assert len(ids) > 1000 and rollups
    return ids, rollups


def test_two_jobs_emit_the_same_events_as_one(ks: Any, home: Path, reference: Any, tmp_path: Path) -> None:
    first = _summary(_scan(home, tmp_path, "--jobs", "2", "--jobs-min-bytes", "0"))
    assert first["worker_processes"] == 2
    assert first["scanner_error_count"] == 0
    assert ks.record_ids(tmp_path / "e.jsonl") == reference
    again = _summary(_scan(home, tmp_path, "--jobs", "2", "--jobs-min-bytes", "0"))
    assert again["sources_scanned"] == 0 and "worker_processes" not in again  # nothing changed: no worker
    assert ks.record_ids(tmp_path / "e.jsonl") == reference


def test_workers_start_only_for_enough_unread_bytes(home: Path, tmp_path: Path) -> None:
    summary = _summary(_scan(home, tmp_path, "--jobs", "2"))  # ~4 MB: below the 8 MiB default
    assert summary["sources_scanned"] > 2 and "worker_processes" not in summary


def test_a_dead_worker_fails_its_source_once_and_the_next_scan_reads_it(
    ks: Any, home: Path, reference: Any, tmp_path: Path
) -> None:
    """Each worker kills itself at its second batch (a fault point of workers only): the
    source it was reading is one scanner error, the others are read (by the scanning
    process once no worker is left), and nothing is lost or written twice."""
    proc = _scan(home, tmp_path, "--jobs", "2", "--jobs-min-bytes", "0", env={"TELLTALE_FAULT": "worker:2"})
    assert "Traceback" not in proc.stderr
    summary = _summary(proc)
    failed = [s for s in summary["sources"] if s["status"] == "error"]
    assert failed and {s["error"] for s in failed} == {"worker_crashed"}
    assert summary["scanner_error_count"] == len(failed) <= 2
    errors = [e for e in read_events(tmp_path / "e.jsonl") if e["event"]["action"] == "scanner_error"]
    assert len(errors) == len(failed)
    assert summary["sources_scanned"] > len(failed)
    _scan(home, tmp_path, "--jobs", "2", "--jobs-min-bytes", "0")
    assert ks.record_ids(tmp_path / "e.jsonl") == reference


@pytest.mark.parametrize(("jobs", "action", "code", "name"),
                         [("2", "int", 130, "SIGINT"), ("2", "term", 143, "SIGTERM"), ("1", "int", 130, "SIGINT")])
def test_an_interrupt_commits_what_was_written_and_the_next_scan_goes_on(
    ks: Any, home: Path, reference: Any, tmp_path: Path, jobs: str, action: str, code: int, name: str
) -> None:
    """Stopped after its sixth batch, in the middle of a source: what was read is committed
    without the source's fingerprint, so the next scan reads the rest of that source even
    though the file has not changed since."""
    proc = _scan(home, tmp_path, "--jobs", jobs, "--jobs-min-bytes", "0",
                 env={"TELLTALE_FAULT": f"batch:6:{action}"}, check=False)
    assert proc.returncode == code, proc.stderr
    assert f"interrupted ({name})" in proc.stderr and "Traceback" not in proc.stderr
    summary = _summary(proc)
    assert summary["interrupted"]["signal"] == name
    assert summary.get("worker_processes", 1) == int(jobs)
    written, _ = ks.record_ids(tmp_path / "e.jsonl")
    assert 0 < sum(written.values()) < sum(reference[0].values())
    assert not written - reference[0]  # nothing that should not be there
    _scan(home, tmp_path, "--jobs", "2", "--jobs-min-bytes", "0")
    assert ks.record_ids(tmp_path / "e.jsonl") == reference


@pytest.mark.parametrize("value", ["0", "-1", "x", "1000"])
def test_jobs_must_be_a_number_of_processes(home: Path, tmp_path: Path, value: str) -> None:
    proc = _scan(home, tmp_path, f"--jobs={value}", check=False)
    assert proc.returncode == 2 and "--jobs" in proc.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_source_interrupted_in_its_middle_is_read_on_although_unchanged(tmp_path: Path, jobs: str) -> None:
    """A scan stopped after the first batch of a long transcript commits that batch with its
    cursor, but not the file's fingerprint: the next scan reads the rest even though the
    file did not change (with the fingerprint, it was skipped as unchanged until the agent
    wrote to it again)."""
    home = tmp_path / "home"
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_claude_tree.py"), str(home / ".claude"), "--size-mb",
                    "3", "--files", "2", "--seed", "3"], check=True, capture_output=True)
    whole = tmp_path / "whole"
    every = _summary(_scan(home, whole, "--jobs", "1"))["sources_scanned"]
    out = tmp_path / "cut"
    first = _scan(home, out, "--jobs", jobs, "--jobs-min-bytes", "0", env={"TELLTALE_FAULT": "batch:1:int"},
                  check=False)
    assert first.returncode == 130
    assert [s["status"] for s in _summary(first)["sources"]] == ["partial"]
    second = _summary(_scan(home, out, "--jobs", jobs, "--jobs-min-bytes", "0"))
    assert second["sources_scanned"] == every  # the interrupted one included
    assert sorted(e["event"]["id"] for e in read_events(out / "e.jsonl") if e["event"]["kind"] != "state"
                  and e["event"]["action"] not in ("scan_summary", "scan_interrupted")) == sorted(
        e["event"]["id"] for e in read_events(whole / "e.jsonl") if e["event"]["kind"] != "state"
        and e["event"]["action"] != "scan_summary")


@pytest.mark.parametrize(("cores", "jobs"), [(1, 1), (2, 1), (3, 2), (9, 8), (64, 8)])
def test_the_default_leaves_the_writer_a_core_and_stops_at_eight(
    monkeypatch: pytest.MonkeyPatch, cores: int, jobs: int
) -> None:
    """Two workers beside the writer were slower than one process on two cores (see
    docs/performance.md); each worker is a process of its own (~30 MiB)."""
    from telltale.cli import common

    monkeypatch.setattr(common, "cores", lambda: cores)
    assert common.default_jobs() == jobs
