"""The end-of-scan summary (issue 18, "Summary"): one screen at 80 columns with the stores
per client, where the events went, detections by severity with the top ones, located
skipped records, delivery per output with the fix, and what to run next; everything a
host put there redacted."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from rich.console import Console

from telltale.cli.summary import RunInfo, is_quiet, next_hints, quiet_line, render, shown
from telltale.model import Quarantine
from telltale.pipeline import DetectionBrief, DetectionTally, ScanResult, SourceReport


def _token() -> str:
    rng = random.Random()
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def _result(home: Path, secret: str) -> ScanResult:
    transcript = str(home / ".claude" / "projects" / "-work-api" / "s1.jsonl")
    reports = [
        SourceReport(kind="claude.projects", client="claude", path=transcript, status="partial", records_read=40,
                     observations=30, detections=3, quarantined=2, bytes_read=12_000,
                     quarantine_reasons={"malformed_json": 2},
                     skipped=[Quarantine(source_kind="claude.projects", path=transcript, reason="malformed_json",
                                         line=14),
                              Quarantine(source_kind="claude.projects", path=transcript, reason="malformed_json",
                                         line=20)]),
        *[SourceReport(kind="claude.projects", client="claude", path=f"/x/{i}.jsonl", status="unchanged")
          for i in range(5)],
        SourceReport(kind="codex.sessions", client="codex", path=str(home / ".codex" / "a.jsonl"), status="error",
                     error="unreadable"),
        SourceReport(kind="qwen.projects", client="qwen", path="/q/1.jsonl", status="ok", observations=4),
    ]
    tally = DetectionTally()
    tally.add(DetectionBrief("medium", 40, "Pipe to shell", "r.pipe", "claude", "5f0c1a2e-aaaa", "/work/api",
                             "curl -s https://get.example.dev | sh"))
    tally.add(DetectionBrief("high", 80, "Cloud credentials read", "r.creds", "claude", "5f0c1a2e-aaaa",
                             str(home / "work" / "api"), f"cat ~/.aws/credentials # {secret}"))
    tally.add(DetectionBrief("low", 10, "Package install", "r.pkg", "qwen", None, None, "pip install x"))
    return ScanResult(scan_id="s", sources=reports, emitted_count=40, quarantined_count=2, scanner_error_count=1,
                      detection_count=3, duration_s=2.5, discovery_errors=[], detections=tally)


def _delivery() -> dict[str, object]:
    return {
        "delivered": 12, "queued": 40, "failing_outputs": ["splunk"], "waited_s": 2.1, "skipped": False,
        "outputs": {
            "splunk": {"sent": 0, "queued": 40, "state": "blocked", "reason": "hec:invalid_token",
                       "fix": "fix its credentials (token), then: telltale delivery retry-blocked --sink splunk"},
            "otel": {"sent": 12, "queued": 0, "state": "ok"},
        },
    }


def _text(result: ScanResult, info: RunInfo, width: int = 80) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
    console.print(render(result, info, width))
    return console.export_text()


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_the_summary_fits_one_screen_at_80_columns_and_says_everything(home: Path) -> None:
    secret = _token()
    info = RunInfo(log_path=str(home / ".local" / "state" / "telltale" / "events.jsonl"), delivery=_delivery(),
                   delivery_seconds=30)
    text = _text(_result(home, secret), info)
    lines = text.rstrip("\n").splitlines()
    assert len(lines) <= 30 and max(map(len, lines)) <= 80, text
    flat = " ".join(text.split())
    assert "telltale scan: 8 stores, 3 read, 5 unchanged, 2.50s" in flat
    assert "claude 6 (1 partial) · codex 1 (1 failed) · qwen 1 (1 read)" in flat
    assert "40 written to ~/.local/state/telltale/events.jsonl" in flat  # where, home as ~
    assert "34 activity, 3 detections, 3 health, rollups, inventory" in flat
    assert "3: 1 high, 1 medium, 1 low" in flat
    assert flat.index("Cloud credentials read") < flat.index("Pipe to shell")  # most severe first
    assert "claude · ~/work/api · cat ~/.aws/credentials" in flat
    assert "2 records in 1 store (2 malformed_json)" in flat
    assert "~/.claude/projects/-work-api/s1.jsonl:14 malformed_json" in flat
    assert "1 store failed this run" in flat and "~/.codex/a.jsonl unreadable" in flat
    assert "splunk BLOCKED (hec:invalid_token): 0 sent, 40 queued" in flat
    assert "telltale delivery retry-blocked --sink splunk" in flat
    assert "otel ok: 12 sent, 0 queued" in flat
    assert "waited 2.10s (--delivery-seconds 30)" in flat
    assert "telltale detections" in flat and "telltale show 5f0c1a2e" in flat
    assert secret not in text and "[REDACTED:" in text  # a secret in a command never reaches the terminal


def test_at_80_columns_three_detections_are_listed_at_160_five(home: Path) -> None:
    result = _result(home, _token())
    for i in range(4):
        result.detections.add(DetectionBrief("high", 70 - i, f"Extra rule {i}", f"x{i}", "claude", None, None, None))
    result.detection_count = 7
    narrow = _text(result, RunInfo(log_path="/l"), 80)
    wide = _text(result, RunInfo(log_path="/l"), 160)
    assert "… and 4 more: telltale detections" in narrow
    assert "… and 2 more: telltale detections" in wide
    assert all(len(line) <= 160 for line in wide.splitlines())


def test_content_none_shows_no_command_path_or_project(home: Path) -> None:
    text = _text(_result(home, _token()), RunInfo(log_path="/l", content="none"))
    assert "Cloud credentials read" in text
    assert "credentials #" not in text and "~/work/api" not in text and "curl" not in text


def test_a_path_with_a_secret_or_terminal_escapes_is_shown_redacted_and_inert(home: Path) -> None:
    secret = _token()
    path = str(home / f"proj-{secret}" / "\x1b]0;pwned\x07s.jsonl")
    value = shown(path)
    assert secret not in value and "\x1b" not in value and "\x07" not in value
    assert value.startswith("~/proj-[REDACTED:")


def test_a_quiet_run_is_one_line_and_a_loop_stamps_it(home: Path) -> None:
    quiet = ScanResult(scan_id="s", sources=[SourceReport(kind="k", client="claude", path="/p", status="unchanged")]
                       * 3, emitted_count=1, quarantined_count=0, scanner_error_count=0, detection_count=0,
                       duration_s=0.21, discovery_errors=[])
    assert is_quiet(quiet, RunInfo(log_path="/l"))
    assert quiet_line(quiet, RunInfo(log_path="/l")) == (
        "telltale scan: nothing new since the last scan: 3 stores unchanged, 0.21s")
    import datetime as dt

    stamped = quiet_line(quiet, RunInfo(log_path="/l", at=dt.datetime(2026, 3, 1, 9, 5, 7)))
    assert stamped == "2026-03-01 09:05:07  no changes: 3 stores unchanged, 0.21s"
    blocked = RunInfo(log_path="/l", delivery=_delivery())
    assert not is_quiet(quiet, blocked)  # an output that needs attention is never "quiet"


def test_next_hints_follow_what_was_found(home: Path) -> None:
    result = _result(home, _token())
    hints = next_hints(result, RunInfo(log_path="/l", delivery=_delivery()))
    assert hints == ["telltale detections", "telltale show 5f0c1a2e", "telltale status", "telltale delivery status"]
    assert next_hints(result, RunInfo(log_path="-")) == []  # events went to stdout: nothing to read back


def test_verbose_lists_every_store_read_with_its_path(home: Path) -> None:
    text = _text(_result(home, _token()), RunInfo(log_path="/l", verbose=True), 160)
    assert "stores read" in text and "~/.claude/projects/-work-api/s1.jsonl" in text and "partial" in text
    assert "/x/0.jsonl" not in text  # unchanged stores are not listed


def test_the_tally_keeps_the_most_severe_detections_first_seen_first() -> None:
    tally = DetectionTally()
    for i in range(30):
        tally.add(DetectionBrief("low", 5, f"low {i}", "l", "c"))
    tally.add(DetectionBrief("critical", 90, "crit", "c", "c"))
    tally.add(DetectionBrief("high", 70, "high a", "h", "c"))
    tally.add(DetectionBrief("high", 70, "high b", "h", "c"))
    assert [b.title for b in tally.top[:4]] == ["crit", "high a", "high b", "low 0"]
    assert len(tally.top) == 20 and tally.by_severity == {"low": 30, "critical": 1, "high": 2}


def test_progress_shows_stores_megabytes_and_the_store_being_read(home: Path) -> None:
    from types import SimpleNamespace

    from telltale.cli.scan import _Progress

    files = []
    for i, n in enumerate((400_000, 100_000, 500_000)):
        path = home / ".claude" / "projects" / "-work-api" / f"session-{i}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * n)
        files.append(SimpleNamespace(path=str(path), client="claude" if i < 2 else "codex"))
    progress = _Progress(files)

    def screen() -> str:
        console = Console(width=80, record=True, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
        for renderable in progress._bar.get_renderables():
            console.print(renderable)
        return " ".join(console.export_text().split())

    progress.tick("start", 0)
    progress.tick("bytes", 200_000)
    first = screen()
    assert "0/3 stores" in first and "0.2/1.0 MB" in first
    assert "reading claude: ~/.claude/projects/-work-api/session-0.jsonl" in first
    progress.tick("source", 1)
    progress.tick("start", 2)  # store 1 was unchanged: skipped, and covered all the same
    second = screen()
    assert "2/3 stores" in second and "0.5/1.0 MB" in second and "reading codex:" in second
