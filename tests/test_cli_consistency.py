"""The CLI says what it does: every flag has help (with its default), every command a
description, ``--client`` means the same everywhere, ``--log-path -`` streams to stdout
without touching the state, and history re-reads warn before they append to the
production log (issue 18, "Consistency")."""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from scan_helpers import read_events, run_cli, write_claude_session
from telltale.cli.main import build_parser

# -- help texts -------------------------------------------------------------------------


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _walk(child, (*path, name))


_NO_HELP_NEEDED = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)


def _problems(root: argparse.ArgumentParser) -> list[str]:
    problems: list[str] = []
    for where, parser in _walk(root, (root.prog,)):
        if not parser.description:
            problems.append(f"{where}: no description")
        for action in parser._actions:
            if isinstance(action, _NO_HELP_NEEDED) or action.help == argparse.SUPPRESS:
                continue
            name = "/".join(action.option_strings) or action.dest
            if not action.help:
                problems.append(f"{where} {name}: no help")
                continue
            default = action.default
            if type(default).__name__ == "_Unset":  # a configurable flag: its default until config decides
                default = default.default
            if default not in (None, False, [], argparse.SUPPRESS) and "default" not in action.help:
                problems.append(f"{where} {name}: default {default!r} not stated in its help")
    return problems


def test_every_flag_has_help_with_its_default_and_every_command_a_description() -> None:
    assert _problems(build_parser()) == []


def test_the_walk_finds_what_is_missing() -> None:
    parser = argparse.ArgumentParser(prog="x", description="d")
    sub = parser.add_subparsers()
    child = sub.add_parser("c")  # no description
    child.add_argument("--quiet-flag")  # no help
    child.add_argument("--n", type=int, default=3, help="how many")  # default not stated
    child.add_argument("--m", type=int, default=3, help="how many (default 3)")
    child.add_argument("--on", action="store_true", help="a switch")
    assert _problems(parser) == ["x c: no description", "x c --quiet-flag: no help",
                                 "x c --n: default 3 not stated in its help"]


def test_content_help_says_what_each_mode_carries() -> None:
    for where, parser in _walk(build_parser(), ("telltale",)):
        if where not in ("telltale scan", "telltale watch"):
            continue
        (content,) = [a for a in parser._actions if a.option_strings == ["--content"]]
        text = content.help or ""
        assert "none: ids" in text and "no command, path" in text
        assert "redacted (default)" in text and "tool-output text only as length and hash" in text
        assert "full: that plus message and tool-output text" in text


def test_help_states_the_delivery_wait_and_stdout_log() -> None:
    proc = run_cli(["scan", "--help"], Path.cwd(), extra_env={"COLUMNS": "200"})
    text = " ".join(proc.stdout.split())
    assert "at most S seconds (default 30)" in text
    assert "'-' writes the events to stdout and the summary to stderr" in text
    assert "no cursor advances" in text


def test_rules_export_default_mentions_no_default_rules(tmp_path: Path) -> None:
    proc = run_cli(["rules", "export-default", "--help"], tmp_path, extra_env={"COLUMNS": "300"})
    assert "--no-default-rules" in proc.stdout
    done = run_cli(["rules", "export-default", str(tmp_path / "pack")], tmp_path)
    written = done.stdout.split()
    assert written and all(Path(p).is_file() for p in written)  # stdout: the files, for scripts
    hint = done.stderr.strip()
    assert "telltale scan --no-default-rules" in hint and all(f"--rules {p}" in hint for p in written)


# -- one --client parser ------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    write_claude_session(h, "-work-p", "sess-claude-1", 2)
    return h


def _listed(proc_stdout: str) -> set[str]:
    return {json.loads(line)["client"] for line in proc_stdout.splitlines() if '"type":"source"' in line}


def test_client_is_case_insensitive_comma_separated_and_repeatable_in_sources(home: Path) -> None:
    for flags in (["--client", "Claude"], ["--client", "CODEX,claude"], ["--client", "codex", "--client", "CLAUDE"],
                  ["--client", "Claude.Projects"]):
        proc = run_cli(["sources", "--json", "--root", str(home), *flags], home)
        assert _listed(proc.stdout) == {"claude"}, flags


