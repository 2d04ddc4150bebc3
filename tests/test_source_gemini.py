"""Gemini CLI: settling of re-appended records, checkpoints and rewinds, identity,
incremental cursors, legacy whole-file sessions, logs.json, discovery per platform,
detection on its tool calls, and the credential files beside the transcripts."""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import ntpath
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import read_events, run_cli
from telltale.discovery import DiscoveryOptions, discover
from telltale.model import Family, Observation, Stage
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.gemini import GeminiChatsAdapter, GeminiLegacyChatsAdapter, GeminiLogsAdapter
from telltale.sources.spec import RootType, Source

FIXTURES = Path(__file__).parent / "fixtures" / "session_stores"
SID = "5f0e7c1a-3b2d-4c8e-9a61-0d2b4e6f8a10"


def rec(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def header(sid: str = SID, kind: str = "main") -> dict[str, Any]:
    return {"sessionId": sid, "projectHash": "0" * 64, "startTime": "2026-11-20T10:00:00.000Z",
            "lastUpdated": "2026-11-20T10:00:00.000Z", "kind": kind}


def user(mid: str, text: str) -> dict[str, Any]:
    return {"id": mid, "timestamp": "2026-11-20T10:00:01.000Z", "type": "user", "content": [{"text": text}]}


def gemini(mid: str, text: str = "", calls: list[dict[str, Any]] | None = None,
           tokens: dict[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": mid, "timestamp": "2026-11-20T10:00:02.000Z", "type": "gemini", "content": text,
                           "model": "gemini-3-pro-preview"}
    if calls is not None:
        out["toolCalls"] = calls
    if tokens is not None:
        out["tokens"] = tokens
    return out


def shell(cid: str, command: str, status: str, output: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"id": cid, "name": "run_shell_command", "args": {"command": command}, "status": status,
                            "timestamp": "2026-11-20T10:00:03.000Z"}
    if output is not None:
        call["result"] = [{"functionResponse": {"id": cid, "name": "run_shell_command",
                                                "response": {"output": output}}}]
    return call


TOKENS = {"input": 900, "output": 20, "cached": 100, "thoughts": 30, "tool": 5, "total": 955}


def session_file(tmp: Path, project: str = "proj", name: str = "session-2026-11-20T10-00-5f0e7c1a.jsonl") -> Path:
    chats = tmp / ".gemini" / "tmp" / project / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (tmp / ".gemini" / "tmp" / project / ".project_root").write_text("/work/proj")
    return chats / name


def source_of(path: Path, home: Path, kind: str = "gemini.chats") -> Source:
    return Source(client="gemini", kind=kind, path=str(path), root_type=RootType.HOME,
                  store_root=str(home / ".gemini" / "tmp"), found_by="home")


class Reader:
    """Runs one adapter over one file scan after scan, carrying the cursor like the pipeline."""

    def __init__(self, path: Path, home: Path, adapter: Any = None, kind: str = "gemini.chats") -> None:
        self.source = source_of(path, home, kind)
        self.adapter = adapter or GeminiChatsAdapter()
        self.cursor: bytes | None = None
        self.batches: list[Batch] = []

    def scan(self) -> list[Observation]:
        batches = list(self.adapter.acquire(self.source, self.cursor, AcquireContext()))
        self.batches = batches
        for batch in batches:
            if batch.cursor is not None:
                self.cursor = batch.cursor
        return [o for b in batches for o in b.observations]


def kinds(observations: list[Observation]) -> list[str]:
    out = []
    for o in observations:
        label = o.family.value + (f"/{o.stage.value}" if o.stage else "")
        out.append(label + (f":{o.role}" if o.role else "") + (f":{o.tool_name}" if o.tool_name else ""))
    return out


# ---------------------------------------------------------------- settling


def test_running_tool_call_is_held_then_emitted_once_with_its_result(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    path.write_bytes(rec(header()) + rec(user("u1", "go")) + rec(gemini("g1", calls=[shell("c1", "ls", "executing")])))
    reader = Reader(path, tmp_path)
    first = reader.scan()
    assert kinds(first) == ["session", "message:user"]
    assert reader.batches[-1].partial  # a held call: coverage is partial
    assert reader.scan() == []  # re-scan: still held, nothing new
    with path.open("ab") as fh:
        fh.write(rec(gemini("g1", calls=[shell("c1", "ls", "success", "a.txt")])))
    second = reader.scan()
    assert kinds(second) == ["tool/requested:run_shell_command", "tool/result:run_shell_command"]
    assert second[0].command == "ls" and second[1].result == "a.txt"
    with path.open("ab") as fh:  # tokens attached by re-appending the same message
        fh.write(rec(gemini("g1", calls=[shell("c1", "ls", "success", "a.txt")], tokens=TOKENS)))
    third = reader.scan()
    assert kinds(third) == ["usage"]
    usage = third[0].usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens,
            usage.reasoning_output_tokens, usage.total_tokens) == (905, 50, 100, 30, 955)
    assert reader.scan() == []


def test_a_later_entry_settles_a_call_that_never_finished(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    path.write_bytes(rec(header()) + rec(gemini("g1", calls=[shell("c1", "sleep 99", "executing")]))
                     + rec(user("u2", "stop")))
    out = Reader(path, tmp_path).scan()
    assert kinds(out) == ["session", "tool/requested:run_shell_command", "message:user"]
    assert out[1].attributes == {"status": "executing"}


def test_changed_entry_is_never_reemitted(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    path.write_bytes(rec(header()) + rec(gemini("g1", "first", calls=[shell("c1", "ls", "success", "x")])))
    reader = Reader(path, tmp_path)
    assert len(reader.scan()) == 4
    with path.open("ab") as fh:  # masked output and edited text: already emitted, stays as it was
        fh.write(rec(gemini("g1", "edited", calls=[shell("c1", "ls", "success", "<masked>")])))
    assert reader.scan() == []


def test_checkpoint_replaces_the_conversation_without_reemitting(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    path.write_bytes(rec(header()) + rec(user("u1", "one")) + rec(gemini("g1", "two")))
    reader = Reader(path, tmp_path)
    assert kinds(reader.scan()) == ["session", "message:user", "message:assistant"]
    checkpoint = {"$set": {"messages": [user("sum", "<state_snapshot>summary</state_snapshot>"), user("u1", "one"),
                                        gemini("g1", "two")], "lastUpdated": "x"}}
    with path.open("ab") as fh:
        fh.write(rec(checkpoint))
    assert [o.text for o in reader.scan()] == ["<state_snapshot>summary</state_snapshot>"]
    assert reader.scan() == []


def test_rewind_is_a_marker_and_emitted_activity_stays(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    path.write_bytes(rec(header()) + rec(user("u1", "one"))
                     + rec(gemini("g1", calls=[shell("c1", "rm x", "executing")])))
    reader = Reader(path, tmp_path)
    assert kinds(reader.scan()) == ["session", "message:user"]
    with path.open("ab") as fh:
        fh.write(rec({"$rewindTo": "u1"}) + rec(user("u3", "again")))
    out = reader.scan()
    # The running call happened before the rewind: it is settled and emitted, then the marker.
    assert kinds(out) == ["tool/requested:run_shell_command", "other", "message:user"]
    assert out[1].attributes == {"event": "rewind", "rewind_to": "u1"}
    assert reader.scan() == []


def test_a2a_server_sessions_are_keyed_by_file(tmp_path: Path) -> None:
    ids = []
    for name in ("session-2026-06-11T10-14-a2a-serv.jsonl", "session-2026-07-04T09-46-a2a-serv.jsonl"):
        path = session_file(tmp_path, name=name)
        path.write_bytes(rec(header("a2a-server")) + rec(user("same-id", "hello")))
        ids.append(Reader(path, tmp_path).scan())
    assert ids[0][1].session_id != ids[1][1].session_id
    assert ids[0][1].observation_id != ids[1][1].observation_id
    assert ids[0][1].session_id == "a2a-server:session-2026-06-11T10-14-a2a-serv"


def test_injected_session_context_is_marked(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    path.write_bytes(rec(header()) + rec(user("u0", "<session_context>\ncwd: /w\n</session_context>"))
                     + rec(user("u1", "real ask")))
    out = Reader(path, tmp_path).scan()
    assert [o.injected for o in out if o.family is Family.MESSAGE] == [True, False]


def test_oversized_value_quarantines_only_its_record(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    path.write_bytes(rec(header()) + rec(gemini("g1", calls=[shell("c1", "x" * 70_000, "success", "ok")]))
                     + rec(user("u2", "next")))
    reader = Reader(path, tmp_path)
    out = reader.scan()
    assert kinds(out) == ["session", "message:user"]
    quarantined = [q for b in reader.batches for q in b.quarantined]
    assert [(q.reason, q.field, q.line, q.record_id) for q in quarantined] == [
        ("unbounded_value", "arguments.command", 2, "g1")
    ]


def test_subagent_chat_links_its_parent(tmp_path: Path) -> None:
    sub = "9c4b2a10-7e6f-4d3c-8b5a-1f0e2d3c4b5a"
    path = session_file(tmp_path, name=f"{SID}/{sub}.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(rec(header(sub, "subagent")))
    (session,) = Reader(path, tmp_path).scan()
    assert (session.session_id, session.parent_session_id, session.cwd) == (sub, SID, "/work/proj")


# ---------------------------------------------------------------- whole-file stores


def test_legacy_json_session_rewritten_emits_only_the_new_and_keeps_ids_on_migration(tmp_path: Path) -> None:
    chats = session_file(tmp_path).parent
    legacy = chats / "session-2025-09-01T08-00-5f0e7c1a.json"
    doc: dict[str, Any] = {**header(), "messages": [user("u1", "one"), gemini("g1", "two", tokens=TOKENS)]}
    legacy.write_text(json.dumps(doc))
    reader = Reader(legacy, tmp_path, GeminiLegacyChatsAdapter(), "gemini.legacy_chats")
    first = reader.scan()
    assert kinds(first) == ["session", "message:user", "message:assistant", "usage"]
    assert reader.scan() == []
    doc["messages"].append(user("u2", "three"))
    legacy.write_text(json.dumps(doc, indent=1))
    assert [o.text for o in reader.scan()] == ["three"]
    # gemini-cli migrates a resumed .json to .jsonl with the same records: the same ids.
    migrated = chats / "session-2025-09-01T08-00-5f0e7c1a.jsonl"
    migrated.write_bytes(rec(header()) + b"".join(rec(m) for m in doc["messages"]))
    jsonl_ids = {o.observation_id for o in Reader(migrated, tmp_path).scan()}
    assert {o.observation_id for o in first} <= jsonl_ids


def test_legacy_json_mid_write_is_quarantined_and_retried(tmp_path: Path) -> None:
    legacy = session_file(tmp_path).parent / "session-2025-09-01T08-00-5f0e7c1a.json"
    legacy.write_text('{"sessionId": "x", "messages": [')
    reader = Reader(legacy, tmp_path, GeminiLegacyChatsAdapter(), "gemini.legacy_chats")
    assert reader.scan() == []
    assert [q.reason for b in reader.batches for q in b.quarantined] == ["malformed_json"]
    assert reader.cursor is None
    legacy.write_text(json.dumps({**header(), "messages": [user("u1", "one")]}))
    assert kinds(reader.scan()) == ["session", "message:user"]


def test_logs_json_prompts_once(tmp_path: Path) -> None:
    project = tmp_path / ".gemini" / "tmp" / "proj"
    project.mkdir(parents=True)
    logs = project / "logs.json"
    entries = [{"sessionId": SID, "messageId": 0, "type": "user", "message": "hi", "timestamp": "2026-11-20T10:00:00Z"}]
    logs.write_text(json.dumps(entries))
    reader = Reader(logs, tmp_path, GeminiLogsAdapter(), "gemini.logs")
    assert [o.text for o in reader.scan()] == ["hi"]
    entries.append({"sessionId": SID, "messageId": 1, "type": "user", "message": "there", "timestamp": None})
    logs.write_text(json.dumps(entries, indent=2))
    out = reader.scan()
    assert [o.text for o in out] == ["there"] and out[0].occurred_at is None
    assert reader.scan() == []


# ---------------------------------------------------------------- fixtures and discovery


def test_fixture_tree_every_record_kind() -> None:
    result = discover(DiscoveryOptions(root=str(FIXTURES), clients=("gemini",), env={}))
    by_kind: dict[str, list[Source]] = {}
    for s in result.sources:
        by_kind.setdefault(s.kind, []).append(s)
    assert {k: len(v) for k, v in by_kind.items()} == {"gemini.chats": 2, "gemini.legacy_chats": 1, "gemini.logs": 1}
    assert not any(s.path.endswith("checkpoint-before.json") for s in result.sources)
    main = next(s for s in by_kind["gemini.chats"] if "session-" in s.path)
    batches = list(GeminiChatsAdapter().acquire(main, None, AcquireContext()))
    out = [o for b in batches for o in b.observations]
    assert kinds(out) == [
        "session", "message:user", "tool/requested:run_shell_command", "tool/result:run_shell_command", "usage",
        "message:assistant", "usage", "tool/requested:read_file", "tool/result:read_file", "message:user", "other",
        "message:system",
    ]
    assert {o.cwd for o in out} == {"/home/dev/shop"}
    assert [(q.reason, q.line) for b in batches for q in b.quarantined] == [("malformed_json", 8),
                                                                         ("unknown_record_type", 9)]
    read = next(o for o in out if o.tool_name == "read_file" and o.stage is Stage.RESULT)
    assert read.is_error is True and read.result == "denied"


def windows_mapper(base: Path) -> Callable[[str], str]:
    def host(path: str) -> str:
        drive, rest = ntpath.splitdrive(path)
        parts = [drive.rstrip(":")] + [p for p in rest.replace("/", "\\").split("\\") if p]
        return str(base.joinpath(*[p for p in parts if p]))

    return host


def _populate(home: Path) -> None:
    shutil.copytree(FIXTURES / "gemini", home / ".gemini")
    noise = home / ".gemini" / "tmp" / "shop" / "tool-outputs" / "session-x"
    noise.mkdir(parents=True)
    (noise / "replace_1.jsonl").write_text("{}\n")
    (home / ".gemini" / "oauth_creds.json").write_text("{}")


@pytest.mark.parametrize("platform", ["linux", "darwin", "windows"])
def test_discovery_per_platform(tmp_path: Path, platform: str) -> None:
    if platform == "windows":
        env = {"USERPROFILE": "C:\\Users\\me"}
        _populate(tmp_path / "C" / "Users" / "me")
        result = discover(DiscoveryOptions(env=env, platform=platform, clients=("gemini",),
                                           host_path=windows_mapper(tmp_path)))
        prefix = "C:\\Users\\me\\.gemini\\tmp\\shop\\chats\\"
    else:
        home = tmp_path / "home"
        _populate(home)
        result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform=platform, clients=("gemini",)))
        prefix = str(home / ".gemini" / "tmp" / "shop" / "chats") + "/"
    assert result.errors == []
    assert sorted(s.kind for s in result.sources) == ["gemini.chats", "gemini.chats", "gemini.legacy_chats",
                                                      "gemini.logs"]
    assert any(s.path == prefix + "session-2026-11-20T10-00-5f0e7c1a.jsonl" for s in result.sources)


def test_discovery_gemini_cli_home_moves_the_store(tmp_path: Path) -> None:
    home, moved = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    _populate(moved)
    result = discover(DiscoveryOptions(env={"HOME": str(home), "GEMINI_CLI_HOME": str(moved)}, platform="linux",
                                       clients=("gemini",)))
    assert len(result.sources) == 4
    assert {s.found_by for s in result.sources} == {"env:GEMINI_CLI_HOME"}


# ---------------------------------------------------------------- end to end


def _digest(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_scan_end_to_end_rescan_emits_nothing_store_untouched_rules_fire(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _populate(home)
    before = _digest(home / ".gemini")
    out = tmp_path / "out"
    args = ["scan", "--once", "--root", str(home), "--client", "gemini", "--log-path", str(out / "e.jsonl"),
            "--state-path", str(out / "s.sqlite"), "--json"]
    first = json.loads(run_cli(args, home).stdout)
    events = read_events(out / "e.jsonl")
    rules = {e["rule"]["id"] for e in events if e["event"]["dataset"] == "telltale.detection"}
    assert "execution.download_pipe_shell" in rules  # on the run_shell_command request
    assert first["quarantined_count"] == 2 and first["scanner_error_count"] == 0
    second = json.loads(run_cli(args, home).stdout)
    assert second["emitted_count"] == 1  # the summary only
    assert _digest(home / ".gemini") == before


def test_credentials_beside_the_transcripts_are_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole scan in-process with every open recorded: oauth_creds.json and friends are
    never opened (discovery lists names; adapters open only their sources and the two
    project metadata files)."""
    home = tmp_path / "home"
    _populate(home)
    for name in ("gemini-credentials.json", "google_accounts.json", "mcp-oauth-tokens.json", "settings.json"):
        (home / ".gemini" / name).write_text("{}")
    opened: list[str] = []
    real_open, real_os_open, real_io_open = builtins.open, os.open, io.open

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def spy_os_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    from telltale.pipeline import Scanner, ScanOptions

    sources = discover(DiscoveryOptions(root=str(home), env={}, clients=("gemini",))).sources
    scanner = Scanner(ScanOptions(log_path=str(tmp_path / "o" / "e.jsonl"), state_path=str(tmp_path / "o" / "s.db")))
    try:
        result = scanner.scan(sources)
    finally:
        scanner.close()
        monkeypatch.setattr(builtins, "open", real_open)
        monkeypatch.setattr(io, "open", real_io_open)
        monkeypatch.setattr(os, "open", real_os_open)
    assert result.emitted_count > 10
    gemini_opened = {Path(p).name for p in opened if str(home) in p}
    assert gemini_opened  # the spy saw the transcripts being read
    assert not gemini_opened & {"oauth_creds.json", "gemini-credentials.json", "google_accounts.json",
                                "mcp-oauth-tokens.json", "checkpoint-before.json"}


def test_detection_rules_fire_on_gemini_file_and_web_tools(tmp_path: Path) -> None:
    """Facets, not tool names: a write to a shell profile, a private-key read and a paste
    site fetch by Gemini's own tools fire the same rules as any agent's."""
    from scan_helpers import scan_detections
    from telltale.detect.engine import DetectionEngine

    path = session_file(tmp_path)
    calls = [
        {"id": "w1", "name": "write_file", "args": {"file_path": "/home/u/.bashrc", "content": "export X=1\n"},
         "status": "success"},
        {"id": "r1", "name": "read_file", "args": {"absolute_path": "/home/u/.ssh/id_rsa"}, "status": "success",
         "result": [{"functionResponse": {"id": "r1", "response": {"output": "x"}}}]},
        {"id": "f1", "name": "web_fetch", "args": {"prompt": "get https://pastebin.com/raw/abc"}, "status": "success"},
    ]
    path.write_bytes(rec(header()) + rec(gemini("g1", calls=calls)))
    rules = scan_detections(tmp_path, tmp_path / "out", DetectionEngine.load())
    assert {"persistence.shell_profile", "secret.private_key.read", "exfil.paste_site"} <= set(rules)
