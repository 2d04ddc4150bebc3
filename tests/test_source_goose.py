"""Goose: sessions.db (sessions, messages, tool blocks, replaced conversations, usage
columns and ledger), legacy JSONL, discovery per platform and variable, and the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scan_helpers import read_events, run_cli

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_goose as fx
from build_crush import dir_state

from telltale.discovery import DiscoveryOptions, discover
from telltale.model import Family, Observation, Stage
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.goose import GooseLegacyAdapter, GooseSessionsAdapter
from telltale.sources.spec import RootType, Source


def source(path: Path, kind: str = "goose.sqlite") -> Source:
    return Source(client="goose", kind=kind, path=str(path), root_type=RootType.HOME, store_root=str(path.parent),
                  found_by="home")


def acquire(path: Path, cursor: bytes | None = None, history: HistoryMode = HistoryMode.INCREMENTAL) -> list[Batch]:
    return list(GooseSessionsAdapter().acquire(source(path), cursor, AcquireContext(history=history)))


def obs(batches: list[Batch]) -> list[Observation]:
    return [o for b in batches for o in b.observations]


def last_cursor(batches: list[Batch]) -> bytes | None:
    return [b.cursor for b in batches if b.cursor is not None][-1]


@pytest.fixture
def db(tmp_path: Path) -> fx.GooseDb:
    store = fx.GooseDb(tmp_path / ".local" / "share" / "goose" / "sessions" / "sessions.db")
    store.session("20251202_1")
    yield store
    store.close()


def test_a_turn_is_messages_a_shell_call_and_its_result(db: fx.GooseDb) -> None:
    db.turn("20251202_1", 1)
    got = obs(acquire(db.path))
    kinds = [(o.family, o.stage or o.role) for o in got]
    assert kinds == [(Family.SESSION, None), (Family.MESSAGE, "user"), (Family.TOOL, Stage.REQUESTED),
                     (Family.MESSAGE, "assistant"), (Family.TOOL, Stage.RESULT), (Family.MESSAGE, "assistant")]
    session, prompt, call, _reply, result, _done = got
    assert session.cwd == "/work/app" and session.occurred_at == "2025-12-02T16:58:55.000Z"
    assert (call.tool_name, call.command, call.call_id) == ("developer__shell", "ls -la /tmp/1", "toolu_1")
    assert (result.call_id, result.result, result.is_error) == ("toolu_1", "total 1", False)
    assert prompt.occurred_at is not None and prompt.cwd == "/work/app"


def test_result_shapes_and_errors(db: fx.GooseDb) -> None:
    db.add("20251202_1", "assistant", [fx.request("a", "developer__text_editor",
                                                  {"command": "write", "path": "/w/x.py", "file_text": "x"}),
                                       fx.request("b", "computercontroller__web_scrape", {"url": "https://e.invalid"})])
    db.add("20251202_1", "user", [fx.response("a", "ok", new_shape=True), fx.response("b", "", error="denied")])
    got = obs(acquire(db.path))
    calls = [o for o in got if o.stage is Stage.REQUESTED]
    assert [(c.file_path, c.url) for c in calls] == [("/w/x.py", None), (None, "https://e.invalid")]
    results = [o for o in got if o.stage is Stage.RESULT]
    assert [(r.call_id, r.result, r.is_error) for r in results] == [("a", "ok", False), ("b", "denied", True)]


def test_a_replaced_conversation_is_not_emitted_again(db: fx.GooseDb) -> None:
    db.turn("20251202_1", 1)
    first = acquire(db.path)
    db.replace("20251202_1")  # compaction / edit: same messages, new row ids
    db.turn("20251202_1", 2)
    second = acquire(db.path, last_cursor(first))
    assert [o.text for o in obs(second) if o.family is Family.MESSAGE] == ["list files 2", "listing 2", "done 2"]
    ids = [o.observation_id for o in obs(first) + obs(second)]
    assert len(ids) == len(set(ids))
    fresh = {o.observation_id for o in obs(acquire(db.path, history=HistoryMode.ALL))}
    assert fresh == set(ids)  # a replaced conversation keeps its ids


def test_session_token_columns_become_usage_growth(db: fx.GooseDb) -> None:
    db.turn("20251202_1", 1)
    db.tokens("20251202_1", 1200, 80)
    first = acquire(db.path)
    assert [(o.usage.input_tokens, o.usage.output_tokens) for o in obs(first) if o.usage] == [(1200, 80)]
    db.tokens("20251202_1", 2000, 130)
    second = acquire(db.path, last_cursor(first))
    assert [(o.usage.input_tokens, o.usage.output_tokens) for o in obs(second) if o.usage] == [(800, 50)]
    assert obs(acquire(db.path, last_cursor(second))) == []


def test_the_usage_ledger_wins_over_session_columns(tmp_path: Path) -> None:
    store = fx.GooseDb(tmp_path / "sessions.db", ledger=True)
    store.session("s")
    store.turn("s", 1)
    store.tokens("s", 999, 99)
    store.ledger("s", "claude-sonnet-4", 700, 40, 0.0123)
    store.ledger("s", "claude-sonnet-4", 300, 20, 0.005)
    first = acquire(store.path)
    usage = [o for o in obs(first) if o.usage]
    assert [(u.model, u.usage.input_tokens, u.attributes["cost_usd"]) for u in usage if u.usage] == [
        ("claude-sonnet-4", 700, "0.012300"), ("claude-sonnet-4", 300, "0.005000")]
    store.ledger("s", "claude-sonnet-4", 5, 5, 0.0)
    assert len([o for o in obs(acquire(store.path, last_cursor(first))) if o.usage]) == 1
    store.close()


def test_bad_rows_are_quarantined_and_the_rest_goes_through(db: fx.GooseDb) -> None:
    db.add("20251202_1", "user", [fx.text("before")])
    db.conn.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp)"
                    " VALUES ('20251202_1', 'user', '[{\"type\": ', ?)", (fx.T0 + 10,))
    db.conn.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp)"
                    " VALUES ('20251202_1', 'user', '{\"not\": \"a list\"}', ?)", (fx.T0 + 11,))
    db.clock = fx.T0 + 20
    db.add("20251202_1", "user", [fx.text("after")])
    batches = acquire(db.path)
    assert [o.text for o in obs(batches) if o.family is Family.MESSAGE] == ["before", "after"]
    assert [q.reason for b in batches for q in b.quarantined] == ["malformed_json", "schema_mismatch"]


_block = st.one_of(
    st.builds(fx.text, st.text(max_size=20)),
    st.builds(fx.request, st.uuids().map(str), st.sampled_from(["developer__shell", "x__y"]),
              st.dictionaries(st.sampled_from(["command", "path", "url"]), st.text(max_size=10))),
    st.builds(fx.response, st.uuids().map(str), st.text(max_size=20), new_shape=st.booleans()),
    st.just({"type": "thinking", "thinking": "hm", "signature": "s"}),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.lists(_block, max_size=4)),
                     min_size=1, max_size=8), split=st.integers(min_value=0, max_value=8))
def test_any_messages_are_emitted_once_across_scans(tmp_path_factory: pytest.TempPathFactory,
                                                    rows: list[tuple[str, list[dict[str, object]]]],
                                                    split: int) -> None:
    store = fx.GooseDb(tmp_path_factory.mktemp("g") / "sessions.db", wal=False)
    store.session("s")
    for role, content in rows[:split]:
        store.add("s", role, content)
    first = acquire(store.path)
    for role, content in rows[split:]:
        store.add("s", role, content)
    second = acquire(store.path, last_cursor(first))
    store.close()
    got = obs(first) + obs(second)
    assert not [q for b in first + second for q in b.quarantined]
    calls = sum(1 for _, c in rows for b in c if b["type"] == "toolRequest")
    results = sum(1 for _, c in rows for b in c if b["type"] == "toolResponse")
    assert len([o for o in got if o.stage is Stage.REQUESTED]) == calls
    assert len([o for o in got if o.stage is Stage.RESULT]) == results
    assert len({o.observation_id for o in got}) == len(got)
    assert {o.observation_id for o in got} == {o.observation_id for o in obs(acquire(store.path,
                                                                                     history=HistoryMode.ALL))}


def test_legacy_jsonl_is_read_unless_a_database_replaced_it(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    path = fx.legacy_file(sessions / "20250101_1.jsonl", "/work/old", [
        ("user", [fx.text("hello")]),
        ("assistant", [fx.request("t1", "developer__shell", {"command": "whoami"})]),
        ("user", [fx.response("t1", "dev")]),
    ])
    src = source(path, "goose.legacy")
    got = obs(list(GooseLegacyAdapter().acquire(src, None, AcquireContext())))
    assert [(o.family, o.stage or o.role) for o in got] == [
        (Family.SESSION, None), (Family.USAGE, None), (Family.MESSAGE, "user"), (Family.TOOL, Stage.REQUESTED),
        (Family.TOOL, Stage.RESULT)]
    assert {o.session_id for o in got} == {"20250101_1"} and got[3].command == "whoami" and got[3].cwd == "/work/old"
    fx.GooseDb(sessions / "sessions.db", wal=False).close()
    assert obs(list(GooseLegacyAdapter().acquire(src, None, AcquireContext()))) == []


@pytest.mark.parametrize(("platform", "env", "relative"), [
    ("linux", {}, ".local/share/goose/sessions"),
    ("darwin", {}, ".local/share/goose/sessions"),
    ("linux", {"XDG_DATA_HOME": "{tmp}/xdg"}, "../xdg/goose/sessions"),
    ("linux", {"GOOSE_PATH_ROOT": "{tmp}/root"}, "../root/data/sessions"),
])
def test_discovery_per_platform_and_variable(tmp_path: Path, platform: str, env: dict[str, str],
                                             relative: str) -> None:
    home = tmp_path / "home"
    db = (home / relative / "sessions.db").resolve()
    fx.GooseDb(db, wal=False).close()
    environ = {"HOME": str(home), **{k: v.format(tmp=tmp_path) for k, v in env.items()}}
    found = discover(DiscoveryOptions(root=".", clients=("goose",), env=environ, platform=platform)).sources
    assert [(s.kind, s.path) for s in found] == [("goose.sqlite", str(db))]


def test_discovery_on_windows_under_appdata(tmp_path: Path) -> None:
    from test_discovery_roots import windows_mapper

    mapper = windows_mapper(tmp_path)
    db = Path(mapper(r"C:\Users\me\AppData\Roaming\Block\goose\data\sessions\sessions.db"))
    fx.GooseDb(db, wal=False).close()
    found = discover(DiscoveryOptions(root=".", clients=("goose",), platform="windows", host_path=mapper,
                                      env={"USERPROFILE": r"C:\Users\me", "APPDATA": r"C:\Users\me\AppData\Roaming"}))
    assert [s.path for s in found.sources] == [r"C:\Users\me\AppData\Roaming\Block\goose\data\sessions\sessions.db"]


def test_cli_new_rows_exactly_once_and_the_store_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = fx.GooseDb(home / ".local" / "share" / "goose" / "sessions" / "sessions.db")  # WAL, stays open
    store.session("20251202_1")
    store.turn("20251202_1", 1)
    store.tokens("20251202_1", 100, 10)
    out = tmp_path / "out"
    args = ["scan", "--once", "--root", str(home), "--client", "goose", "--log-path", str(out / "e.jsonl"),
            "--state-path", str(out / "s.sqlite"), "--json"]
    directory = store.path.parent
    before = dir_state(directory)
    assert json.loads(run_cli(args, home).stdout)["scanner_error_count"] == 0
    assert dir_state(directory) == before
    store.replace("20251202_1")
    store.turn("20251202_1", 2)
    store.tokens("20251202_1", 300, 25)
    before = dir_state(directory)
    run_cli(args, home)
    assert dir_state(directory) == before
    store.close()
    events = [e for e in read_events(out / "e.jsonl") if e["event"]["dataset"] == "telltale.activity"]
    ids = [e["event"]["id"] for e in events]
    assert len(ids) == len(set(ids))
    actions = [e["event"]["action"] for e in events]
    assert actions.count("message") == 6 and actions.count("tool_call") == 2 and actions.count("tool_result") == 2
    assert actions.count("usage") == 2 and actions.count("session") == 1