@pytest.mark.parametrize("command", ["scan", "watch"])
def test_scan_and_watch_accept_the_same_client_lists(home: Path, command: str) -> None:
    out = home.parent / "out"
    extra = ["--iterations", "0"] if command == "watch" else ["--once"]
    proc = run_cli([command, *extra, "--root", str(home), "--client", "codex,Claude", "--client", "QWEN",
                    "--log-path", str(out / "e.jsonl"), "--state-path", str(out / "s.sqlite"), "--json"], home)
    kinds = {e.get("telltale", {}).get("source", {}).get("kind") for e in read_events(out / "e.jsonl")}
    assert "claude.projects" in kinds, proc.stderr


def test_an_unknown_client_is_a_usage_error_naming_the_valid_ones(home: Path) -> None:
    run_cli(["scan", "--once", "--root", str(home), "--json"], home)  # the read side has an index to look in
    for command in ("sources", "scan", "watch", "sessions", "detections", "status", "usage"):
        proc = run_cli([command, "--client", "claude,NoSuchAgent"], home, check=False)
        assert proc.returncode == 2, (command, proc.stderr)
        assert "unknown client nosuchagent" in proc.stderr, command
        assert "claude" in proc.stderr.split("valid clients:")[1] and "Traceback" not in proc.stderr


def test_read_side_client_takes_case_lists_and_source_kinds(home: Path) -> None:
    out = home.parent / "out"
    paths = ["--state-path", str(out / "s.sqlite"), "--log-path", str(out / "e.jsonl")]
    run_cli(["scan", "--once", "--root", str(home), *paths, "--json"], home)

    def sessions(*flags: str) -> set[str]:
        proc = run_cli(["sessions", "--json", "--state-path", str(out / "s.sqlite"), *flags], home)
        return {json.loads(line)["session_id"] for line in proc.stdout.splitlines()}

    assert sessions("--client", "CLAUDE") == {"sess-claude-1"}
    assert sessions("--client", "codex,claude.projects") == {"sess-claude-1"}
    assert sessions("--client", "codex") == set()  # a known client with no sessions: empty, not an error


# -- --log-path - -----------------------------------------------------------------------------


def test_log_path_dash_streams_events_to_stdout_and_writes_no_state(home: Path) -> None:
    state = home.parent / "out" / "s.sqlite"
    args = ["scan", "--once", "--root", str(home), "--log-path", "-", "--state-path", str(state), "--json"]
    first = run_cli(args, home)
    events = [json.loads(line) for line in first.stdout.splitlines()]
    assert events and all(e["event"]["id"] for e in events)
    assert any(e["event"]["dataset"] == "telltale.activity" for e in events)
    summary = json.loads(first.stderr.strip().splitlines()[-1])  # the summary goes to stderr
    assert summary["emitted_count"] == len(events)
    assert not (home / "-").exists() and not state.exists()  # no file named "-", no state
    again = run_cli(args, home)  # no cursor advanced: the same records again, the same ids
    record_ids = {e["event"]["id"] for e in events if e["event"]["dataset"] == "telltale.activity"}
    assert record_ids <= {json.loads(line)["event"]["id"] for line in again.stdout.splitlines()}


def test_log_path_dash_reads_cursors_but_never_advances_them(home: Path) -> None:
    out = home.parent / "out"
    paths = ["--state-path", str(out / "s.sqlite")]
    run_cli(["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"), *paths, "--json"], home)
    before = sqlite3.connect(out / "s.sqlite").execute("SELECT count(*) FROM ix_sessions").fetchone()
    write_claude_session(home, "-work-p", "sess-claude-1", 1, start=2)  # one new turn
    streamed = run_cli(["scan", "--once", "--root", str(home), "--log-path", "-", *paths, "--json"], home)
    activity = [json.loads(x) for x in streamed.stdout.splitlines() if '"telltale.activity"' in x]
    assert 1 <= len(activity) <= 4  # only the new turn: the committed cursor was read
    after = run_cli(["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"), *paths, "--json"],
                    home)
    assert json.loads(after.stdout)["sources_scanned"] == 1  # still new for the state: nothing advanced
    assert sqlite3.connect(out / "s.sqlite").execute("SELECT count(*) FROM ix_sessions").fetchone() == before


