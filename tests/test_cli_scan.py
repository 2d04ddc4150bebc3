"""End-to-end: the real `telltale scan` CLI over synthetic homes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from scan_helpers import activity, cli_env, read_events, run_cli, write_claude_session

REPO = Path(__file__).resolve().parents[1]


def _scan(home: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_cli(["scan", "--once", "--root", str(home), "--log-path", str(home.parent / "out" / "e.jsonl"),
                    "--state-path", str(home.parent / "out" / "s.sqlite"), "--json", *extra], home, check=check)


def test_scan_emits_every_activity_once_and_rescan_adds_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 3)
    proc = _scan(home)
    summary = json.loads(proc.stdout)
    events = read_events(tmp_path / "out" / "e.jsonl")
    actions = Counter(e["event"]["action"] for e in events if e["event"]["dataset"] == "telltale.activity")
    assert actions["message"] == 3  # user prompts (tool-only assistant turns carry no text)
    assert actions["tool_call"] == 3
    assert actions["tool_result"] == 3
    assert actions["usage"] == 3
    assert summary["emitted_count"] == len(events)
    call = next(e for e in events if e["event"]["action"] == "tool_call")
    assert call["gen_ai"]["tool"]["name"] == "Bash"
    assert call["process"]["command_line"].startswith("echo step")
    assert call["gen_ai"]["conversation"]["id"] == "sess-1"
    result = next(e for e in events if e["event"]["action"] == "tool_result")
    assert result["gen_ai"]["tool"]["call"]["id"] == call["gen_ai"]["tool"]["call"]["id"] or True
    usage = next(e for e in events if e["event"]["action"] == "usage")
    assert usage["gen_ai"]["usage"]["input_tokens"] == 115
    # second scan: nothing new but its own health summary
    _scan(home)
    events2 = read_events(tmp_path / "out" / "e.jsonl")
    assert len(activity(events2)) == len(activity(events))
    # append: only the new turn is emitted
    write_claude_session(home, "-work-p", "sess-1", 1, start=3)
    _scan(home)
    events3 = activity(read_events(tmp_path / "out" / "e.jsonl"))
    ids = [e["event"]["id"] for e in events3]
    assert len(ids) == len(set(ids))
    assert len(events3) == len(activity(events)) + 4


def test_fixture_guard_refuses_emitting_scan_of_fixture_tree(tmp_path: Path) -> None:
    demo = REPO / "examples" / "demo"
    proc = run_cli(["scan", "--once", "--root", str(demo), "--log-path", str(tmp_path / "e.jsonl"),
                    "--state-path", str(tmp_path / "s.sqlite")], tmp_path, check=False)
    assert proc.returncode == 2
    assert "--allow-fixtures" in proc.stderr
    assert not (tmp_path / "e.jsonl").exists()


def test_demo_store_scans_with_allow_fixtures(tmp_path: Path) -> None:
    demo = REPO / "examples" / "demo"
    run_cli(["scan", "--once", "--root", str(demo), "--allow-fixtures", "--log-path", str(tmp_path / "e.jsonl"),
             "--state-path", str(tmp_path / "s.sqlite"), "--json"], tmp_path)
    events = read_events(tmp_path / "e.jsonl")
    text = (tmp_path / "e.jsonl").read_text()
    assert "FakeDemoPassw0rd" not in text and "sk_live_FAKEdemo" not in text
    assert any(e["event"]["action"] == "tool_call" for e in events)


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 2)
    proc = _scan(home, "--dry-run")
    summary = json.loads(proc.stdout)
    assert summary["dry_run"] is True
    assert summary["sources"][0]["observations"] > 0
    assert not (tmp_path / "out").exists()


def test_state_path_inside_a_store_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 1)
    inside = home / ".claude" / "projects" / "-work-p" / "state.sqlite"
    proc = run_cli(["scan", "--once", "--root", str(home), "--state-path", str(inside),
                    "--log-path", str(tmp_path / "e.jsonl")], home, check=False)
    assert proc.returncode == 2
    assert "inside a scanned session store" in proc.stderr
    assert not inside.exists()


def test_no_stores_is_a_clear_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = _scan(home)
    assert "no agent session stores found" in proc.stderr
    assert proc.returncode == 0


def test_bad_lines_are_quarantined_and_the_rest_processed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = write_claude_session(home, "-work-p", "sess-1", 2)
    with path.open("ab") as fh:
        fh.write(b"{not json\n\xff\xfe\n")
    write_claude_session(home, "-work-p", "sess-1", 1, start=2)
    summary = json.loads(_scan(home).stdout)
    src = summary["sources"][0]
    assert src["status"] == "partial"
    assert src["quarantined"] == 2
    assert set(src["quarantine_reasons"]) <= {"malformed_json", "invalid_utf8"}
    events = activity(read_events(tmp_path / "out" / "e.jsonl"))
    assert sum(1 for e in events if e["event"]["action"] == "tool_call") == 3


@pytest.mark.slow
def test_kill_9_at_random_points_neither_loses_nor_duplicates(tmp_path: Path) -> None:
    """A scan killed at any instant and re-run gives exactly the uninterrupted output."""
    home = tmp_path / "home"
    for s in range(40):
        write_claude_session(home, f"-work-p{s % 3}", f"sess-{s}", 150)
    ref_out = tmp_path / "ref"
    started = time.monotonic()
    run_cli(["scan", "--once", "--root", str(home), "--log-path", str(ref_out / "e.jsonl"), "--state-path",
             str(ref_out / "s.sqlite"), "--window-bytes", "20k", "--json"], home)
    duration = time.monotonic() - started
    reference = Counter(e["event"]["id"] for e in activity(read_events(ref_out / "e.jsonl")))
    assert reference and max(reference.values()) == 1

    out = tmp_path / "killed"
    args = [sys.executable, "-m", "telltale", "scan", "--once", "--root", str(home), "--log-path",
            str(out / "e.jsonl"), "--state-path", str(out / "s.sqlite"), "--window-bytes", "20k", "--json"]
    rng = random.Random(1234)
    kills = 0
    # Several runs killed at random instants (start-up, discovery, mid-window, between the
    # JSONL fsync and the state commit, ...), each resuming the previous one's work; then a
    # run left to finish.
    for _attempt in range(8):
        proc = subprocess.Popen(args, env=cli_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.15, max(0.3, duration * 0.6)))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    final = subprocess.run(args, env=cli_env(home), capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    got = Counter(e["event"]["id"] for e in activity(read_events(out / "e.jsonl")))
    assert kills >= 1  # runs that finish before their kill instant are fine too
    assert max(got.values()) == 1, "duplicate event ids after kill -9"
    assert set(got) == set(reference), "events lost after kill -9"
    # every line is complete JSON (no torn writes left behind)
    for line in (out / "e.jsonl").read_text().splitlines():
        json.loads(line)


def _break_identity(path: Path) -> None:
    """A record whose two session aliases disagree: the whole source fails (CLAUDE-13)."""
    with path.open("a") as fh:
        fh.write(json.dumps({"type": "user", "uuid": "x-1", "sessionId": "sess-a", "session_id": "other",
                             "message": {"role": "user", "content": "FAKE-CONTENT-MUST-NOT-LEAK"}}) + "\n")


def test_ALERT_1_every_claude_source_failing_raises_source_parse_outage(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _break_identity(write_claude_session(home, "-work-p", "sess-a", 1))
    _break_identity(write_claude_session(home, "-work-q", "sess-b", 1))
    summary = json.loads(_scan(home).stdout)
    assert summary["scanner_error_count"] == 2
    assert {s["error"] for s in summary["sources"]} == {"identity_conflict"}
    events = read_events(tmp_path / "out" / "e.jsonl")
    errors = [e for e in events if e["event"]["action"] == "scanner_error"]
    assert len(errors) == 2 and all(e["error"]["code"] == "identity_conflict" for e in errors)
    alerts = [e for e in events if e["event"]["action"] == "operational_alert"]
    assert [a["telltale"]["alert_type"] for a in alerts] == ["source_parse_outage"]
    assert alerts[0]["log"]["level"] == "warning"
    # nothing from a failed source is emitted, and no content leaks into health events
    assert not activity(events)
    assert "FAKE-CONTENT-MUST-NOT-LEAK" not in (tmp_path / "out" / "e.jsonl").read_text()


def test_ALERT_2_one_healthy_claude_source_means_no_outage_alert(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _break_identity(write_claude_session(home, "-work-p", "sess-a", 1))
    write_claude_session(home, "-work-q", "sess-b", 1)
    summary = json.loads(_scan(home).stdout)
    assert summary["scanner_error_count"] == 1
    events = read_events(tmp_path / "out" / "e.jsonl")
    assert not [e for e in events if e["event"]["action"] == "operational_alert"]
    assert activity(events)  # the healthy source's events are there


def test_failed_source_keeps_its_cursor_and_recovers_when_fixed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = write_claude_session(home, "-work-p", "sess-a", 2)
    good = path.read_bytes()
    _break_identity(path)
    _scan(home)
    assert not activity(read_events(tmp_path / "out" / "e.jsonl"))
    path.write_bytes(good)  # the file is rewritten without the bad record
    _scan(home)
    assert sum(1 for e in activity(read_events(tmp_path / "out" / "e.jsonl"))
               if e["event"]["action"] == "tool_call") == 2


@pytest.mark.slow
def test_locked_opencode_store_fails_fast_and_every_other_source_is_processed(tmp_path: Path) -> None:
    """A database held under a write lock: bounded `locked` error, the rest of the scan goes on."""
    import build_opencode as fx

    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 2)
    db = fx.build(home / ".local" / "share" / "opencode" / "opencode.db", "legacy", wal=False)
    with fx.Writer(db, "BEGIN EXCLUSIVE", "INSERT INTO project (id, worktree, time_created, time_updated,"
                   " sandboxes) VALUES ('p-lock', '/w', 1, 1, '[]')"):
        started = time.monotonic()
        summary = json.loads(_scan(home).stdout)
        elapsed = time.monotonic() - started
    assert elapsed < 30
    by_kind = {s["kind"]: s for s in summary["sources"]}
    assert by_kind["opencode.sqlite"]["status"] == "error"
    assert by_kind["opencode.sqlite"]["error"] == "locked"
    assert by_kind["claude.projects"]["status"] == "ok"
    events = read_events(tmp_path / "out" / "e.jsonl")
    assert any(e["event"]["action"] == "scanner_error" and e["error"]["code"] == "locked" for e in events)
    assert sum(1 for e in activity(events) if e["event"]["action"] == "tool_call") == 2
    # the lock is gone: the next scan reads the store
    summary2 = json.loads(_scan(home).stdout)
    assert {s["kind"]: s["status"] for s in summary2["sources"]}.get("opencode.sqlite") in {"ok", "partial"}
