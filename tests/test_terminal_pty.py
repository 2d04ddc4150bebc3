"""What a person sees (issue 18): the real CLI under a pseudo-terminal (pexpect) at 80 and
160 columns, its output replayed through a terminal emulator (pyte) so that the tests read
the screen as it ends up, after progress bars and spinners have erased themselves."""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pyte
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from scan_helpers import REPO, cli_env, write_claude_session

ROWS = 300  # tall enough that nothing scrolls away: the test reads everything printed


def run_pty(
    args: list[str], home: Path, cols: int, *, env: dict[str, str] | None = None,
    during: Callable[[Any], None] | None = None, timeout: float = 180,
) -> tuple[list[str], int]:
    """Run ``telltale ARGS`` on a terminal COLS wide; the final screen's lines and the exit code."""
    record = io.StringIO()
    child = pexpect.spawn(
        sys.executable, ["-m", "telltale", *args], env={**cli_env(home, env), "TERM": "xterm-256color"},
        cwd=str(home), dimensions=(ROWS, cols), encoding="utf-8", codec_errors="replace", timeout=timeout,
    )
    child.logfile_read = record
    if during is not None:
        during(child)
    child.expect(pexpect.EOF)
    child.close()
    screen = pyte.Screen(cols, ROWS)
    pyte.Stream(screen).feed(record.getvalue())
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    code = child.exitstatus if child.exitstatus is not None else 128 + (child.signalstatus or 0)
    return lines, code


def _unwrap(lines: list[str], cols: int) -> list[str]:
    """Lines as printed: a line that filled the width continues on the next screen line."""
    out: list[str] = []
    joined = False
    for line in lines:
        if joined and out:
            out[-1] += line.lstrip()  # rich indents a folded line to its column
        else:
            out.append(line)
        joined = len(line) >= cols
    return out


