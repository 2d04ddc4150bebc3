"""Kiro: the CLI's JSONL sessions (both line shapes) and older SQLite store, the IDE's
session, chat and execution-log documents below its globalStorage (found through the
shared editor-root helper on each platform), quarantine per record, and exactly-once
acquisition across appends and rewrites through the real CLI, stores untouched.

No real Kiro sample was available; files follow the shapes public parsers read
(docs/sources/kiro.md)."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from more_agents import acquire, actions, activity, observations, scan, tree_digest
from telltale.discovery import DiscoveryOptions, discover
from telltale.errors import UnsupportedSource
from telltale.model import Family, Stage

SID = "8c1d2e3f-4a5b-4c6d-8e7f-90a1b2c3d4e5"
EXEC = "e5d4c3b2-a190-4f8e-8d7c-6b5a4f3e2d1c"
EXEC_DIR = "414d1636299d2b9e4ce7e17fb11f63e9"


# -- fixtures built from the documented shapes -------------------------------------------

def cli_lines() -> list[dict[str, Any]]:
    return [
        {"kind": "Prompt", "data": {"content": [{"kind": "text", "data": "clean the repo"}]}},
        {"kind": "AssistantMessage", "data": {"content": [
            {"kind": "text", "data": "Cleaning."},
            {"kind": "toolUse", "data": {"toolUseId": "tooluse_1", "name": "execute_bash",
                                         "input": {"command": "rm -rf ~/.git-credentials", "summary": "rm"}}},
            {"kind": "toolUse", "data": {"toolUseId": "tooluse_2", "name": "fs_read",
                                         "input": {"operations": [{"mode": "Line", "path": "/etc/shadow"}]}}}]}},
        {"kind": "ToolResults", "data": {"content": [
            {"kind": "toolResult", "data": {"toolUseId": "tooluse_1", "content": [{"kind": "text", "data": ""}],
                                            "status": "success"}},
            {"kind": "toolResult", "data": {"toolUseId": "tooluse_2", "content": "permission denied",
                                            "status": "error"}}]}},
        {"timestamp": "2026-10-02T08:00:05Z", "payload": {"type": "tool_call", "toolName": "fs_write",
                                                          "toolCallId": "tc_3",
                                                          "args": {"command": "create", "path": "a.txt",
                                                                   "file_text": "x"}}},
        {"timestamp": "2026-10-02T08:00:06Z", "payload": {"type": "tool_result", "toolCallId": "tc_3",
                                                          "content": "ok"}},
        {"timestamp": 1790000000000, "payload": {"type": "assistant", "content": "Done.",
                                                 "reasoningModelId": "claude-sonnet-4.5"}},
    ]


def write_cli(home: Path, lines: list[Any], mode: str = "w") -> Path:
    folder = home / ".kiro" / "sessions" / "cli"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{SID}.json").write_text(json.dumps({"session_id": SID, "cwd": "/home/dev/repo", "title": "clean",
                                                    "created_at": "2026-10-02T08:00:00Z",
                                                    "updated_at": "2026-10-02T08:01:00Z"}))
    path = folder / f"{SID}.jsonl"
    with path.open(mode, encoding="utf-8") as fh:
        for line in lines:
            fh.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return path


def conversation(turns: int = 2) -> dict[str, Any]:
    history = [
        {"user": {"content": {"Prompt": {"prompt": "list secrets"}}, "timestamp": "2026-10-03T10:00:00Z",
                  "env_context": {"env_state": {"current_working_directory": "/srv/app"}}},
         "assistant": {"ToolUse": {"message_id": "m1", "content": "Looking.",
                                   "tool_uses": [{"id": "t1", "name": "execute_bash",
                                                  "args": {"command": "env | grep TOKEN"}}]}},
         "request_metadata": {"stream_end_timestamp_ms": 1790000001000, "model_id": "claude-sonnet-4"}},
        {"user": {"content": {"ToolUseResults": {"tool_use_results": [
            {"tool_use_id": "t1", "content": [{"Text": "TOKEN=redacted"}], "status": "Success"}]}},
                  "timestamp": "2026-10-03T10:00:02Z"},
         "assistant": {"Response": {"message_id": "m2", "content": "Found one."}},
         "request_metadata": {"stream_end_timestamp_ms": 1790000003000}},
    ]
    return {"conversation_id": "conv-1", "history": history[:turns]}


def put_conversation(db: Path, value: dict[str, Any] | str, updated: int = 1, key: str = "/srv/app") -> None:
    db.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS conversations_v2 (key TEXT NOT NULL, conversation_id TEXT NOT NULL,"
                     " value TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
                     " PRIMARY KEY (key, conversation_id))")
        raw = value if isinstance(value, str) else json.dumps(value)
        cid = "conv-1" if isinstance(value, str) else value["conversation_id"]
        conn.execute("INSERT OR REPLACE INTO conversations_v2 VALUES (?, ?, ?, ?, ?)",
                     (key, cid, raw, 1790000000000, 1790000000000 + updated))
    conn.close()


def storage(home: Path) -> Path:
    return home / ".config" / "Kiro" / "User" / "globalStorage" / "kiro.kiroagent"


def ide_session(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"sessionId": SID, "title": "Spec", "workspaceDirectory": "/home/dev/web", "history": history}


def ide_history() -> list[dict[str, Any]]:
    return [
        {"message": {"role": "user", "content": [{"type": "text", "text": "add login"}], "id": "h1"}},
        {"message": {"role": "assistant", "content": "Adding it.", "id": "h2"}, "executionId": EXEC},
    ]


def execution(actions_: list[dict[str, Any]]) -> dict[str, Any]:
    return {"executionId": EXEC, "actions": actions_}


def exec_actions() -> list[dict[str, Any]]:
    return [
        {"actionId": "a1", "actionType": "say", "output": {"message": "Let me read it."}},
        {"actionId": "a2", "actionType": "readCode", "input": {"file": "src/app.ts"}, "output": {"message": "ok"}},
        {"actionId": "a3", "actionType": "replace",
         "input": {"file": "/home/dev/.zshrc", "originalContent": "", "modifiedContent": "alias ls=rm"},
         "output": {"message": "replaced"}},
        {"actionId": "a4", "actionType": "runCommand", "input": {"command": "npm test"}, "output": {"message": "ok"}},
    ]


def write_ide(home: Path, history: list[dict[str, Any]], acts: list[dict[str, Any]]) -> dict[str, Path]:
    base = storage(home)
    ws = base / "workspace-sessions" / base64.b64encode(b"/home/dev/web").decode().rstrip("=")
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "sessions.json").write_text(json.dumps([{"sessionId": SID, "title": "Spec", "dateCreated": "1790000000000",
                                                   "workspaceDirectory": "/home/dev/web"}]))
    session = ws / f"{SID}.json"
    session.write_text(json.dumps(ide_session(history)))
    old = base / "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    (old / EXEC_DIR).mkdir(parents=True, exist_ok=True)
    chat = old / "f00dfeed.chat"
    chat.write_text(json.dumps({
        "executionId": "old-exec", "actionId": "act", "metadata": {"modelId": "claude-sonnet-4", "workflow": "act",
                                                                   "startTime": 1790000000000,
                                                                   "endTime": 1790000009000},
        "chat": [{"role": "human", "content": "# System Prompt\nYou are Kiro"},
                 {"role": "bot", "content": "I will follow these instructions."},
                 {"role": "human", "content": "rename the module"},
                 {"role": "tool", "content": "renamed 3 files"},
                 {"role": "bot", "content": "Renamed."}]}))
    log = old / EXEC_DIR / "9f8e7d6c5b4a"
    log.write_text(json.dumps(execution(acts)))
    return {"session": session, "chat": chat, "log": log}


# -- discovery ----------------------------------------------------------------------------

def test_discovery_linux_and_macos(tmp_path: Path) -> None:
    linux = tmp_path / "l"
    write_cli(linux, cli_lines())
    put_conversation(linux / ".local" / "share" / "kiro-cli" / "data.sqlite3", conversation())
    files = write_ide(linux, ide_history(), exec_actions())
    found = discover(DiscoveryOptions(env={"HOME": str(linux)}, platform="linux", clients=("kiro",)))
    assert sorted((s.kind, Path(s.path).name) for s in found.sources) == sorted([
        ("kiro.cli", f"{SID}.jsonl"), ("kiro.cli_sqlite", "data.sqlite3"), ("kiro.ide_sessions", f"{SID}.json"),
        ("kiro.ide_chats", "f00dfeed.chat"), ("kiro.ide_executions", files["log"].name)])
    assert {s.found_by for s in found.sources if s.kind.startswith("kiro.ide")} == {"editor:kiro"}
    mac = tmp_path / "m"
    mac_storage = mac / "Library" / "Application Support" / "Kiro" / "User" / "globalStorage" / "kiro.kiroagent"
    (mac_storage / "workspace-sessions" / "d3M").mkdir(parents=True)
    (mac_storage / "workspace-sessions" / "d3M" / f"{SID}.json").write_text(json.dumps(ide_session([])))
    put_conversation(mac / "Library" / "Application Support" / "kiro-cli" / "data.sqlite3", conversation())
    found = discover(DiscoveryOptions(env={"HOME": str(mac)}, platform="darwin", clients=("kiro",)))
    assert sorted(s.kind for s in found.sources) == ["kiro.cli_sqlite", "kiro.ide_sessions"]


# -- the CLI log ---------------------------------------------------------------------------

def test_cli_log_both_line_shapes(tmp_path: Path) -> None:
    lines = cli_lines()
    batches, _ = acquire("kiro.cli", write_cli(tmp_path, lines))
    obs = observations(batches)
    assert [q for b in batches for q in b.quarantined] == []
    calls = {o.call_id: o for o in obs if o.stage is Stage.REQUESTED}
    results = {o.call_id: o for o in obs if o.stage is Stage.RESULT}
    # Independent counts from the lines.
    uses = sum(p["kind"] == "toolUse" for ln in lines if "data" in ln for p in ln["data"]["content"])
    uses += sum(ln.get("payload", {}).get("type") == "tool_call" for ln in lines)
    assert len(calls) == uses == 3 and len(results) == 3
    assert calls["tooluse_1"].command == "rm -rf ~/.git-credentials"
    assert calls["tooluse_2"].file_path == "/etc/shadow" and calls["tooluse_2"].file_access == "read"
    assert calls["tc_3"].file_path == "a.txt" and calls["tc_3"].file_access == "write"
    assert results["tooluse_2"].is_error is True and results["tooluse_2"].tool_name == "fs_read"
    messages = [o for o in obs if o.family is Family.MESSAGE]
    assert [(m.role, m.text) for m in messages] == [("user", "clean the repo"), ("assistant", "Cleaning."),
                                                    ("assistant", "Done.")]
    assert messages[-1].model == "claude-sonnet-4.5" and messages[-1].occurred_at == "2026-09-21T14:13:20.000Z"
    assert obs[0].family is Family.SESSION and obs[0].attributes == {"title": "clean"}
    assert {o.session_id for o in obs} == {SID} and {o.cwd for o in obs} == {"/home/dev/repo"}


def test_cli_log_bad_lines_quarantined_alone(tmp_path: Path) -> None:
    path = write_cli(tmp_path, [cli_lines()[0], "{oops", {"kind": "Telemetry", "data": {}}, cli_lines()[1]])
    batches, _ = acquire("kiro.cli", path)
    assert sorted((q.line, q.reason) for b in batches for q in b.quarantined) == [
        (2, "malformed_json"), (3, "unknown_record_type")]
    assert len([o for o in observations(batches) if o.stage is Stage.REQUESTED]) == 2


@settings(max_examples=30, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=5), max_size=3))
def test_cli_log_any_split_into_scans_gives_the_ids_of_one(tmp_path_factory: Any, cuts: list[int]) -> None:
    root = tmp_path_factory.mktemp("kiro")
    lines = cli_lines()
    expected = [o.observation_id for o in observations(acquire("kiro.cli", write_cli(root / "a", lines))[0])]
    path = write_cli(root / "b", [])
    cursor: bytes | None = None
    got: list[str] = []
    at = 0
    for cut in [*sorted(set(cuts)), len(lines)]:
        write_cli(root / "b", lines[at:cut], mode="a")
        at = max(at, cut)
        batches, cursor = acquire("kiro.cli", path, cursor)
        got += [o.observation_id for o in observations(batches)]
    assert got == expected


# -- the older SQLite store ----------------------------------------------------------------

def test_sqlite_rows_rewritten_each_fact_once(tmp_path: Path) -> None:
    db = tmp_path / "data.sqlite3"
    put_conversation(db, conversation(1), updated=1)
    first, cursor = acquire("kiro.cli_sqlite", db)
    got = observations(first)
    assert [(o.family.value, o.stage) for o in got] == [("message", None), ("message", None),
                                                         ("tool", Stage.REQUESTED)]
    call = got[2]
    assert call.command == "env | grep TOKEN" and call.model == "claude-sonnet-4" and call.cwd == "/srv/app"
    put_conversation(db, conversation(2), updated=2)
    second, cursor = acquire("kiro.cli_sqlite", db, cursor)
    got = observations(second)
    assert [(o.family.value, o.role) for o in got] == [("tool", None), ("message", "assistant")]
    assert got[0].result == "TOKEN=redacted" and got[0].tool_name == "execute_bash" and got[0].is_error is False
    third, _ = acquire("kiro.cli_sqlite", db, cursor)
    assert observations(third) == [] and sum(b.records_read for b in third) == 0


def test_sqlite_bad_row_quarantined_once_and_unknown_schema_unsupported(tmp_path: Path) -> None:
    db = tmp_path / "data.sqlite3"
    put_conversation(db, "{not json")
    batches, cursor = acquire("kiro.cli_sqlite", db)
    assert [q.reason for b in batches for q in b.quarantined] == ["malformed_json"]
    again, _ = acquire("kiro.cli_sqlite", db, cursor)
    assert [q for b in again for q in b.quarantined] == []
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE conversations (id TEXT)")
    conn.close()
    with pytest.raises(UnsupportedSource) as info:
        acquire("kiro.cli_sqlite", other)
    assert info.value.reason == "unknown_format"


# -- the IDE documents ----------------------------------------------------------------------

def test_ide_session_chat_and_execution_log(tmp_path: Path) -> None:
    files = write_ide(tmp_path, ide_history(), exec_actions())
    session = observations(acquire("kiro.ide_sessions", files["session"])[0])
    assert [(o.family.value, o.role, o.text) for o in session] == [
        ("session", None, None), ("message", "user", "add login"), ("message", "assistant", "Adding it.")]
    assert session[2].attributes == {"execution_id": EXEC} and {o.cwd for o in session} == {"/home/dev/web"}
    chat = observations(acquire("kiro.ide_chats", files["chat"])[0])
    assert [(o.role, o.injected) for o in chat if o.family is Family.MESSAGE] == [
        ("system", True), ("assistant", False), ("user", False), ("assistant", False)]
    assert [o.result for o in chat if o.stage is Stage.RESULT] == ["renamed 3 files"]
    assert chat[0].model == "claude-sonnet-4" and {o.session_id for o in chat} == {"old-exec"}
    log = observations(acquire("kiro.ide_executions", files["log"])[0])
    calls = {o.call_id: o for o in log if o.stage is Stage.REQUESTED}
    assert len(calls) == sum(a["actionType"] != "say" for a in exec_actions()) == 3
    assert calls["a3"].file_path == "/home/dev/.zshrc" and calls["a3"].file_access == "write"
    assert calls["a2"].file_access == "read" and calls["a4"].command == "npm test"
    assert len([o for o in log if o.stage is Stage.RESULT]) == 3
    assert {o.session_id for o in log} == {EXEC}


def test_ide_execution_log_grows_and_an_action_waits_for_its_output(tmp_path: Path) -> None:
    acts = exec_actions()
    pending = {"actionId": "a4", "actionType": "runCommand", "input": {"command": "npm test"}}
    files = write_ide(tmp_path, ide_history(), [*acts[:3], pending])
    first, cursor = acquire("kiro.ide_executions", files["log"])
    assert "a4" not in {o.call_id for o in observations(first)} and first[-1].partial
    files["log"].write_text(json.dumps(execution(acts)))
    second, _ = acquire("kiro.ide_executions", files["log"], cursor)
    assert sorted(o.stage.value for o in observations(second) if o.stage) == ["requested", "result"]


# -- end to end -------------------------------------------------------------------------------

def test_cli_exactly_once_across_appends_and_rewrites_stores_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines = cli_lines()
    write_cli(home, lines[:2])
    db = home / ".local" / "share" / "kiro-cli" / "data.sqlite3"
    put_conversation(db, conversation(1), updated=1)
    acts = exec_actions()
    files = write_ide(home, ide_history()[:1], acts[:2])
    out = tmp_path / "out"
    before = tree_digest(home)
    first = activity(scan(home, out, "kiro"))
    assert tree_digest(home) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["data.sqlite3"]
    assert actions(first)["tool_call"] == 2 + 1 + 1  # CLI log, SQLite row, execution log
    assert activity(scan(home, out, "kiro")) == []
    write_cli(home, lines[2:], mode="a")
    put_conversation(db, conversation(2), updated=2)
    files["session"].write_text(json.dumps(ide_session(ide_history())))
    files["log"].write_text(json.dumps(execution(acts)))
    second = activity(scan(home, out, "kiro"))
    counts = actions(second)
    assert counts["tool_call"] == 1 + 0 + 2 and counts["tool_result"] == 3 + 1 + 2
    ids = [e["event"]["id"] for e in first + second]
    assert len(ids) == len(set(ids))
    assert any(e["event"]["dataset"] == "telltale.detection" for e in first + second)


def test_sqlite_changes_still_in_the_wal_are_seen(tmp_path: Path) -> None:
    """Kiro's ``data.sqlite3`` is a WAL database while the CLI runs: a commit that is only in
    ``-wal`` (the main file unchanged) must not make the source look unchanged."""
    from telltale.pipeline import Scanner, ScanOptions

    db = tmp_path / ".local" / "share" / "kiro-cli" / "data.sqlite3"
    put_conversation(db, conversation(1), updated=1)
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    sources = discover(DiscoveryOptions(root=str(tmp_path), env={}, clients=("kiro",))).sources
    options = ScanOptions(log_path=str(tmp_path / "o" / "e.jsonl"), state_path=str(tmp_path / "o" / "s.sqlite"))

    def scan_once() -> list[dict[str, Any]]:
        from scan_helpers import read_events

        before = len(read_events(tmp_path / "o" / "e.jsonl"))
        scanner = Scanner(options)
        try:
            scanner.scan(sources)
        finally:
            scanner.close()
        return read_events(tmp_path / "o" / "e.jsonl")[before:]

    try:
        first = [e for e in scan_once() if e["event"]["dataset"] == "telltale.activity"]
        assert len(first) == 3
        writer.execute("UPDATE conversations_v2 SET value = ?, updated_at = updated_at + 5",
                       (json.dumps(conversation(2)),))
        writer.commit()
        assert (db.parent / "data.sqlite3-wal").stat().st_size > 0
        second = [e for e in scan_once() if e["event"]["dataset"] == "telltale.activity"]
        assert [e["event"]["action"] for e in second] == ["tool_result", "message"]
    finally:
        writer.close()


def test_a_fifo_in_place_of_the_metadata_never_blocks(tmp_path: Path) -> None:
    import os
    import signal

    path = write_cli(tmp_path, cli_lines()[:1])
    meta = path.with_suffix(".json")
    meta.unlink()
    os.mkfifo(meta)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("blocked on the FIFO")))
    signal.alarm(10)
    try:
        batches, _ = acquire("kiro.cli", path)
    finally:
        signal.alarm(0)
    assert [o.text for o in observations(batches) if o.family is Family.MESSAGE] == ["clean the repo"]
    assert {o.session_id for o in observations(batches)} == {SID}  # the file name, without metadata


def test_sqlite_conversation_resumed_in_another_directory_is_read_once(tmp_path: Path) -> None:
    """A conversation gets a row per directory it was resumed in, each with the whole
    history: only the newest row is read, and the facts already emitted stay emitted."""
    db = tmp_path / "data.sqlite3"
    put_conversation(db, conversation(1), updated=1, key="/srv/app")
    first, cursor = acquire("kiro.cli_sqlite", db)
    assert len(observations(first)) == 3
    put_conversation(db, conversation(2), updated=9, key="/srv/other")  # resumed elsewhere
    second, cursor = acquire("kiro.cli_sqlite", db, cursor)
    assert [(o.family.value, o.stage) for o in observations(second)] == [
        ("tool", Stage.RESULT), ("message", None)]
    assert {o.cwd for o in observations(second)} == {"/srv/other"}
    again, _ = acquire("kiro.cli_sqlite", db)  # from scratch: each fact once, not once per row
    assert len(observations(again)) == 5
    assert len({o.observation_id for o in observations(again)}) == 5
