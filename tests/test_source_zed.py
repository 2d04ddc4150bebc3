"""Zed agent threads: discovery per platform, rows of JSON and zstd JSON, per-row diffs
across rewrites (each fact once, a vanished message reported, never re-emitted),
cumulative usage as deltas, quarantine per row, an unknown schema reported
``unsupported``, and exactly-once acquisition through the real CLI with the database
untouched.

No real Zed thread could be used (the one public sample is under a non-commercial
licence); rows follow the shape it and public parsers show (docs/sources/zed.md)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from more_agents import acquire, actions, activity, observations, scan, tree_digest
from telltale.discovery import DiscoveryOptions, discover
from telltale.errors import UnsupportedSource
from telltale.model import Family, Stage

TID = "0f9e8d7c-6b5a-4321-8fed-cba987654321"
SCHEMA = ("CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL,"
          " data_type TEXT NOT NULL, data BLOB NOT NULL, parent_id TEXT, folder_paths TEXT,"
          " folder_paths_order TEXT, created_at TEXT)")


def user(uid: str, text: str) -> dict[str, Any]:
    return {"User": {"id": uid, "content": [{"Text": text}]}}


def agent(*parts: dict[str, Any], results: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"Agent": {"content": list(parts), "tool_results": results or {}, "reasoning_details": None}}


def tool_use(cid: str, name: str, args: dict[str, Any], complete: bool = True) -> dict[str, Any]:
    return {"ToolUse": {"id": cid, "name": name, "raw_input": json.dumps(args), "input": args,
                        "is_input_complete": complete}}


def result(cid: str, name: str, text: str, error: bool = False) -> dict[str, Any]:
    return {cid: {"tool_use_id": cid, "tool_name": name, "is_error": error, "content": {"Text": text},
                  "output": None}}


def conversation() -> list[dict[str, Any]]:
    return [
        user("u-1", "why is CI red?"),
        agent({"Thinking": {"text": "check", "signature": None}}, {"Text": "Let me look."},
              tool_use("terminal-1", "terminal", {"command": "cat ~/.aws/credentials", "cd": "/home/dev/app"}),
              tool_use("read_file-2", "read_file", {"path": "app/ci.yml"}),
              results={**result("terminal-1", "terminal", "[default]"),
                       **result("read_file-2", "read_file", "x", True)}),
        agent({"Text": "The token expired."}),
        user("u-2", "fix it"),
        agent(tool_use("edit_file-3", "edit_file", {"path": "app/ci.yml", "mode": "edit",
                                                    "display_description": "bump"}),
              results=result("edit_file-3", "edit_file", "edited")),
    ]


def doc(messages: list[dict[str, Any]], usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {"title": "CI", "messages": messages, "updated_at": "2026-09-01T10:00:00Z", "version": "0.3.0",
            "detailed_summary": None,
            "initial_project_snapshot": {"worktree_snapshots": [{"worktree_path": "/home/dev/app", "git_state": None}],
                                         "timestamp": "2026-09-01T09:59:00Z"},
            "cumulative_token_usage": usage or {"input_tokens": 100, "output_tokens": 20,
                                                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            "request_token_usage": {}, "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
            "completion_mode": "normal", "profile": "write", "imported": False}


def put(db: Path, tid: str, document: dict[str, Any] | bytes, *, zstd: bool = True, stamp: str = "1",
        data_type: str | None = None) -> None:
    db.parent.mkdir(parents=True, exist_ok=True)
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    data = zstandard.ZstdCompressor().compress(raw) if zstd else raw
    with sqlite3.connect(db) as conn:
        conn.execute(SCHEMA.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
        conn.execute("INSERT OR REPLACE INTO threads VALUES (?, ?, ?, ?, ?, NULL, ?, NULL, ?)",
                     (tid, "CI", f"2026-09-01T10:00:0{stamp}.123456789Z", data_type or ("zstd" if zstd else "json"),
                      data, "/home/dev/app", "2026-09-01T09:59:00Z"))
    conn.close()


def zed_db(home: Path) -> Path:
    return home / ".local" / "share" / "zed" / "threads" / "threads.db"


def test_discovery_per_platform_and_environment(tmp_path: Path) -> None:
    layouts = {
        "linux": tmp_path / "l" / ".local/share/zed/threads/threads.db",
        "darwin": tmp_path / "m" / "Library/Application Support/Zed/threads/threads.db",
    }
    for platform, db in layouts.items():
        put(db, TID, doc([]))
        home = db.parents[4]  # the home above .local/share/zed/threads or Library/Application Support/Zed
        found = discover(DiscoveryOptions(env={"HOME": str(home)}, platform=platform, clients=("zed",)))
        assert [s.path for s in found.sources] == [str(db)], platform
    xdg = tmp_path / "xdg" / "zed" / "threads" / "threads.db"
    put(xdg, TID, doc([]))
    found = discover(DiscoveryOptions(env={"HOME": str(tmp_path / "none"), "XDG_DATA_HOME": str(tmp_path / "xdg")},
                                      platform="linux", clients=("zed",)))
    assert [(s.path, s.found_by) for s in found.sources] == [(str(xdg), "env:XDG_DATA_HOME")]


def count(obs: list[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in obs:
        key = o.family.value if o.stage is None else o.stage.value
        out[key] = out.get(key, 0) + 1
    return out


@pytest.mark.parametrize("compressed", [True, False])
def test_rows_of_zstd_and_plain_json(tmp_path: Path, compressed: bool) -> None:
    db = tmp_path / "threads.db"
    msgs = conversation()
    put(db, TID, doc(msgs), zstd=compressed)
    batches, _ = acquire("zed.threads", db)
    obs = observations(batches)
    # Independent counts from the document.
    users = sum("User" in m for m in msgs)
    agent_texts = sum(any("Text" in p for p in m["Agent"]["content"]) for m in msgs if "Agent" in m)
    calls = sum(1 for m in msgs if "Agent" in m for p in m["Agent"]["content"] if "ToolUse" in p)
    results_ = sum(len(m["Agent"]["tool_results"]) for m in msgs if "Agent" in m)
    assert count(obs) == {"session": 1, "message": users + agent_texts, "requested": calls, "result": results_,
                          "usage": 1}
    requested = {o.call_id: o for o in obs if o.stage is Stage.REQUESTED}
    assert requested["terminal-1"].command == "cat ~/.aws/credentials"
    assert requested["read_file-2"].file_path == "app/ci.yml" and requested["read_file-2"].file_access == "read"
    assert requested["edit_file-3"].file_access == "write" and requested["edit_file-3"].model == "claude-sonnet-4-5"
    done = {o.call_id: o for o in obs if o.stage is Stage.RESULT}
    assert done["terminal-1"].result == "[default]" and done["read_file-2"].is_error is True
    assert {o.cwd for o in obs} == {"/home/dev/app"} and {o.session_id for o in obs} == {TID}
    assert obs[0].occurred_at == "2026-09-01T09:59:00.000Z" and obs[0].attributes == {"title": "CI"}


def test_rewrites_emit_each_fact_once_and_report_vanished(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    msgs = conversation()
    streaming = agent(tool_use("edit_file-3", "edit_file", {"path": "app/"}, complete=False))
    put(db, TID, doc([*msgs[:4], streaming]), stamp="1")
    first, cursor = acquire("zed.threads", db)
    assert "edit_file-3" not in {o.call_id for o in observations(first)}  # input still streaming
    put(db, TID, doc(msgs, {"input_tokens": 250, "output_tokens": 60}), stamp="2")
    second, cursor = acquire("zed.threads", db, cursor)
    assert count(observations(second)) == {"requested": 1, "result": 1, "usage": 1}
    delta = next(o for o in observations(second) if o.family is Family.USAGE).usage
    assert delta is not None and delta.input_tokens == 150 and delta.output_tokens == 40
    put(db, TID, doc(msgs[:2], {"input_tokens": 250, "output_tokens": 60}), stamp="3")  # edited back
    third, cursor = acquire("zed.threads", db, cursor)
    assert observations(third) == []
    assert [(h.reason, h.fields["vanished"]) for b in third for h in b.health] == [("source_reordered", 4)]
    fourth, _ = acquire("zed.threads", db, cursor)  # unchanged row: not even read
    assert observations(fourth) == [] and sum(b.records_read for b in fourth) == 0


def test_bad_rows_quarantined_alone_and_once(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    put(db, "bad-json", b"{not json", zstd=False)
    put(db, "bad-zstd", b"\x28\xb5\x2f\xfd garbage", zstd=False, data_type="zstd")
    put(db, "odd-type", doc([]), zstd=False, data_type="msgpack")
    put(db, TID, doc(conversation()))
    batches, cursor = acquire("zed.threads", db)
    reasons = sorted((q.session_id or "", q.reason) for b in batches for q in b.quarantined)
    assert reasons == [("bad-json", "malformed_json"), ("bad-zstd", "undecodable_row"),
                       ("odd-type", "undecodable_row")]
    assert len([o for o in observations(batches) if o.stage is Stage.REQUESTED]) == 3
    again, _ = acquire("zed.threads", db, cursor)
    assert [q for b in again for q in b.quarantined] == []


def test_unknown_schema_is_unsupported(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE threads (id TEXT, blob BLOB)")
    conn.close()
    with pytest.raises(UnsupportedSource) as info:
        acquire("zed.threads", db)
    assert info.value.reason == "unknown_format"


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=5), max_size=3))
def test_any_sequence_of_row_rewrites_gives_the_ids_of_one_read(tmp_path_factory: Any, cuts: list[int]) -> None:
    root = tmp_path_factory.mktemp("zed")
    msgs = conversation()
    put(root / "a.db", TID, doc(msgs))
    # Usage is a delta of the running totals (its ids depend on the totals seen), so the
    # facts are compared: the same ids, each once, whatever rewrites came in between.
    once = observations(acquire("zed.threads", root / "a.db")[0])
    expected = sorted(o.observation_id for o in once if o.family is not Family.USAGE)
    cursor: bytes | None = None
    got: list[str] = []
    for n, cut in enumerate([*sorted(set(cuts)), len(msgs)]):
        put(root / "b.db", TID, doc(msgs[:cut]), stamp=str(n))
        batches, cursor = acquire("zed.threads", root / "b.db", cursor)
        got += [o.observation_id for o in observations(batches) if o.family is not Family.USAGE]
    assert sorted(got) == expected


def test_cli_exactly_once_across_row_rewrites_database_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = zed_db(home)
    msgs = conversation()
    put(db, TID, doc(msgs[:3]), stamp="1")
    out = tmp_path / "out"
    before = tree_digest(home)
    first = activity(scan(home, out, "zed"))
    assert tree_digest(home) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["threads.db"]  # no -wal, -shm or -journal
    assert actions(first) == {"session": 1, "message": 3, "tool_call": 2, "tool_result": 2, "usage": 1}
    assert activity(scan(home, out, "zed")) == []
    put(db, TID, doc(msgs, {"input_tokens": 300, "output_tokens": 50}), stamp="2")
    second = activity(scan(home, out, "zed"))
    assert actions(second) == {"message": 1, "tool_call": 1, "tool_result": 1, "usage": 1}
    ids = [e["event"]["id"] for e in first + second]
    assert len(ids) == len(set(ids))
    assert sum(e["gen_ai"]["usage"]["output_tokens"] for e in first + second if e["event"]["action"] == "usage") == 50
    assert any(e["event"]["dataset"] == "telltale.detection" for e in first)