def _flat(lines: list[str], cols: int = 80) -> str:
    return " ".join(" ".join(_unwrap(lines, cols)).split())


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The demo session (detections) with two malformed lines (skipped records) in a home."""
    h = tmp_path / "home"
    projects = h / ".claude" / "projects"
    shutil.copytree(REPO / "examples" / "demo" / "claude" / "projects", projects)
    (transcript,) = projects.rglob("*.jsonl")
    lines = transcript.read_text().splitlines(keepends=True)
    lines.insert(3, '{"type":"user","broken": \n')
    lines.insert(6, "not json at all\n")
    transcript.write_text("".join(lines))
    return h


def _outputs(home: Path, url: str) -> Path:
    path = home.parent / "outputs.yaml"
    path.write_text(f"outputs:\n  splunk:\n    type: splunk_hec\n    url: {url}\n    token_env: TT_TOKEN\n")
    return path


@pytest.fixture
def refusing(httpserver: HTTPServer) -> str:
    """A Splunk HEC collector that refuses the token."""
    httpserver.expect_request("/services/collector/event").respond_with_data(
        '{"text":"Invalid token","code":4}', status=403, content_type="application/json"
    )
    return str(httpserver.url_for("/"))


def _summary(lines: list[str]) -> list[str]:
    starts = [i for i, line in enumerate(lines) if line.startswith("telltale scan")]
    assert starts, "\n".join(lines)
    return lines[starts[-1]:]


@pytest.mark.parametrize("cols", [80, 160])
def test_detections_skipped_records_and_a_blocked_output_on_one_screen(
    home: Path, refusing: str, cols: int
) -> None:
    outputs = _outputs(home, refusing)
    args = ["scan", "--once", "--outputs", str(outputs), "--delivery-seconds", "5", "--fail-on-delivery"]
    lines, code = run_pty(args, home, cols, env={"TT_TOKEN": "FAKE-refused"})
    print("\n".join(lines))  # what a person saw (shown by pytest on failure)
    assert code == 3  # --fail-on-delivery: the output refused the token
    summary = _summary(lines)
    assert len(summary) <= (30 if cols == 80 else 24), "\n".join(summary)  # one screen
    assert all(len(line) <= cols for line in lines)
    flat = _flat(summary, cols)
    assert re.search(r"telltale scan: 1 store, 1 read, 0 unchanged, [\d.]+s", flat)
    assert "stores claude 1 (1 partial)" in flat
    assert "written to ~/.state-out/telltale/telltale-events.jsonl" in flat
    assert re.search(r"detections \d+: \d+ high, \d+ medium, \d+ low", flat)
    assert "Remote script piped into an interpreter" in flat or "Secret read, then network traffic" in flat
    assert "2 records in 1 store (2 malformed_json)" in flat
    assert "-home-dev-webapp/5f0c2a8e-demo-4c1d-9a7e-000000000001.jsonl:4 malformed_json" in flat
    assert "splunk BLOCKED (hec:invalid_token): 0 sent" in flat
    assert "then: telltale delivery retry-blocked --sink splunk" in flat
    assert re.search(r"waited [\d.]+s \(--delivery-seconds 5\)", flat)
    assert "next telltale detections · telltale show 5f0c2a8e" in flat
    assert "Traceback" not in "\n".join(lines) and "FAKE-refused" not in "\n".join(lines)
    if cols == 160:  # wide enough: the fix command is one line, not folded
        assert any(line.strip().endswith("then: telltale delivery retry-blocked --sink splunk") for line in summary)


def test_without_fail_on_delivery_a_blocked_output_exits_0_and_strict_makes_skips_3(
    home: Path, refusing: str
) -> None:
    outputs = _outputs(home, refusing)
    _, code = run_pty(["scan", "--once", "--outputs", str(outputs), "--delivery-seconds", "5"], home, 80,
                      env={"TT_TOKEN": "FAKE-refused"})
    assert code == 0  # the failure is in the summary and a health event
    write_claude_session(home, "-home-dev-webapp", "extra", 1)
    (home / ".claude" / "projects" / "-home-dev-webapp" / "extra.jsonl").open("a").write("{broken\n")
    lines, code = run_pty(["scan", "--once", "--strict"], home, 80)
    assert code == 3 and "skipped" in _flat(_summary(lines))


def test_a_second_run_with_nothing_new_is_one_line(home: Path) -> None:
    run_pty(["scan", "--once"], home, 80)
    lines, code = run_pty(["scan", "--once"], home, 80)
    assert code == 0
    assert lines == [lines[0]] and re.fullmatch(
        r"telltale scan: nothing new since the last scan: 1 store unchanged, [\d.]+s", lines[0]), lines


def test_a_periodic_scan_prints_one_timestamped_line_per_quiet_iteration(home: Path) -> None:
    lines, code = run_pty(["scan", "--interval-seconds", "0.3", "--iterations", "3"], home, 80)
    assert code == 0
    first = _summary(lines[: next(i for i, x in enumerate(lines) if "no changes" in x)])
    assert re.match(r"telltale scan \d\d:\d\d:\d\d: 1 store, 1 read", first[0])  # the first scan read it all
    quiet = [line for line in lines if "no changes" in line]
    assert len(quiet) == 2
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  no changes: 1 store unchanged, [\d.]+s", x)
               for x in quiet)


def test_ctrl_c_while_a_store_is_read_says_what_was_committed_and_how_to_continue(home: Path) -> None:
    for i in range(3):
        write_claude_session(home, "-work-more", f"more-{i}", 2)
    lines, code = run_pty(["scan", "--once"], home, 80, env={"TELLTALE_FAULT": "source:3:int"})
    assert code == 130
    flat = _flat(lines)
    assert re.search(r"telltale scan: 4 stores, 3 read, 0 unchanged, 1 not reached, [\d.]+s \(interrupted by SIGINT\)",
                     flat)
    assert re.search(r"interrupted \(SIGINT\): \d+ events written to ~/.state-out/telltale/telltale-events.jsonl "
                     r"and committed; 1 store of 4 not reached; run `telltale scan --once` to continue where it "
                     r"stopped", flat)
    again, code = run_pty(["scan", "--once"], home, 80)
    # It continued where it stopped: the store not reached, and the one the interrupt cut
    # after a batch (committed without its fingerprint, so its rest is read now).
    assert code == 0 and "4 stores, 2 read, 2 unchanged" in _flat(again), again


def test_delivery_wait_is_visible_and_ctrl_c_skips_it_leaving_events_queued(
    home: Path, httpserver: HTTPServer
) -> None:
    def busy(_request: Request) -> Response:
        return Response('{"text":"Server is busy","code":9}', status=503, headers={"Retry-After": "60"})

    httpserver.expect_request("/services/collector/event").respond_with_handler(busy)
    outputs = _outputs(home, httpserver.url_for("/"))
    seen: list[str] = []

    def interrupt(child: Any) -> None:
        child.expect(r"delivering to splunk.*Ctrl-C skips; events stay queued", timeout=120)
        seen.append(str(child.after))
        child.sendintr()

    lines, code = run_pty(["scan", "--once", "--outputs", str(outputs), "--delivery-seconds", "120"], home, 80,
                          env={"TT_TOKEN": "FAKE-ok"}, during=interrupt)
    assert seen and code == 0
    flat = _flat(_summary(lines))
    assert "splunk failing" in flat and "queued" in flat
    assert "skipped with Ctrl-C, events stay queued" in flat
    assert not any("delivering to" in line for line in lines)  # the spinner erased itself
    status = run_pty(["delivery", "status", "--outputs", str(outputs), "--json"], home, 160)[0]
    rows = json.loads("".join(status))
    assert rows[0]["sink"] == "splunk" and rows[0]["pending"] + rows[0]["retrying"] > 0


def test_watch_lines_carry_the_time(home: Path) -> None:
    lines, code = run_pty(["watch", "--iterations", "0"], home, 80)
    assert code == 0
    (line,) = [x for x in _unwrap(lines, 80) if " watch #" in x]
    assert re.match(r"\d\d:\d\d:\d\d watch #\d+ \(\w+\): 1 store read, \d+ events, \d+ detections \(\d+ high", line)
    assert "2 records skipped" in line


def test_the_json_summary_carries_severities_and_each_outputs_state(home: Path, refusing: str) -> None:
    from scan_helpers import run_cli

    outputs = _outputs(home, refusing)
    proc = run_cli(["scan", "--once", "--outputs", str(outputs), "--delivery-seconds", "5", "--fail-on-delivery"],
                   home, extra_env={"TT_TOKEN": "FAKE-refused"}, check=False)
    assert proc.returncode == 3
    summary = json.loads(proc.stdout)  # not a terminal: JSON
    assert sum(summary["detections_by_severity"].values()) == summary["detection_count"] > 0
    splunk = summary["delivery"]["outputs"]["splunk"]
    assert splunk["state"] == "blocked" and splunk["reason"] == "hec:invalid_token" and splunk["sent"] == 0
    assert splunk["queued"] > 0 and "telltale delivery retry-blocked --sink splunk" in splunk["fix"]
    assert summary["delivery"]["waited_s"] >= 0 and summary["delivery"]["skipped"] is False
