"""OpenCode adapter: schema choice and the mapping of native rows (OC-ACQ-*)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_opencode as fx

from telltale.errors import SourceError
from telltale.model import AUTHORED_TEXT_BOUND, Family, Stage, TokenUsage
from telltale.sources import registry
from telltale.sources.opencode import SPECS, OpenCodeAdapter, native
from telltale.sources.opencode.adapter import decode_cursor

MAIN = "ses_demo_main"
CHILD = "ses_demo_child"


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    return fx.build(tmp_path / "opencode.db", "legacy")


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    return fx.build(tmp_path / "opencode.db", "v2")


def add_message(db: Path, mid: str, data: dict[str, Any], parts: list[dict[str, Any]] = (),  # type: ignore[assignment]
                *, session: str = MAIN, t: int = 1785420070000) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, session, t, t, json.dumps(data)))
    for i, part in enumerate(parts):
        conn.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                     (f"{mid}_p{i}", mid, session, t + i + 1, t + i + 1, json.dumps(part)))
    conn.close()


# -- registry and schema choice ------------------------------------------------------------
def test_registry_resolves_the_adapter_and_keeps_the_spec() -> None:
    assert [s.kind for s in SPECS] == ["opencode.sqlite"]
    assert isinstance(registry.adapter_for("opencode.sqlite"), OpenCodeAdapter)
    assert registry.spec_for("opencode.sqlite").file_patterns == ("opencode.db",)


def test_OC_ACQ_1_legacy_store_is_read_through_message_and_part(legacy: Path) -> None:
    got = fx.acquire(legacy)
    assert decode_cursor(got.cursor).schema == "legacy"  # type: ignore[union-attr]
    assert {o.session_id for o in got.observations} == {MAIN, CHILD}


def test_OC_ACQ_1_v2_only_store_is_read_through_session_message(v2: Path) -> None:
    got = fx.acquire(v2)
    assert decode_cursor(got.cursor).schema == "v2"  # type: ignore[union-attr]
    assert {o.session_id for o in got.observations} == {"ses_v2_main"}
    assert got.of(family=Family.SESSION)[0].cwd == "/home/dev/v2"  # from session_v2.directory


def test_OC_ACQ_2_complete_v2_tables_take_precedence_over_legacy(tmp_path: Path) -> None:
    got = fx.acquire(fx.build(tmp_path / "opencode.db", "both"))
    assert decode_cursor(got.cursor).schema == "v2"  # type: ignore[union-attr]
    # One schema per scan: nothing of the legacy rows is read beside the v2 ones.
    assert {o.session_id for o in got.observations} == {"ses_v2_main"}
    assert got.of(family=Family.SESSION)[0].cwd == "/home/dev/v2"  # v1 `session` table serves v2 too


def test_OC_ACQ_2_empty_or_incomplete_session_message_is_not_complete_v2(tmp_path: Path) -> None:
    # The real v1.16 layout: session_message exists but is empty.
    empty_v2 = fx.acquire(fx.build(tmp_path / "a" / "opencode.db", "legacy"))
    # Mid-migration: an early session_message without the `type` column (and one row).
    incomplete = fx.acquire(fx.build(tmp_path / "b" / "opencode.db", "mid_migration"))
    for got in (empty_v2, incomplete):
        assert decode_cursor(got.cursor).schema == "legacy"  # type: ignore[union-attr]
    assert [o.observation_id for o in empty_v2.observations] == [o.observation_id for o in incomplete.observations]


def test_empty_database_file_yields_nothing_and_unknown_tables_fail(tmp_path: Path) -> None:
    empty = tmp_path / "empty" / "opencode.db"
    empty.parent.mkdir()
    sqlite3.connect(empty).close()
    got = fx.acquire(empty)
    assert got.observations == [] and got.cursor is None
    other = tmp_path / "other" / "opencode.db"
    other.parent.mkdir()
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE unrelated (x)")
    conn.close()
    with pytest.raises(SourceError) as err:
        fx.acquire(other)
    assert err.value.reason == "schema"


# -- legacy mapping --------------------------------------------------------------------------
def test_OC_ACQ_10_all_roles_and_tool_records_are_acquired(legacy: Path) -> None:
    got = fx.acquire(legacy)
    roles = [o.role for o in got.of(family=Family.MESSAGE)]
    assert roles.count("user") == 4 and roles.count("assistant") == 3
    tools = {(o.tool_name, o.stage) for o in got.of(family=Family.TOOL)}
    assert tools == {
        ("bash", Stage.REQUESTED), ("bash", Stage.RESULT),
        ("webfetch", Stage.REQUESTED), ("webfetch", Stage.RESULT),
        ("read", Stage.REQUESTED), ("read", Stage.RESULT),
        ("write", Stage.REQUESTED),  # running: requested only; the pending edit: nothing yet
    }
    assert all(o.agent == "opencode" and o.client == "opencode" for o in got.observations)


def test_tool_part_carries_call_and_result_and_error_state(legacy: Path) -> None:
    got = fx.acquire(legacy)
    bash_call = got.of(tool_name="bash", stage=Stage.REQUESTED)[0]
    bash_result = got.of(tool_name="bash", stage=Stage.RESULT)[0]
    assert bash_call.call_id == bash_result.call_id == "call_bash_1"
    assert bash_call.command is not None and bash_call.command.startswith("ls -la && GH_TOKEN=ghp_FAKE")
    assert json.loads(bash_call.arguments or "")["description"] == "List files"
    assert (bash_result.result, bash_result.is_error, bash_result.exit_code) == ("total 8\nREADME.md\n", False, 0)
    read_result = got.of(tool_name="read", stage=Stage.RESULT)[0]
    assert read_result.is_error is True and read_result.result is not None
    assert read_result.result.startswith("File not found")
    assert got.of(tool_name="read", stage=Stage.REQUESTED)[0].file_path == "/home/dev/demo/missing.md"
    assert got.of(tool_name="webfetch", stage=Stage.REQUESTED)[0].url == "https://example.invalid/releases"
    assert got.of(tool_name="write", stage=Stage.REQUESTED)[0].file_path == "/home/dev/demo/NOTES.md"
    assert bash_call.occurred_at == "2026-07-30T14:00:03.100Z"  # state.time.start
    assert bash_result.occurred_at == "2026-07-30T14:00:03.900Z"  # state.time.end


def test_text_parts_become_messages_and_reasoning_is_dropped(legacy: Path) -> None:
    got = fx.acquire(legacy)
    texts = [o.text or "" for o in got.of(family=Family.MESSAGE)]
    assert "List the files, then fetch the release notes." in texts
    assert not any("I should list the directory" in (o.text or "") for o in got.observations)
    assert not any(t.startswith("Writing the no") for t in texts)  # still streaming: later
    injected = [o for o in got.of(family=Family.MESSAGE) if o.injected]
    assert [o.text for o in injected] == ['Called the Read tool with the following input: {"filePath":"README.md"}']
    assert got.of(text="Please check @README.md")[0].injected is False


def test_usage_prefers_step_finish_and_never_double_counts(legacy: Path) -> None:
    got = fx.acquire(legacy)
    usage = got.of(family=Family.USAGE)
    rows = sorted(o.provenance.row or "" for o in usage)
    # msg_02 and msg_03 have step-finish parts (their message tokens are not used again);
    # msg_04 has none, so its own tokens count; msg_05 is not complete yet.
    assert rows == ["message:msg_04", "part:prt_0206", "part:prt_0302"]
    step = next(o for o in usage if o.provenance.row == "part:prt_0206")
    # input 100 + cache read 800 + cache write 200; output 150 + reasoning 50.
    assert step.usage == TokenUsage(input_tokens=1100, output_tokens=200, cache_read_input_tokens=800,
                                    cache_creation_input_tokens=200, reasoning_output_tokens=50, total_tokens=1300)
    fallback = next(o for o in usage if o.provenance.row == "message:msg_04")
    assert fallback.usage == TokenUsage(input_tokens=17, output_tokens=4, cache_read_input_tokens=10,
                                        cache_creation_input_tokens=0, reasoning_output_tokens=1, total_tokens=21)
    assert (step.model, step.provider) == ("demo-model-1", "demo-provider")


def test_OC_ACQ_6_7_model_attribution_per_message_in_both_shapes(legacy: Path) -> None:
    add_message(legacy, "msg_90", {"role": "user", "time": {"created": 1}, "model": {"providerID": "p-user",
                "modelID": "m-user"}}, [{"type": "text", "text": "nested shape"}])
    add_message(legacy, "msg_91", {"role": "assistant", "time": {"created": 2, "completed": 3},
                "modelID": "m-sub", "providerID": "p-sub"}, [{"type": "text", "text": "scalar shape"}])
    got = fx.acquire(legacy)
    assert (got.of(text="nested shape")[0].model, got.of(text="nested shape")[0].provider) == ("m-user", "p-user")
    assert (got.of(text="scalar shape")[0].model, got.of(text="scalar shape")[0].provider) == ("m-sub", "p-sub")


def test_OC_ACQ_8_conflicting_model_metadata_stays_ambiguous(legacy: Path) -> None:
    obs = fx.acquire(legacy).of(text="Which model am I?")[0]
    assert obs.model is None and obs.ambiguous == ("model",)
    assert obs.provider == "demo-provider"  # both shapes agree on the provider


@pytest.mark.parametrize("data", [
    {"role": "assistant", "modelID": 42, "providerID": "p"},
    {"role": "user", "model": "not-an-object"},
    {"role": "user", "model": {"modelID": ["x"], "providerID": "p"}},
    {"role": "assistant", "modelID": "m", "providerID": {"id": "p"}},
])
def test_OC_ACQ_8_malformed_model_fields_quarantine_the_message_only(legacy: Path, data: dict[str, Any]) -> None:
    """Issue 15 narrows OC-ACQ-8: a wrong model type quarantines that message and its parts
    (``schema_mismatch``); the rest of the store is still read."""
    clean = [o.observation_id for b in OpenCodeAdapter().acquire(fx.opencode_source(legacy), None, fx_context())
             for o in b.observations]
    add_message(legacy, "msg_bad", data, [{"type": "text", "text": "never emitted"}])
    batches = list(OpenCodeAdapter().acquire(fx.opencode_source(legacy), None, fx_context()))
    observations = [o for b in batches for o in b.observations]
    assert [o.observation_id for o in observations] == clean
    assert all(o.text != "never emitted" for o in observations)
    reasons = {(q.reason, q.row.split(":")[0]) for b in batches for q in b.quarantined}
    assert ("schema_mismatch", "message") in reasons and ("schema_mismatch", "part") in reasons


def fx_context() -> Any:
    from telltale.sources.base import AcquireContext

    return AcquireContext()


def test_OC_ACQ_9_session_id_column_wins_over_the_payload(legacy: Path) -> None:
    add_message(legacy, "msg_92", {"role": "user", "sessionID": "ses_elsewhere", "time": {"created": 5}},
                [{"type": "text", "text": "whose session?"}])
    obs = fx.acquire(legacy).of(text="whose session?")[0]
    assert obs.session_id == MAIN
    assert "session_id" in obs.ambiguous
    plain = fx.acquire(legacy).of(text="Please check @README.md")[0]
    assert plain.session_id == MAIN and plain.ambiguous == ()  # the column alone, no payload id


def test_sessions_carry_cwd_parent_and_agent(legacy: Path) -> None:
    got = fx.acquire(legacy)
    sessions = {o.session_id: o for o in got.of(family=Family.SESSION)}
    assert sessions[MAIN].cwd == "/home/dev/demo" and sessions[MAIN].parent_session_id is None
    assert sessions[CHILD].parent_session_id == MAIN
    assert sessions[MAIN].occurred_at == "2026-07-30T14:00:00.000Z"
    assert all(o.cwd == "/home/dev/demo" for o in got.observations)
    assert got.of(text="List the files, then fetch the release notes.")[0].attributes == {"agent_mode": "build"}


def test_malformed_part_is_quarantined_by_coordinate_only(legacy: Path) -> None:
    got = fx.acquire(legacy)
    assert [(q.reason, q.row, q.record_id, q.session_id) for q in got.quarantined] == [
        ("malformed_json", "part:prt_0802", "prt_0802", CHILD)]
    assert got.of(text="Explore the tests directory.")  # the rest of the session still counts


def test_OC_ACQ_11_oversized_values_are_quarantined_per_record(legacy: Path) -> None:
    big = "x" * (AUTHORED_TEXT_BOUND + 1)
    add_message(legacy, "msg_93", {"role": "assistant", "time": {"created": 6, "completed": 7}}, [
        {"type": "tool", "tool": "bash", "callID": "call_big", "state": {
            "status": "completed", "input": {"command": "cat big.log"}, "output": big, "time": {"start": 6, "end": 7}}},
        {"type": "text", "text": "after the big output", "time": {"start": 8, "end": 9}},
    ])
    got = fx.acquire(legacy)
    big_q = [q for q in got.quarantined if q.record_id == "msg_93_p0"]
    assert [(q.reason, q.field, q.bound) for q in big_q] == [("unbounded_value", "result", AUTHORED_TEXT_BOUND)]
    assert got.of(call_id="call_big", stage=Stage.REQUESTED)  # the call itself is kept
    assert not got.of(call_id="call_big", stage=Stage.RESULT)
    assert got.of(text="after the big output")
    assert all(big not in repr(q) for q in got.quarantined)


def test_observation_ids_are_deterministic_and_survive_a_relocated_database(legacy: Path, tmp_path: Path) -> None:
    first = [o.observation_id for o in fx.acquire(legacy).observations]
    again = [o.observation_id for o in fx.acquire(legacy).observations]
    moved = tmp_path / "relocated" / "opencode-dev.db"
    moved.parent.mkdir()
    shutil.copyfile(legacy, moved)
    assert first == again == [o.observation_id for o in fx.acquire(moved).observations]
    assert len(set(first)) == len(first)


def test_observations_follow_native_order(legacy: Path) -> None:
    got = fx.acquire(legacy)
    assert [o.sequence for o in got.observations] == sorted(o.sequence for o in got.observations)
    rows = [o.provenance.row for o in got.observations if (o.provenance.row or "").startswith("part:prt_02")]
    assert rows == sorted(rows)
    assert got.observations[0].family == Family.SESSION


# -- v2 mapping ------------------------------------------------------------------------------
def test_v2_rows_map_roles_tools_usage_and_model(v2: Path) -> None:
    got = fx.acquire(v2)
    assert [(o.role, o.injected) for o in got.of(family=Family.MESSAGE)] == [
        ("user", False), ("assistant", False), ("system", True)]
    bash = got.of(tool_name="bash")
    assert [(o.stage, o.command, o.result, o.is_error) for o in bash] == [
        (Stage.REQUESTED, "pytest -q", None, None), (Stage.RESULT, None, "3 passed", False)]
    assert {o.model for o in bash} == {"demo-model-v2"} and {o.provider for o in bash} == {"demo-provider"}
    read_result = got.of(tool_name="read", stage=Stage.RESULT)[0]
    assert (read_result.is_error, read_result.result) == (True, "File not found")
    shell = got.of(tool_name="shell")
    assert [(o.stage, o.command, o.result) for o in shell] == [
        (Stage.REQUESTED, "git status", None), (Stage.RESULT, None, "clean")]
    fetch = got.of(tool_name="webfetch")
    assert [(o.stage, o.url, o.model) for o in fetch] == [(Stage.REQUESTED, "https://example.invalid/v2",
                                                           "demo-model-v2b")]
    [usage] = got.of(family=Family.USAGE)
    assert usage.usage == TokenUsage(input_tokens=150, output_tokens=25, cache_read_input_tokens=100,
                                     cache_creation_input_tokens=10, reasoning_output_tokens=5, total_tokens=175)
    assert not any(o.text == "Run pytest." for o in got.observations)  # reasoning dropped
    assert got.batches[-1].other_records == 1  # the model-switched row: bookkeeping


def test_v2_unknown_row_and_content_types_are_quarantined(v2: Path) -> None:
    conn = sqlite3.connect(v2, isolation_level=None)
    conn.execute("INSERT INTO session_message VALUES ('msg_v2_x1', 'ses_v2_main', 'hologram', 1785430020000,"
                 " 1785430020000, '{}', 10)")
    conn.execute("INSERT INTO session_message VALUES ('msg_v2_x2', 'ses_v2_main', 'assistant', 1785430021000,"
                 " 1785430022000, ?, 11)", (json.dumps({"model": {"id": "m", "providerID": "p"}, "content": [
                     {"type": "image", "id": "i1"}, {"type": "text", "id": "t9", "text": "still here"}],
                     "time": {"created": 1785430021000, "completed": 1785430022000}}),))
    conn.close()
    got = fx.acquire(v2)
    assert sorted((q.reason, q.record_id) for q in got.quarantined) == [
        ("unknown_content_block", "msg_v2_x2"), ("unknown_record_type", "msg_v2_x1")]
    assert got.of(text="still here")


def test_v2_malformed_model_quarantines_the_row(v2: Path) -> None:
    clean = sorted(o.observation_id for o in fx.acquire(v2).observations)
    conn = sqlite3.connect(v2, isolation_level=None)
    conn.execute("INSERT INTO session_message VALUES ('msg_v2_bad', 'ses_v2_main', 'assistant', 1785430030000,"
                 " 1785430030000, ?, 12)", (json.dumps({"model": {"id": 7, "providerID": "p"}, "content": []}),))
    conn.close()
    got = fx.acquire(v2)
    assert sorted(o.observation_id for o in got.observations) == clean
    quarantined = [(q.reason, q.record_id, q.field) for q in got.quarantined]
    assert quarantined == [("schema_mismatch", "msg_v2_bad", "model.id")]


#: Why a native row does not decode (readers/records.py adds the range and depth reasons).
_DECODE_REASONS = ("schema_mismatch", "malformed_json", "invalid_utf8", "number_out_of_range", "nesting_too_deep")


# -- property tests of the native parsers ----------------------------------------------------
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(10**15), 10**15), st.floats(allow_nan=False),
                      st.text(max_size=20))
json_value = st.one_of(json_leaf, st.lists(json_leaf, max_size=3),
                       st.dictionaries(st.text(max_size=8), json_leaf, max_size=3))
part_keys = st.sampled_from(["type", "text", "synthetic", "ignored", "time", "tool", "callID", "state",
                             "tokens", "status", "input", "output", "error", "metadata", "start", "end",
                             "cache", "read", "write", "sessionID"])
native_doc = st.dictionaries(
    part_keys, st.one_of(json_value, st.dictionaries(part_keys, json_value, max_size=4)), max_size=6)


def _ctx() -> native.Context:
    return native.Context(path="/db", session_id="s", row="part:p", record_id="p", tu=1)


@settings(max_examples=200, deadline=None)
@given(native_doc, st.sampled_from(["text", "tool", "step-finish", "reasoning", None]))
def test_legacy_part_parser_never_crashes(doc: dict[str, Any], forced_type: str | None) -> None:
    if forced_type is not None:
        doc = {**doc, "type": forced_type}
    em = native.Emitter("/db")
    try:
        part = native.decode_legacy_part(json.dumps(doc))
    except native.Malformed as exc:
        assert exc.reason in _DECODE_REASONS
        return
    native.map_legacy_part(em, _ctx(), "p", 1, part, native.LegacyMessage(role="assistant"))
    for _, _, item in em.items:
        assert item.source_kind == "opencode.sqlite"


@settings(max_examples=200, deadline=None)
@given(native_doc, st.sampled_from([*sorted(native.V2_TYPES), "unknown"]))
def test_v2_parser_never_crashes(doc: dict[str, Any], row_type: str) -> None:
    em = native.Emitter("/db")
    try:
        msg = native.decode_v2_message(json.dumps(doc))
    except native.Malformed:
        return
    native.map_v2_row(em, _ctx(), "r", row_type, msg)


@given(st.binary(max_size=64))
def test_decoders_reject_garbage_with_a_reason(raw: bytes) -> None:
    for decode in (native.decode_legacy_part, native.decode_legacy_message, native.decode_v2_message):
        try:
            decode(raw)
        except native.Malformed as exc:
            assert exc.reason in _DECODE_REASONS


counts = st.one_of(st.none(), st.integers(0, 10**9))


@given(counts, counts, counts, counts, counts)
def test_token_usage_follows_opentelemetry_meaning(inp: int | None, out: int | None, reasoning: int | None,
                                                   read: int | None, write: int | None) -> None:
    tokens = msgspec.convert({"input": inp, "output": out, "reasoning": reasoning,
                              "cache": {"read": read, "write": write}}, native.Tokens)
    usage = native.token_usage(tokens)
    if all(v is None for v in (inp, out, reasoning, read, write)):
        assert usage is None
        return
    assert usage is not None
    if usage.input_tokens is not None:
        assert usage.input_tokens == (inp or 0) + (read or 0) + (write or 0)
        assert (usage.cache_read_input_tokens or 0) + (usage.cache_creation_input_tokens or 0) <= usage.input_tokens
    if usage.output_tokens is not None:
        assert usage.output_tokens == (out or 0) + (reasoning or 0) >= (usage.reasoning_output_tokens or 0)


tool_parts = st.fixed_dictionaries({
    "type": st.just("tool"),
    "tool": st.sampled_from(["bash", "read", "write", "edit", "webfetch", "glob", "mystery"]),
    "callID": st.text(min_size=1, max_size=10),
    "state": st.fixed_dictionaries({
        "status": st.sampled_from(["pending", "running", "completed", "error"]),
        "input": st.dictionaries(st.sampled_from(["command", "filePath", "url", "content", "pattern"]),
                                 st.text(max_size=30), max_size=4),
        "output": st.text(max_size=30),
        "error": st.text(max_size=30),
    }),
})


@settings(max_examples=200, deadline=None)
@given(tool_parts)
def test_tool_part_property_call_result_and_facets(doc: dict[str, Any]) -> None:
    em = native.Emitter("/db")
    part = native.decode_legacy_part(json.dumps(doc))
    native.map_legacy_part(em, _ctx(), "p", 1, part, native.LegacyMessage(role="assistant"))
    obs = [item for _, _, item in em.items]
    state, tool, args = doc["state"], doc["tool"], doc["state"]["input"]
    expected = {"pending": 0, "running": 1, "completed": 2, "error": 2}[state["status"]]
    assert len(obs) == expected
    if not obs:
        return
    call = obs[0]
    assert (call.stage, call.tool_name, call.call_id) == (Stage.REQUESTED, tool, doc["callID"])
    assert json.loads(call.arguments) == args
    assert call.command == (args.get("command") if tool == "bash" else None)
    assert call.file_path == (args.get("filePath") if tool in ("read", "write", "edit") else None)
    assert call.url == (args.get("url") if tool == "webfetch" else None)
    if expected == 2:
        result = obs[1]
        is_error = state["status"] == "error"
        assert (result.stage, result.is_error) == (Stage.RESULT, is_error)
        assert result.result == (state["error"] if is_error else state["output"])


def test_checked_in_demo_store_matches_the_builder(tmp_path: Path) -> None:
    assert fx.DEMO.exists(), "rebuild with: python tests/fixtures/build_opencode.py"
    fresh = fx.build(tmp_path / "opencode.db", "legacy")
    demo = fx.acquire(fx.DEMO)
    assert [o.observation_id for o in demo.observations] == [o.observation_id for o in fx.acquire(fresh).observations]
    assert sorted(os.listdir(fx.DEMO.parent)) == ["opencode.db"]  # no sidecars were left behind


def test_columns_are_read_by_name_and_optional_ones_may_be_missing(tmp_path: Path) -> None:
    legacy_db = tmp_path / "legacy" / "opencode.db"
    legacy_db.parent.mkdir()
    conn = sqlite3.connect(legacy_db, isolation_level=None)
    conn.executescript(
        # Reordered columns, no part.session_id / time_created, no message times, an extra column.
        "CREATE TABLE message (data TEXT, extra TEXT, session_id TEXT, id TEXT PRIMARY KEY);"
        "CREATE TABLE part (time_updated INTEGER, data TEXT, message_id TEXT, id TEXT PRIMARY KEY);"
        "INSERT INTO message VALUES ('{\"role\":\"user\"}', 'x', 's1', 'm1');"
        "INSERT INTO part VALUES (10, '{\"type\":\"text\",\"text\":\"hello\"}', 'm1', 'p1');"
    )
    conn.close()
    got = fx.acquire(legacy_db)
    assert [(o.session_id, o.role, o.text, o.cwd) for o in got.observations if o.family == Family.MESSAGE] == [
        ("s1", "user", "hello", None)]
    v2_db = tmp_path / "v2" / "opencode.db"
    v2_db.parent.mkdir()
    conn = sqlite3.connect(v2_db, isolation_level=None)
    conn.executescript(
        "CREATE TABLE session_message (data TEXT, type TEXT, time_updated INTEGER, session_id TEXT, id TEXT);"
        "INSERT INTO session_message VALUES ('{\"text\":\"hi v2\"}', 'user', 5, 's2', 'r1');"
    )
    conn.close()
    got = fx.acquire(v2_db)
    assert [(o.session_id, o.text) for o in got.of(family=Family.MESSAGE)] == [("s2", "hi v2")]