def test_log_path_dash_in_a_loop_emits_each_record_once(home: Path) -> None:
    proc = run_cli(["scan", "--interval-seconds", "0.2", "--iterations", "2", "--root", str(home), "--log-path", "-",
                    "--state-path", str(home.parent / "s.sqlite"), "--json"], home)
    ids = [json.loads(x)["event"]["id"] for x in proc.stdout.splitlines() if '"telltale.activity"' in x]
    assert ids and len(ids) == len(set(ids))  # the second iteration remembered what the first wrote
    assert len(proc.stderr.strip().splitlines()) >= 2  # one summary per iteration, on stderr


def _outbox_rows(state: Path) -> int:
    conn = sqlite3.connect(state)
    try:
        return int(conn.execute("SELECT count(*) FROM outbox_item").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # no outbox at all
    finally:
        conn.close()


@pytest.mark.parametrize("mode", [["--history", "all"], ["--log-path", "-"]])
def test_history_reads_queue_nothing_for_remote_outputs(home: Path, mode: list[str]) -> None:
    out = home.parent / "out"
    outputs = home.parent / "outputs.yaml"
    outputs.write_text("outputs:\n  splunk:\n    type: splunk_hec\n    url: http://127.0.0.1:9/\n"
                       "    token_env: TT_NO_TOKEN\n")
    state = out / "s.sqlite"
    base = ["scan", "--once", "--root", str(home), "--state-path", str(state), "--outputs", str(outputs),
            "--delivery-seconds", "0", "--json"]
    log = [] if "--log-path" in mode else ["--log-path", str(out / "h.jsonl")]
    run_cli([*base, *mode, *log], home, extra_env={"TT_NO_TOKEN": "x"})
    assert _outbox_rows(state) == 0 if state.exists() else True
    run_cli([*base, "--log-path", str(out / "e.jsonl")], home, extra_env={"TT_NO_TOKEN": "x"})  # control
    assert _outbox_rows(state) > 0


# -- history re-reads into the production log ------------------------------------------------


@pytest.mark.parametrize("flag", [["--backfill"], ["--history", "all"]])
def test_history_reread_into_the_production_log_warns(home: Path, flag: list[str]) -> None:
    proc = run_cli(["scan", "--once", "--root", str(home), *flag, "--json"], home)
    assert "appends every record again to the production log" in proc.stderr
    assert "--log-path -" in proc.stderr


@pytest.mark.parametrize("flag", [["--backfill"], ["--history", "all"]])
def test_history_reread_into_a_named_log_or_stdout_does_not_warn(home: Path, flag: list[str]) -> None:
    named = run_cli(["scan", "--once", "--root", str(home), *flag, "--log-path", str(home.parent / "copy.jsonl"),
                     "--state-path", str(home.parent / "s.sqlite"), "--json"], home)
    streamed = run_cli(["scan", "--once", "--root", str(home), *flag, "--log-path", "-",
                        "--state-path", str(home.parent / "s.sqlite"), "--json"], home)
    assert "production log" not in named.stderr + streamed.stderr


def test_watch_log_path_dash_streams_events_and_writes_no_state(home: Path) -> None:
    state = home.parent / "w" / "s.sqlite"
    proc = run_cli(["watch", "--iterations", "0", "--root", str(home), "--log-path", "-", "--state-path", str(state),
                    "--json"], home)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events and all(e["event"]["id"] for e in events)
    assert any(e["event"]["dataset"] == "telltale.activity" for e in events)
    lines = [json.loads(x) for x in proc.stderr.splitlines() if x.startswith("{")]
    assert lines and lines[0]["iteration"] == 0  # the scan's line went to stderr
    assert not state.exists() and not (home / "-").exists()
