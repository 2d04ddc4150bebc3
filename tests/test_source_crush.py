"""Crush ``crush.db``: parts (JSON and zstd), settling of streamed rows, session usage,
quarantine, the project index, discovery and exactly-once through the real CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scan_helpers import read_events, run_cli

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_crush as fx

from telltale.discovery import DiscoveryOptions, discover
from telltale.model import Family, Observation, Stage
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.crush import CrushAdapter
from telltale.sources.crush.adapter import MAX_ROW_BYTES
from telltale.sources.spec import RootType, Source


def source(path: Path) -> Source:
    return Source(client="crush", kind="crush.sqlite", path=str(path), root_type=RootType.PROJECT_LOCAL,
                  store_root=str(path.parent), found_by="project:projects")


def acquire(path: Path, cursor: bytes | None = None, history: HistoryMode = HistoryMode.INCREMENTAL) -> list[Batch]:
    return list(CrushAdapter().acquire(source(path), cursor, AcquireContext(history=history)))


def obs(batches: list[Batch]) -> list[Observation]:
    return [o for b in batches for o in b.observations]


def cursor_of(batches: list[Batch]) -> bytes | None:
    cursors = [b.cursor for b in batches if b.cursor is not None]
    return cursors[-1] if cursors else None


@pytest.fixture
def db(tmp_path: Path) -> fx.CrushDb:
    store = fx.CrushDb(tmp_path / "app" / ".crush" / "crush.db")
    store.session("s1")
    yield store
    store.close()


def test_a_turn_is_prompt_call_result_and_answer(db: fx.CrushDb) -> None:
    db.turn("s1", 1)
    got = obs(acquire(db.path))
    kinds = [(o.family, o.stage or o.role) for o in got]
    assert kinds == [(Family.SESSION, None), (Family.MESSAGE, "user"), (Family.TOOL, Stage.REQUESTED),
                     (Family.MESSAGE, "assistant"), (Family.TOOL, Stage.RESULT), (Family.MESSAGE, "assistant")]
    session, prompt, call, reply, result, _answer = got
    assert prompt.text == "run step 1" and prompt.occurred_at == "2026-01-02T03:38:27.000Z"  # Unix seconds
    assert (call.tool_name, call.command, call.call_id) == ("bash", "echo 1", "call-s1-1")
    assert (result.call_id, result.result, result.is_error) == ("call-s1-1", "1\n", False)
    assert (reply.model, reply.provider) == ("qwen/qwen3-coder", "openrouter")
    assert session.session_id == "s1" and session.cwd == str(db.path.parent.parent)
    assert {o.attributes["project_store"] for o in got} == {"no_git"}


def test_zstd_parts_are_read_like_json(db: fx.CrushDb) -> None:
    db.turn("s1", 1)
    db.turn("s1", 2, zstd=True)
    plain = [o for o in obs(acquire(db.path)) if o.family is not Family.SESSION]
    assert [o.text for o in plain if o.family is Family.MESSAGE] == [
        "run step 1", "running 1", "done 1", "run step 2", "running 2", "done 2"]
    assert [o.command for o in plain if o.stage is Stage.REQUESTED] == ["echo 1", "echo 2"]


def test_a_streaming_reply_is_emitted_once_when_settled(db: fx.CrushDb) -> None:
    db.message("u1", "s1", "user", [fx.text("hi")])
    db.message("a1", "s1", "assistant", [fx.text("thin")], model="m")
    first = acquire(db.path)
    assert [o.text for o in obs(first) if o.family is Family.MESSAGE] == ["hi"]
    assert first[-1].partial
    db.update("a1", [fx.text("thinking done"), fx.finish()])
    second = acquire(db.path, cursor_of(first))
    assert [o.text for o in obs(second)] == ["thinking done"]
    db.update("a1", [fx.text("edited afterwards"), fx.finish()])  # a settled row never comes back
    db.message("a2", "s1", "assistant", [fx.text("stuck")], model="m")  # abandoned: never finished
    db.message("u2", "s1", "user", [fx.text("next")])  # a later row settles a2
    third = acquire(db.path, cursor_of(second))
    assert [o.text for o in obs(third) if o.family is Family.MESSAGE] == ["stuck", "next"]
    assert obs(acquire(db.path, cursor_of(third))) == []


def test_session_usage_is_emitted_as_growth_once(db: fx.CrushDb) -> None:
    db.turn("s1", 1)
    db.tokens("s1", 1000, 100, 0.01)
    first = acquire(db.path)
    usage = [o for o in obs(first) if o.family is Family.USAGE]
    assert [(u.usage.input_tokens, u.usage.output_tokens) for u in usage if u.usage] == [(1000, 100)]
    assert usage[0].attributes["usage_scope"] == "session_delta" and usage[0].model == "qwen/qwen3-coder"
    db.tokens("s1", 2500, 130, 0.02)
    second = acquire(db.path, cursor_of(first))
    assert [(u.usage.input_tokens, u.usage.output_tokens) for u in obs(second) if u.usage] == [(1500, 30)]
    assert obs(acquire(db.path, cursor_of(second))) == []
    whole = [o for o in obs(acquire(db.path, history=HistoryMode.ALL)) if o.usage]
    assert [(u.usage.input_tokens, u.usage.output_tokens) for u in whole if u.usage] == [(2500, 130)]


def test_bad_rows_are_quarantined_and_the_rest_goes_through(db: fx.CrushDb) -> None:
    db.message("u1", "s1", "user", [fx.text("before")])
    db.conn.execute("INSERT INTO messages (id, session_id, role, parts, created_at, updated_at)"
                    " VALUES ('bad-json', 's1', 'user', '[{\"type\": ', 1, 1)")
    db.conn.execute("INSERT INTO messages (id, session_id, role, parts, created_at, updated_at)"
                    " VALUES ('bad-zstd', 's1', 'user', ?, 1, 1)", (b"\x28\xb5\x2f\xfd garbage",))
    db.conn.execute("INSERT INTO messages (id, session_id, role, parts, created_at, updated_at)"
                    " VALUES ('huge', 's1', 'user', ?, 1, 1)", ("[" + " " * MAX_ROW_BYTES + "]",))
    db.message("u2", "s1", "user", [fx.text("after")])
    batches = acquire(db.path)
    assert [o.text for o in obs(batches) if o.family is Family.MESSAGE] == ["before", "after"]
    assert sorted((q.reason, q.record_id) for b in batches for q in b.quarantined) == [
        ("malformed_json", "bad-json"), ("malformed_zstd", "bad-zstd"), ("unbounded_value", "huge")]


_part = st.one_of(
    st.builds(fx.text, st.text(max_size=30)),
    st.builds(fx.tool_call, st.uuids().map(str), st.sampled_from(["bash", "view", "edit", "fetch", "x"]),
              st.dictionaries(st.sampled_from(["command", "file_path", "url", "n"]), st.text(max_size=10))),
    st.builds(fx.tool_result, st.uuids().map(str), st.sampled_from(["bash", "view"]), st.text(max_size=30),
              st.booleans()),
    st.just(fx.finish()),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), st.lists(_part, max_size=4),
                               st.booleans()), min_size=1, max_size=8))
def test_any_parts_are_emitted_once_with_their_counts(tmp_path_factory: pytest.TempPathFactory,
                                                      rows: list[tuple[str, list[dict[str, Any]], bool]]) -> None:
    store = fx.CrushDb(tmp_path_factory.mktemp("p") / ".crush" / "crush.db", wal=False)
    store.session("s")
    for i, (role, parts, zstd) in enumerate(rows):
        store.message(f"m{i}", "s", role, parts, zstd=zstd, model="m")
    store.close()
    batches = acquire(store.path, history=HistoryMode.ALL)
    got = obs(batches)
    assert not [q for b in batches for q in b.quarantined]
    settled = [(role, parts) for i, (role, parts, _) in enumerate(rows)
               if role != "assistant" or i < len(rows) - 1 or any(p["type"] == "finish" for p in parts)]
    calls = sum(1 for _, parts in settled for p in parts if p["type"] == "tool_call")
    results = sum(1 for _, parts in settled for p in parts if p["type"] == "tool_result")
    texts = sum(1 for role, parts in settled if role != "tool" and any(p["type"] == "text" and p["data"]["text"]
                                                                        for p in parts))
    assert len([o for o in got if o.stage is Stage.REQUESTED]) == calls
    assert len([o for o in got if o.stage is Stage.RESULT]) == results
    assert len([o for o in got if o.family is Family.MESSAGE]) == texts
    assert len({o.observation_id for o in got}) == len(got)


def test_databases_are_found_in_project_roots_and_through_the_index(tmp_path: Path) -> None:
    home = tmp_path / "home"
    in_root = home / "projects" / "app" / ".crush" / "crush.db"
    elsewhere = tmp_path / "work" / "svc" / ".crush" / "crush.db"
    custom = tmp_path / "work" / "other" / "state" / "crush.db"
    for path in (in_root, elsewhere, custom):
        fx.CrushDb(path, wal=False).close()
    index = home / ".local" / "share" / "crush" / "projects.json"
    index.parent.mkdir(parents=True)
    index.write_text(json.dumps({"projects": [
        {"path": str(elsewhere.parent.parent), "data_dir": ".crush", "last_accessed": "2026-03-01T10:00:00Z"},
        {"path": str(custom.parent.parent), "data_dir": str(custom.parent)},
        {"path": str(tmp_path / "gone"), "data_dir": ".crush"},
        {"bogus": 1},
    ]}))
    found = discover(DiscoveryOptions(root=str(home), clients=("crush",), env={})).sources
    assert sorted((s.path, s.found_by) for s in found) == sorted([
        (str(in_root), "project:projects"), (str(elsewhere), "crush_index"), (str(custom), "crush_index")])
    env_index = tmp_path / "g" / "projects.json"
    env_index.parent.mkdir()
    env_index.write_text(json.dumps({"projects": [{"path": str(elsewhere.parent.parent)}]}))
    result = discover(DiscoveryOptions(root=".", clients=("crush",), env={"HOME": str(tmp_path / "nohome"),
                                                                          "CRUSH_GLOBAL_DATA": str(env_index.parent)}))
    assert [s.path for s in result.sources] == [str(elsewhere)]


def test_a_malformed_index_is_an_issue_not_a_crash(tmp_path: Path) -> None:
    home = tmp_path / "home"
    index = home / ".local" / "share" / "crush" / "projects.json"
    index.parent.mkdir(parents=True)
    index.write_bytes(b"{not json" + b"[" * 5000)
    assert discover(DiscoveryOptions(root=str(home), clients=("crush",), env={})).sources == []
    index.unlink()
    index.symlink_to(tmp_path)
    result = discover(DiscoveryOptions(root=str(home), clients=("crush",), env={}))
    assert result.sources == [] and [e.reason for e in result.errors] == ["symlink"]


def test_cli_acquires_row_updates_exactly_once_and_leaves_the_store_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = fx.CrushDb(home / "projects" / "app" / ".crush" / "crush.db")  # WAL, writer stays open
    store.session("s1")
    store.turn("s1", 1, zstd=True)
    store.message("a-live", "s1", "assistant", [fx.text("partial")], model="m")
    store.tokens("s1", 500, 50, 0.001)
    out = tmp_path / "out"
    args = ["scan", "--once", "--root", str(home), "--client", "crush", "--log-path", str(out / "e.jsonl"),
            "--state-path", str(out / "s.sqlite"), "--json"]
    directory = store.path.parent
    before = fx.dir_state(directory)
    assert json.loads(run_cli(args, home).stdout)["scanner_error_count"] == 0
    assert fx.dir_state(directory) == before  # nothing written, created or touched (-wal, -shm included)
    store.update("a-live", [fx.text("complete"), fx.finish()])
    store.turn("s1", 2)
    store.tokens("s1", 900, 80, 0.002)
    before = fx.dir_state(directory)
    run_cli(args, home)
    assert fx.dir_state(directory) == before
    assert json.loads(run_cli(args, home).stdout)["emitted_count"] == 1  # the scan summary only
    store.close()
    events = [e for e in read_events(out / "e.jsonl") if e["event"]["dataset"] == "telltale.activity"]
    ids = [e["event"]["id"] for e in events]
    assert len(ids) == len(set(ids))
    actions = [e["event"]["action"] for e in events]
    assert actions.count("message") == 7 and actions.count("tool_call") == 2 and actions.count("tool_result") == 2
    assert actions.count("usage") == 2 and actions.count("session") == 1
