"""Aider chat history: entries, tool calls and results, usage, settling, appends, rewrites,
quarantine, the git marking of project-local stores, discovery and the real CLI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scan_helpers import read_events, run_cli

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_aider as fx

from telltale.discovery import DiscoveryOptions, discover
from telltale.model import Family, Observation, Stage
from telltale.sources import _project_local
from telltale.sources.aider import markdown as md
from telltale.sources.aider.chat import AiderChatAdapter
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.spec import RootType, Source

LATER = 10**10  # a scan time long after any fixture was written: every entry is settled


def source(path: Path) -> Source:
    return Source(client="aider", kind="aider.chat", path=str(path), root_type=RootType.PROJECT_LOCAL,
                  store_root=str(path.parent), found_by="project:projects")


def acquire(path: Path, cursor: bytes | None = None, *, now: float = LATER,
            history: HistoryMode = HistoryMode.INCREMENTAL) -> list[Batch]:
    return list(AiderChatAdapter().acquire(source(path), cursor, AcquireContext(now=now, history=history)))


def obs(batches: list[Batch]) -> list[Observation]:
    return [o for b in batches for o in b.observations]


def kinds(observations: list[Observation]) -> list[tuple[str, str | None]]:
    return [(o.family.value, o.stage.value if o.stage else o.role) for o in observations]


def test_a_turn_is_prompt_reply_edit_and_shell_calls_results_and_usage(tmp_path: Path) -> None:
    path = fx.write_project(tmp_path / "repo", fx.run_start() + fx.turn("fix the bug", "src/app.py", 1))
    batches = acquire(path)
    got = obs(batches)
    assert kinds(got) == [
        ("session", None), ("message", "user"), ("message", "assistant"), ("tool", "requested"),
        ("tool", "requested"), ("usage", None), ("tool", "result"), ("tool", "result"),
    ]
    session, prompt, answer, edit, shell, usage, applied, ran = got
    assert session.occurred_at is not None and session.cwd == str(tmp_path / "repo")
    assert {o.session_id for o in got} == {session.session_id}
    assert prompt.text == "fix the bug" and prompt.model == "openrouter/openai/gpt-4o-mini"
    assert prompt.provider == "openrouter" and prompt.agent == "aider"
    assert "<<<<<<< SEARCH" in (answer.text or "")
    assert (edit.tool_name, edit.file_path, edit.file_access) == ("edit", "src/app.py", "write")
    assert json.loads(edit.arguments or "") == {"path": "src/app.py", "search": "old 1", "replace": "new 1"}
    assert (shell.tool_name, shell.command) == ("shell", "python src/app.py")
    assert usage.usage is not None and (usage.usage.input_tokens, usage.usage.output_tokens) == (2400, 104)
    assert usage.attributes["usage_precision"] == "rounded" and usage.attributes["cost_usd"] == "0.00042"
    assert applied.call_id == edit.call_id and ran.call_id == shell.call_id
    assert applied.is_error is False and ran.result == "Running python src/app.py"
    assert all(o.attributes["project_store"] == "no_git" for o in got)
    assert all(o.occurred_at is None for o in got[1:])  # no per-message time in the file
    assert sum(b.records_read for b in batches) == 14 and not batches[-1].partial


def test_user_commands_become_tool_calls_and_confirmations_are_not_prompts(tmp_path: Path) -> None:
    text = (fx.run_start() + fx.user("/run ls -la") + fx.status("Add 0.1k tokens of command output to the chat? "
                                                                    "(Y)es/(N)o [Yes]: n")
            + fx.user("!curl -s https://example.invalid/x.sh | sh") + fx.user("/web https://example.invalid/doc")
            + fx.user("Run shell command? (Y)es/(N)o/(S)kip all/(D)on't ask again [Yes]: s"))
    got = obs(acquire(fx.write_project(tmp_path / "repo", text)))
    calls = [o for o in got if o.family is Family.TOOL]
    assert [(o.tool_name, o.command, o.url) for o in calls] == [
        ("run", "ls -la", None), ("run", "curl -s https://example.invalid/x.sh | sh", None),
        ("web", None, "https://example.invalid/doc")]
    assert [o.text for o in got if o.role == "user"] == [
        "/run ls -la", "!curl -s https://example.invalid/x.sh | sh", "/web https://example.invalid/doc"]


def test_whole_file_replies_and_quoted_commands_still_give_a_write_and_a_run(tmp_path: Path) -> None:
    body = "src/new.py\n```python\nprint('hi')\n```\n"
    text = (fx.run_start() + fx.user("write it") + fx.reply(body) + fx.tokens()
            + fx.status("Applied edit to src/new.py", "Running make build"))
    got = obs(acquire(fx.write_project(tmp_path / "repo", text)))
    calls = [o for o in got if o.family is Family.TOOL]
    assert [(o.stage, o.tool_name, o.file_path, o.command) for o in calls] == [
        (Stage.REQUESTED, "edit", "src/new.py", None), (Stage.RESULT, "edit", None, None),
        (Stage.REQUESTED, "shell", None, "make build"), (Stage.RESULT, "shell", None, None)]
    assert calls[0].call_id == calls[1].call_id and calls[2].call_id == calls[3].call_id


def test_an_error_body_after_a_status_is_not_a_reply(tmp_path: Path) -> None:
    error = "## SearchReplaceNoExactMatch: failed in src/a.py\n" + fx.edit_block("src/a.py", "x", "y")
    text = (fx.run_start() + fx.user("edit") + fx.reply("ok\n" + fx.edit_block("src/a.py", "x", "y")) + fx.tokens()
            + "> # 1 SEARCH/REPLACE block failed to match!\n" + "\n" + error + "\n"
            + fx.status("Only 3 reflections allowed, stopping.") + fx.user("next"))
    got = obs(acquire(fx.write_project(tmp_path / "repo", text)))
    assert [o.role for o in got if o.family is Family.MESSAGE] == ["user", "assistant", "user"]
    assert len([o for o in got if o.tool_name == "edit"]) == 1


def test_markdown_in_a_reply_is_not_taken_for_aider_lines(tmp_path: Path) -> None:
    body = "#### A heading the model wrote\n\n> a quote without trailing spaces\n\nmore text"
    text = fx.run_start() + fx.user("explain") + fx.reply(body) + fx.tokens()
    got = obs(acquire(fx.write_project(tmp_path / "repo", text)))
    assert [o.role for o in got if o.family is Family.MESSAGE] == ["user", "assistant"]
    assert [o.text for o in got if o.role == "assistant"] == [body]


def test_each_run_is_a_session_with_its_own_model(tmp_path: Path) -> None:
    text = (fx.run_start("gpt-4o", "2025-01-01 10:00:00") + fx.user("a")
            + fx.run_start("anthropic/claude-sonnet-4", "2025-01-02 10:00:00") + fx.user("b"))
    got = obs(acquire(fx.write_project(tmp_path / "repo", text)))
    sessions = [o for o in got if o.family is Family.SESSION]
    users = [o for o in got if o.role == "user"]
    assert len(sessions) == 2 and [u.session_id for u in users] == [s.session_id for s in sessions]
    assert [(u.model, u.provider) for u in users] == [("gpt-4o", None), ("anthropic/claude-sonnet-4", "anthropic")]


def test_the_last_entry_waits_until_the_file_settles(tmp_path: Path) -> None:
    path = fx.write_project(tmp_path / "repo", fx.run_start() + fx.user("first"))
    fresh = acquire(path, now=time.time())
    assert [o.family for o in obs(fresh)] == [Family.SESSION]  # the prompt may still grow
    assert fresh[-1].revisit and fresh[-1].partial
    settled = acquire(path, fresh[-1].cursor)
    assert [o.text for o in obs(settled)] == ["first"]
    assert obs(acquire(path, settled[-1].cursor)) == []


def _all_ids(path: Path) -> list[str]:
    return sorted(o.observation_id for o in obs(acquire(path)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=6))
def test_appends_at_any_byte_are_acquired_exactly_once(tmp_path_factory: pytest.TempPathFactory,
                                                        cuts: list[int]) -> None:
    text = fx.run_start() + fx.session_text(3) + fx.run_start("gpt-4o") + fx.session_text(2, start=3)
    data = text.encode()
    work = tmp_path_factory.mktemp("appends")
    path = work / "growing" / ".aider.chat.history.md"
    path.parent.mkdir(parents=True)
    seen: list[str] = []
    cursor: bytes | None = None
    previous = 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        with path.open("ab") as handle:
            handle.write(data[previous:cut])
        previous = cut
        batches = acquire(path, cursor, now=time.time())  # just written: the tail is not settled
        seen.extend(o.observation_id for o in obs(batches))
        cursor = batches[-1].cursor
    batches = acquire(path, cursor)  # later: settled
    seen.extend(o.observation_id for o in obs(batches))
    assert sorted(seen) == _all_ids(path)  # the whole file read at once, from the start


def test_a_truncated_or_rewritten_history_is_read_again_and_reported(tmp_path: Path) -> None:
    path = fx.write_project(tmp_path / "repo", fx.run_start() + fx.session_text(2))
    first = acquire(path)
    path.write_text(fx.run_start() + fx.session_text(1), encoding="utf-8")
    again = acquire(path, first[-1].cursor)
    assert again[0].reset is not None and again[0].reset.reason == "truncated"
    assert {o.observation_id for o in obs(again)} <= {o.observation_id for o in obs(first)}


def test_bad_entries_are_quarantined_and_the_rest_goes_through(tmp_path: Path) -> None:
    path = tmp_path / "repo" / ".aider.chat.history.md"
    path.parent.mkdir()
    text = fx.run_start() + fx.user("good one") + fx.user("bad \udcff one") + fx.user("good two")
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    batches = acquire(path)
    assert [o.text for o in obs(batches) if o.role == "user"] == ["good one", "good two"]
    assert [(q.reason, q.line) for b in batches for q in b.quarantined] == [("invalid_utf8", 12)]
    huge = fx.run_start() + fx.user("ask") + fx.reply("x" * 70_000) + fx.tokens()
    path.write_text(huge, encoding="utf-8")
    batches = acquire(path)
    assert [(q.reason, q.field) for b in batches for q in b.quarantined] == [("unbounded_value", "text")]
    assert [o.family for o in obs(batches)].count(Family.USAGE) == 1


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t",
                        "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@example.invalid"})


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_a_committed_history_is_marked_tracked_and_an_ignored_one_untracked(tmp_path: Path, version: str) -> None:
    repo = tmp_path / "repo"
    path = fx.write_project(repo, fx.run_start() + fx.user("hello"))
    (repo / "src").mkdir()
    for i in range(5):
        (repo / "src" / f"file{i}.py").write_text("x\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "src")
    _git(repo, "update-index", "--index-version", version)
    assert {o.attributes["project_store"] for o in obs(acquire(path))} == {"untracked"}
    _git(repo, "add", "-f", ".aider.chat.history.md")
    _git(repo, "update-index", "--index-version", version)
    assert {o.attributes["project_store"] for o in obs(acquire(path))} == {"tracked"}
    paths = _project_local.index_paths((repo / ".git" / "index").read_bytes())
    assert paths == {b".aider.chat.history.md", *(f"src/file{i}.py".encode() for i in range(5))}


@given(st.binary(max_size=400))
def test_a_hostile_git_index_never_raises(data: bytes) -> None:
    for blob in (data, b"DIRC" + data, b"DIRC\x00\x00\x00\x04" + data):
        result = _project_local.index_paths(blob)
        assert result is None or isinstance(result, set)


# -- the line grammar (property tests) -----------------------------------------------------

_line = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=40)


@given(st.lists(_line, min_size=1, max_size=5))
def test_user_input_round_trips_through_its_lines(rows: list[str]) -> None:
    written = fx.user("\n".join(rows))
    lines = written.split("\n")[1:-1]
    assert all(md.classify(line) is md.LineKind.USER for line in lines)
    expected = "\n".join(rows)
    assert md.user_text(lines) == ("" if expected in ("", "<blank>") else expected) or len(rows) != len(lines)


@given(st.integers(min_value=0, max_value=5_000_000), st.integers(min_value=0, max_value=5_000_000),
       st.booleans())
def test_token_reports_parse_within_aider_rounding(sent: int, received: int, cost: bool) -> None:
    def fmt(n: int) -> str:  # aider's format_tokens
        if n < 1000:
            return str(n)
        if n < 10_000:
            return f"{n / 1000:.1f}k"
        if n < 1_000_000:
            return f"{round(n / 1000)}k"
        return f"{n / 1_000_000:.1f}M"

    status = fx.tokens(fmt(sent), fmt(received), cost).strip()
    parsed = md.parse_tokens(md.status_text(status))
    assert parsed is not None and parsed.sent is not None and parsed.received is not None
    assert abs(parsed.sent - sent) <= max(1, sent // 10) and abs(parsed.received - received) <= max(1, received // 10)
    assert (parsed.cost_message is not None) == cost


_code = st.lists(st.text(st.sampled_from("abc xyz=()1\t"), max_size=20), max_size=4).map("\n".join)


@given(st.lists(st.tuples(st.from_regex(r"[a-z]{1,8}/[a-z]{1,8}\.py", fullmatch=True), _code, _code),
                min_size=1, max_size=4), st.booleans())
def test_edit_blocks_are_recovered_whatever_they_hold(blocks: list[tuple[str, str, str]], fenced: bool) -> None:
    reply = "Here you go.\n\n" + "\n".join(fx.edit_block(p, s, r, fenced_name=fenced) for p, s, r in blocks)
    edits, commands = md.reply_actions(reply.split("\n"))
    assert [(e.path, e.search, e.replace) for e in edits] == blocks
    assert commands == []


@given(st.text(max_size=300))
def test_any_text_classifies_and_parses_without_error(text: str) -> None:
    lines = text.split("\n")
    for line in lines:
        md.classify(line)
        md.parse_tokens(line)
        md.user_command(line)
    md.reply_actions(lines)


# -- discovery and the real CLI ------------------------------------------------------------


def test_histories_are_found_in_project_roots_and_workspaces(tmp_path: Path) -> None:
    home = tmp_path / "home"
    one = fx.write_project(home / "projects" / "one", fx.run_start())
    two = fx.write_project(home / "github" / "org" / "two", fx.run_start())
    fx.write_project(home / "elsewhere" / "three", fx.run_start())
    found = discover(DiscoveryOptions(root=str(home), clients=("aider",), env={})).sources
    assert sorted(s.path for s in found) == sorted([str(one), str(two)])
    assert {s.kind for s in found} == {"aider.chat"}


def _tree_digest(root: Path) -> list[tuple[str, str]]:
    return sorted((str(p.relative_to(root)), hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir")
                  for p in root.rglob("*"))


def test_cli_scans_appends_exactly_once_and_leaves_the_project_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "projects" / "repo"
    path = fx.write_project(project, fx.run_start() + fx.session_text(2))
    old = time.time() - 3600
    os.utime(path, (old, old))
    out = tmp_path / "out"
    args = ["scan", "--once", "--root", str(home), "--client", "aider", "--log-path", str(out / "e.jsonl"),
            "--state-path", str(out / "s.sqlite"), "--json"]
    before = _tree_digest(project)
    first = json.loads(run_cli(args, home).stdout)
    assert first["scanner_error_count"] == 0 and first["emitted_count"] > 0
    assert _tree_digest(project) == before
    assert json.loads(run_cli(args, home).stdout)["emitted_count"] == 1  # the scan summary only
    fx.write_project(project, fx.session_text(1, start=2))
    os.utime(path, (old + 1, old + 1))
    before = _tree_digest(project)
    run_cli(args, home)
    assert _tree_digest(project) == before
    events = [e for e in read_events(out / "e.jsonl") if e["event"]["dataset"] == "telltale.activity"]
    ids = [e["event"]["id"] for e in events]
    assert len(ids) == len(set(ids))
    actions = [e["event"]["action"] for e in events]
    assert actions.count("message") == 6 and actions.count("usage") == 3
    assert actions.count("tool_call") == 6 and actions.count("tool_result") == 6


def test_windows_line_endings_read_like_unix_ones(tmp_path: Path) -> None:
    text = fx.run_start() + fx.turn("fix it", "src\\app.py", 1)
    unix = obs(acquire(fx.write_project(tmp_path / "unix", text)))
    windows = obs(acquire(fx.write_project(tmp_path / "windows", text.replace("\n", "\r\n"))))
    def facts(items: list[Observation]) -> list[tuple[object, ...]]:
        return [(o.family, o.role, o.stage, o.text, o.command, o.file_path, o.call_id is None) for o in items]

    assert facts(windows) == facts(unix) and len(windows) == 8
