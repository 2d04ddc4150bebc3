"""Codex adapter: seed rules CODEX-1..18, the three file generations, incremental scans.

Fixtures under tests/fixtures/session_stores/codex are synthetic rollouts in the real
on-disk shapes (docs/sources/codex.md names which Codex version each mirrors). Structural
failures (wrapper, coordinate, ownership) are built inline in tmp_path so the fixture
tree itself always acquires.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zstandard

from telltale.errors import SourceError
from telltale.model import AUTHORED_TEXT_BOUND, STRING_BOUND, Family, Observation, Quarantine, Stage
from telltale.readers.jsonl import decode_cursor
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.codex import SPECS, CodexAdapter
from telltale.sources.codex import adapter as codex_adapter
from telltale.sources.registry import adapter_for
from telltale.sources.spec import RootType, Source

STORE = Path(__file__).parent / "fixtures" / "session_stores" / "codex"
S1 = "019d1a2b-0000-7000-8000-00000000c0de"
S2 = "019d1a2b-0000-7000-8000-0000000ab047"
S3 = "019d1a2b-0000-7000-8000-0000000f0a4c"
S4 = "019d1a2b-0000-7000-8000-00000017e405"
S5 = "2f1e0d0c-0b0a-4908-8706-050403020100"
S6 = "019d1a2b-0000-7000-8000-0000000e8ec0"
S7 = "019d1a2b-0000-7000-8000-0000000a4c41"
MAIN = STORE / f"sessions/2026/03/01/rollout-2026-03-01T09-00-00-{S1}.jsonl"
INTERRUPTED = STORE / f"sessions/2026/03/02/rollout-2026-03-02T14-00-00-{S2}.jsonl"
FORK = STORE / f"sessions/2026/03/03/rollout-2026-03-03T08-00-00-{S3}.jsonl"
ITEMS = STORE / f"sessions/2026/03/04/rollout-2026-03-04T11-00-00-{S4}.jsonl"
LEGACY = STORE / f"sessions/2025/08/19/rollout-2025-08-19T08-25-08-{S5}.jsonl"
HEADLESS = STORE / f"headless/rollout-2026-03-05T07-30-00-{S6}.jsonl"
ARCHIVED = STORE / f"archived_sessions/rollout-2026-02-20T16-45-00-{S7}.jsonl"


class Scan(msgspec.Struct):
    observations: list[Observation]
    quarantined: list[Quarantine]
    batches: list[Batch]
    cursor: bytes | None

    @property
    def other(self) -> int:
        return sum(b.other_records for b in self.batches)

    @property
    def records(self) -> int:
        return sum(b.records_read for b in self.batches)

    def tools(self, stage: Stage) -> list[Observation]:
        return [o for o in self.observations if o.family is Family.TOOL and o.stage is stage]

    def family(self, family: Family) -> list[Observation]:
        return [o for o in self.observations if o.family is family]

    def result(self, call_id: str) -> Observation:
        (found,) = [o for o in self.tools(Stage.RESULT) if o.call_id == call_id]
        return found

    def requested(self, call_id: str) -> Observation:
        (found,) = [o for o in self.tools(Stage.REQUESTED) if o.call_id == call_id]
        return found


def source(path: Path, kind: str = "codex.sessions") -> Source:
    return Source(
        client="codex",
        kind=kind,
        path=str(path),
        root_type=RootType.CODEX_HOME,
        store_root=str(path.parent),
        found_by="fixture",
    )


def scan(
    path: Path,
    cursor: bytes | None = None,
    kind: str = "codex.sessions",
    history: HistoryMode = HistoryMode.INCREMENTAL,
    adapter: CodexAdapter | None = None,
) -> Scan:
    batches = list((adapter or CodexAdapter()).acquire(source(path, kind), cursor, AcquireContext(history=history)))
    return Scan(
        observations=[o for b in batches for o in b.observations],
        quarantined=[q for b in batches for q in b.quarantined],
        batches=batches,
        cursor=batches[-1].cursor if batches else cursor,
    )


def line(kind: str, payload: Any, ts: str = "2026-03-09T10:00:00.000Z", **extra: Any) -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload, **extra}) + "\n"


def meta(sid: str = "sess-1", **fields: Any) -> str:
    return line("session_meta", {"id": sid, "cwd": "/w", "source": "cli", "model_provider": "openai", **fields})


def write(tmp_path: Path, *lines: str, name: str = "rollout-2026-03-09T10-00-00-x.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(lines), encoding="utf-8")
    return path


def function_call(call_id: str, name: str, arguments: Any) -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return line("response_item", {"type": "function_call", "name": name, "arguments": text, "call_id": call_id})


def output(call_id: str, value: Any, kind: str = "function_call_output") -> str:
    return line("response_item", {"type": kind, "call_id": call_id, "output": value})


# -- registration ---------------------------------------------------------------------


def test_registry_instantiates_codex_adapter_for_every_kind() -> None:
    assert [s.kind for s in SPECS] == ["codex.sessions", "codex.archived_sessions", "codex.headless_sessions"]
    for spec in SPECS:
        assert isinstance(adapter_for(spec.kind), CodexAdapter)


# -- CODEX-1..3: records, headless, provider and agent ---------------------------------


def test_CODEX_1_rollout_maps_session_meta_turn_context_and_payloads() -> None:
    result = scan(MAIN)
    counts = Counter((o.family.value, o.stage.value if o.stage else "") for o in result.observations)
    assert counts == {
        ("session", ""): 1,
        ("message", ""): 8,
        ("tool", "requested"): 8,
        ("tool", "result"): 6,
        ("usage", ""): 3,
    }
    assert result.quarantined == []
    assert result.records == 45
    (session,) = result.family(Family.SESSION)
    assert session.session_id == S1
    assert session.cwd == "/home/dev/project"
    assert session.provider == "openai"
    assert session.agent == "codex"
    assert session.occurred_at == "2026-03-01T09:00:00.000Z"
    assert session.attributes["originator"] == "codex_cli_rs"
    assert session.attributes["cli_version"] == "0.120.0"
    assert all(o.session_id == S1 and o.client == "codex" for o in result.observations)
    assert all(o.source_kind == "codex.sessions" for o in result.observations)
    # Native order, ordinals from line numbers (0-based).
    sequences = [o.sequence for o in result.observations]
    assert sequences == sorted(sequences)
    assert result.observations[0].sequence == 0
    assert result.observations[0].provenance.line == 1


def test_CODEX_2_exec_source_marks_headless_session() -> None:
    result = scan(HEADLESS, kind="codex.headless_sessions")
    assert {o.agent for o in result.observations} == {"codex-headless"}
    (session,) = result.family(Family.SESSION)
    assert session.attributes["source"] == "exec"
    assert session.attributes["originator"] == "codex_exec"
    assert all(o.source_kind == "codex.headless_sessions" for o in result.observations)


def test_CODEX_3_model_provider_and_agent_nickname_identify_provider_and_agent() -> None:
    result = scan(ARCHIVED, kind="codex.archived_sessions")
    assert {o.provider for o in result.observations} == {"azure"}
    assert {o.agent for o in result.observations} == {"Lovelace"}
    (session,) = result.family(Family.SESSION)
    assert session.attributes["agent_role"] == "reviewer"


def test_CODEX_3_subagent_source_object_gives_nickname_and_parent(tmp_path: Path) -> None:
    spawn = {
        "subagent": {
            "thread_spawn": {
                "parent_thread_id": "parent-1",
                "depth": 1,
                "agent_nickname": "Curie",
                "agent_role": "explorer",
            }
        }
    }
    path = write(
        tmp_path,
        meta("child-1", source=spawn),
        line(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
        ),
    )
    result = scan(path)
    (session,) = result.family(Family.SESSION)
    assert session.agent == "Curie"
    assert session.parent_session_id == "parent-1"
    assert session.attributes["source"] == "subagent"
    assert session.attributes["agent_role"] == "explorer"


# -- CODEX-4..6: forks and subagent history --------------------------------------------


def test_CODEX_4_fork_ordinals_continue_from_history_base() -> None:
    result = scan(FORK)
    assert [o.sequence for o in result.observations] == [27, 29, 30, 31, 32]
    (session,) = result.family(Family.SESSION)
    assert session.parent_session_id == S1
    assert session.attributes["history_base_thread_id"] == S1
    assert session.attributes["history_base_end_ordinal"] == "27"
    assert session.provenance.line == 1


def test_CODEX_5_parent_history_is_not_read_again(tmp_path: Path) -> None:
    # The fork alone, with its parent nowhere on disk: it acquires only its own records.
    path = tmp_path / FORK.name
    shutil.copy(FORK, path)
    result = scan(path)
    assert {o.session_id for o in result.observations} == {S3}
    assert len(result.observations) == 5
    assert [o.text for o in result.family(Family.MESSAGE)] == ["Try a different fix instead."]
    assert sorted(os.listdir(tmp_path)) == [FORK.name]


def test_CODEX_6_subagent_history_start_ordinal_fails_the_source(tmp_path: Path) -> None:
    path = write(tmp_path, meta("child", subagent_history_start_ordinal=2), meta("parent"))
    with pytest.raises(SourceError) as info:
        scan(path)
    assert info.value.reason == "ownership"
    assert "subagent_history_start_ordinal" in info.value.detail


def test_CODEX_6_null_subagent_history_start_ordinal_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, meta("s", subagent_history_start_ordinal=None, history_base=None))
    assert len(scan(path).family(Family.SESSION)) == 1


# -- CODEX-7/8: bookkeeping ----------------------------------------------------------------


def test_CODEX_7_bookkeeping_records_counted_not_projected() -> None:
    result = scan(MAIN)
    # turn_context x2, task_started x2, task_complete x2, user_message x2, agent_message x3,
    # agent_reasoning, reasoning, token_count (null info + one repeat), patch_apply_end,
    # compacted, context_compacted, token_usage_record.
    assert result.other == 19
    assert result.records - result.other == 45 - 19
    assert len(result.observations) == 26  # the other 26 records, one observation each


@pytest.mark.parametrize(
    "record",
    [
        line("token_usage_record", {"total_token_usage": {"input_tokens": 1}}),
        line("compacted", {"message": "summary", "replacement_history": []}),
        line("turn_context", {"model": "gpt-5"}),
        line("world_state", {"anything": True}),
        line("event_msg", {"type": "thread_settings_applied", "model": "gpt-5"}),
        line("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        line("event_msg", {"type": "task_started", "turn_id": "t"}),
        line("event_msg", {"type": "agent_reasoning", "text": "thinking"}),
        line("event_msg", {"type": "agent_reasoning_raw_content", "text": "thinking"}),
        line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"}),
    ],
)
def test_CODEX_7_each_bookkeeping_record_is_counted(tmp_path: Path, record: str) -> None:
    result = scan(write(tmp_path, meta(), record))
    assert result.other == 1
    assert result.quarantined == []
    assert [o.family for o in result.observations] == [Family.SESSION]


def test_CODEX_7_turn_context_model_applies_to_later_observations() -> None:
    result = scan(MAIN)
    assert result.requested("call_A1").model == "gpt-5.3-codex"
    assert result.result("call_C3").model == "gpt-5.3-codex"
    assert result.requested("call_D4").model == "gpt-5.2-codex"
    usage = result.family(Family.USAGE)
    assert [u.model for u in usage] == ["gpt-5.3-codex", "gpt-5.3-codex", "gpt-5.2-codex"]
    # Before the first turn_context no model is known, and none is invented.
    assert result.family(Family.SESSION)[0].model is None


def test_CODEX_8_completed_reasoning_compaction_and_review_items_are_bookkeeping() -> None:
    result = scan(ITEMS)
    # UserMessage, Reasoning, ContextCompaction, EnteredReviewMode, ExitedReviewMode, Plan,
    # two duplicate outputs, world_state, token_usage_record, thread_settings_applied, turn_context.
    assert result.other == 12
    assert not [o for o in result.observations if o.provenance.record_id in {"rs-1", "cc-1", "rv-1", "rv-2"}]


# -- CODEX-9..12: inputs, outputs, completed commands and file changes ---------------------


def test_CODEX_9_freeform_inputs_get_the_authored_text_budget(tmp_path: Path) -> None:
    big_patch = "*** Begin Patch\n*** Add File: big.txt\n" + "+line of text\n" * 2000 + "*** End Patch\n"
    big_code = "text('x');\n" * 2000
    assert STRING_BOUND < len(big_patch) < AUTHORED_TEXT_BOUND
    path = write(
        tmp_path,
        meta(),
        line("response_item", {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": big_patch}),
        line("response_item", {"type": "custom_tool_call", "call_id": "c2", "name": "exec", "input": big_code}),
        function_call("c3", "exec_command", {"cmd": "echo " + "y" * 20_000}),
    )
    result = scan(path)
    assert result.quarantined == []
    assert result.requested("c1").arguments == big_patch
    assert result.requested("c1").file_path == "big.txt"
    assert result.requested("c2").arguments == big_code
    assert result.requested("c3").command == "echo " + "y" * 20_000


def test_CODEX_10_all_text_output_array_is_one_direct_result() -> None:
    result = scan(MAIN)
    assert result.result("call_E5").result == "On branch main\nnothing to commit, working tree clean"
    assert result.result("call_E5").tool_name == "exec"
    assert result.result("call_D4").result == "# Docs\nWelcome to the project."


def test_CODEX_10_images_in_an_output_array_are_counted_not_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        meta(),
        output(
            "c1",
            [
                {"type": "input_text", "text": "screenshot taken"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAAFAKE"},
            ],
            kind="custom_tool_call_output",
        ),
    )
    found = scan(path).result("c1")
    assert found.result == "screenshot taken"
    assert found.attributes == {"images": "1"}


def test_CODEX_11_completed_command_aggregated_output_and_exit_code() -> None:
    result = scan(ITEMS)
    found = result.result("call_K1")
    assert found.result == " M VERSION\n"
    assert found.exit_code == 0
    assert found.tool_name == "exec_command"
    assert found.sequence == 5  # the completed item, not the later duplicate output


def test_CODEX_11_snake_case_command_item_and_exec_command_end(tmp_path: Path) -> None:
    item = {
        "type": "CommandExecution",
        "id": "c1",
        "command": ["ls"],
        "status": "failed",
        "aggregated_output": "boom\n",
        "exit_code": 2,
    }
    path = write(
        tmp_path,
        meta(),
        function_call("c1", "shell", {"command": ["ls"]}),
        line("event_msg", {"type": "item_completed", "thread_id": "sess-1", "turn_id": "t", "item": item}),
        line("event_msg", {"type": "exec_command_end", "call_id": "c2", "aggregated_output": "ok\n", "exit_code": 0}),
    )
    result = scan(path)
    assert (result.result("c1").result, result.result("c1").exit_code, result.result("c1").is_error) == (
        "boom\n",
        2,
        True,
    )
    assert (result.result("c2").result, result.result("c2").exit_code) == ("ok\n", 0)


def test_CODEX_12_file_change_is_one_result_with_labelled_patch_evidence() -> None:
    result = scan(ITEMS)
    found = result.result("call_P1")
    assert found.tool_name == "apply_patch"
    assert found.file_path == "VERSION"
    assert found.result == (
        "path: VERSION\nkind: update\ndiff:\n@@ -1 +1 @@\n-1.2.3\n+1.2.4\n\n\n"
        "path: CHANGES.md\nkind: add\ncontent:\n- 1.2.4\n"
    )
    assert found.attributes == {
        "change_count": "2",
        "kinds": "update,add",
        "status": "completed",
        "paths": "VERSION\nCHANGES.md",
    }
    # Evidence, not a claim about file state or execution.
    assert found.exit_code is None and found.is_error is None
    assert len([o for o in result.tools(Stage.RESULT) if o.call_id == "call_P1"]) == 1


def test_CODEX_12_file_change_list_shape_and_move(tmp_path: Path) -> None:
    item = {
        "type": "FileChange",
        "id": "p1",
        "status": "failed",
        "changes": [{"path": "a.py", "kind": {"type": "update", "move_path": "b.py"}, "diff": "@@\n-x\n+y\n"}],
    }
    path = write(tmp_path, meta(), line("event_msg", {"type": "item_completed", "thread_id": "sess-1", "item": item}))
    found = scan(path).result("p1")
    assert found.result == "path: a.py\nkind: update\nmove_path: b.py\ndiff:\n@@\n-x\n+y\n"
    assert found.is_error is True
    assert found.file_path == "a.py"


# -- CODEX-13..17: quarantine ------------------------------------------------------------------


def test_CODEX_13_mcp_and_extension_items_are_quarantined_alone() -> None:
    result = scan(ITEMS)
    unsupported = [q for q in result.quarantined if q.reason == "unsupported_completed_item"]
    assert [(q.record_id, q.sequence, q.line) for q in unsupported] == [("call_M1", 10, 11), ("sleep-1", 11, 12)]
    assert all(q.session_id == S4 for q in unsupported)


def test_CODEX_14_parent_copy_of_subagent_item_is_foreign() -> None:
    result = scan(ITEMS)
    (foreign,) = [q for q in result.quarantined if q.reason == "foreign_thread_item"]
    assert (foreign.record_id, foreign.sequence, foreign.field) == ("call_SUB1", 16, "thread_id")
    assert not [o for o in result.observations if o.call_id == "call_SUB1"]


@pytest.mark.parametrize(
    ("record", "reason", "field"),
    [
        (line("mystery_record", {"a": 1}), "unknown_record_type", "type"),
        (line("response_item", {"type": "hologram_call", "id": "h1"}), "unknown_record_type", "response_item"),
        (line("event_msg", {"type": "brand_new_event"}), "unknown_record_type", "event_msg"),
        (
            line(
                "event_msg", {"type": "item_completed", "thread_id": "sess-1", "item": {"type": "Teleport", "id": "t1"}}
            ),
            "unknown_record_type",
            "item",
        ),
        (
            line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_hologram"}]}),
            "unknown_content_block",
            "content[].type",
        ),
        (output("c9", [{"type": "input_video", "url": "x"}]), "unknown_content_block", "output[].type"),
        (
            line("response_item", {"type": "function_call", "name": 7, "arguments": "{}", "call_id": "c"}),
            "schema_mismatch",
            "response_item.name",
        ),
        ('{"timestamp": "2026-03-09T10:00:00Z", "type": "event_msg", "payload": {"type": \n', "malformed_json", None),
    ],
)
def test_CODEX_15_unknown_or_malformed_record_is_quarantined_by_itself(
    tmp_path: Path, record: str, reason: str, field: str | None
) -> None:
    tail = line(
        "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "after"}]}
    )
    result = scan(write(tmp_path, meta(), record, tail))
    (quarantine,) = result.quarantined
    assert (quarantine.reason, quarantine.field, quarantine.line, quarantine.sequence) == (reason, field, 2, 1)
    assert quarantine.session_id == "sess-1"
    assert [o.text for o in result.family(Family.MESSAGE)] == ["after"]
    assert result.batches[-1].partial is True


def test_CODEX_15_over_bound_value_is_quarantined_with_field_and_bound(tmp_path: Path) -> None:
    huge = "z" * (AUTHORED_TEXT_BOUND + 1)
    path = write(
        tmp_path,
        meta(),
        function_call("c1", "exec_command", {"cmd": "cat big.log"}),
        output("c1", huge),
        function_call("c2", "update_plan", {"plan": [{"step": "s" * (STRING_BOUND + 1)}]}),
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": huge}]}),
        function_call("c3", "exec_command", {"cmd": "true"}),
    )
    result = scan(path)
    assert [(q.reason, q.record_id, q.field, q.bound, q.sequence) for q in result.quarantined] == [
        ("unbounded_value", "c1", "result", AUTHORED_TEXT_BOUND, 2),
        ("unbounded_value", "c2", "arguments.plan[].step", STRING_BOUND, 3),
        ("unbounded_value", None, "text", AUTHORED_TEXT_BOUND, 4),
    ]
    assert result.requested("c3").command == "true"
    # A quarantined result still answers its call: no interrupted result is invented later.
    assert "c1" not in [o.call_id for o in result.tools(Stage.RESULT)]


def test_CODEX_16_quarantine_names_coordinates_never_content(tmp_path: Path) -> None:
    secret = "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE"
    path = write(
        tmp_path,
        meta(),
        output("c1", secret * 3000),
        line("response_item", {"type": "message", "role": "user", "content": [{"type": secret}]}),
        line("event_msg", {"type": secret}),
        line(secret, {"type": secret}),
        line(
            "event_msg",
            {
                "type": "item_completed",
                "thread_id": "sess-1",
                "item": {"type": "McpToolCall", "id": "m1", "arguments": {"token": secret}},
            },
        ),
    )
    result = scan(path)
    assert len(result.quarantined) == 5
    encoded = msgspec.json.encode(result.quarantined).decode()
    assert "FAKE" not in encoded
    for q in result.quarantined:
        assert q.session_id == "sess-1" and q.sequence is not None and q.line is not None


def test_CODEX_17_rest_of_rollout_is_evaluated_and_coverage_partial() -> None:
    result = scan(ITEMS)
    assert len(result.quarantined) == 3
    assert result.batches[-1].partial is True
    assert result.family(Family.MESSAGE)[-1].text == "Bumped to 1.2.4."
    assert len(result.observations) == 8


# -- CODEX-18: structural failures ------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        ([line("session_meta", "not an object")], "wrapper"),
        ([meta(history_base={"thread_id": "p", "end_ordinal_exclusive": "7", "end_byte_offset": 10})], "coordinate"),
        ([meta(history_base={"thread_id": "p", "end_ordinal_exclusive": 0, "end_byte_offset": 10})], "coordinate"),
        ([meta(history_base="p:7")], "coordinate"),
        (
            [
                line("event_msg", {"type": "task_started"}),
                meta(history_base={"thread_id": "p", "end_ordinal_exclusive": 3, "end_byte_offset": 1}),
            ],
            "coordinate",
        ),
        (
            [
                meta(),
                line("event_msg", {"type": "task_started"}, ordinal=5),
                line("event_msg", {"type": "task_started"}, ordinal=5),
            ],
            "coordinate",
        ),
        ([meta(), line("event_msg", {"type": "task_started"}, ordinal=-1)], "coordinate"),
        ([meta("a"), meta("b")], "ownership"),
    ],
)
def test_CODEX_18_wrapper_coordinate_and_ownership_errors_fail_the_source(
    tmp_path: Path, lines: list[str], reason: str
) -> None:
    with pytest.raises(SourceError) as info:
        scan(write(tmp_path, *lines))
    assert info.value.reason == reason
    assert "FAKE" not in str(info.value)


@pytest.mark.parametrize(
    ("bad", "reason", "field"),
    [
        ("[1, 2, 3]\n", "schema_mismatch", None),
        ("[1,2,]\n", "schema_mismatch", None),
        ('"just a string"\n', "schema_mismatch", None),
        (json.dumps({"timestamp": "t", "type": 5, "payload": {}}) + "\n", "schema_mismatch", "type"),
        ('{"timestamp": 1e999, "type": "event_msg", "payload": {"type": "task_started"}}\n',
         "number_out_of_range", "timestamp"),
        ('{"timestamp": ' + "9" * 400 + ', "type": "event_msg", "payload": {"type": "task_started"}}\n',
         None, None),
        ('{"timestamp": "t", "type": "event_msg", "payload": {"type": 1e999}}\n', "number_out_of_range", None),
        ('{"timestamp": "t", "type": "event_msg", "type": "response_item", "payload": 5}\n',
         "schema_mismatch", None),
        (b'{"timestamp": "t", "type": "event_msg", "k\xff": 1, "payload": {"type": "task_started"}}\n'
         .decode("latin-1"),
         None, None),
        ("{}\n", "unknown_record_type", "type"),
        (line("response_item", "not an object"), "schema_mismatch", "response_item"),
        (line("event_msg", [1]), "schema_mismatch", "event_msg"),
        ('{"timestamp": "t", "type": "event_msg", "payload": ' + "[" * 1000 + "]" * 1000 + "}\n",
         "nesting_too_deep", None),
        ('{"a":' * 5000 + "1" + "}" * 5000 + "\n", "nesting_too_deep", None),
        (meta(cwd=1e999).replace("Infinity", "1e999"), "number_out_of_range", "session_meta"),
    ],
)
def test_CODEX_18_a_bad_line_is_quarantined_by_itself_and_the_rollout_goes_on(
    tmp_path: Path, bad: str, reason: str | None, field: str | None
) -> None:
    """Only the header's, the coordinates' and the ownership's errors fail a rollout; a
    line that is not a rollout record object is that line's problem (issue 15)."""
    good = line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})
    path = tmp_path / "rollout-2026-03-09T10-00-00-x.jsonl"
    path.write_bytes((meta() + bad + good).encode("latin-1" if "\xff" in bad else "utf-8"))
    result = scan(path)
    assert [o.text for o in result.family(Family.MESSAGE)] == ["hi"]
    if reason is None:
        assert result.quarantined == []  # an ignored key's bytes are never looked at
        return
    (q,) = result.quarantined
    assert (q.reason, q.line, q.session_id) == (reason, 2, "sess-1")
    if field is not None:
        assert q.field is not None and q.field.startswith(field)


def test_session_meta_fields_of_another_type_do_not_fail_the_source(tmp_path: Path) -> None:
    path = write(tmp_path, meta(cwd=5, model_provider={"name": "openai"}, originator=["x"], agent_nickname=7))
    (session,) = scan(path).observations
    assert (session.session_id, session.cwd, session.provider, session.agent) == ("sess-1", None, None, "codex")
    assert session.attributes == {"source": "cli"}


def test_CODEX_18_repeated_own_header_and_copied_parent_header_are_bookkeeping(tmp_path: Path) -> None:
    path = write(tmp_path, meta("fork", forked_from_id="parent"), meta("fork"), meta("parent"))
    result = scan(path)
    assert result.other == 2
    assert len(result.family(Family.SESSION)) == 1


# -- no double counting -----------------------------------------------------------------------


def test_user_and_assistant_text_is_one_message_from_the_response_item() -> None:
    result = scan(MAIN)
    texts = [o.text for o in result.family(Family.MESSAGE)]
    assert texts.count("List the files, run the tests and fix the failing one.") == 1
    assert texts.count("Fixed the failing test.") == 1
    assert texts.count("All done.") == 1
    final = next(o for o in result.family(Family.MESSAGE) if o.text == "Fixed the failing test.")
    assert final.role == "assistant" and final.attributes == {"phase": "final_answer"}


def test_message_parts_joined_and_images_counted() -> None:
    result = scan(MAIN)
    (msg,) = [o for o in result.family(Family.MESSAGE) if o.text and o.text.startswith("Check the docs")]
    assert msg.text == "Check the docs site\nand this screenshot."
    assert msg.attributes == {"images": "1"}
    assert msg.injected is False


def test_token_usage_one_per_response_in_opentelemetry_meaning() -> None:
    usage = [o.usage for o in scan(MAIN).family(Family.USAGE)]
    assert [u.input_tokens for u in usage if u] == [9000, 11000, 12000]
    first = usage[0]
    assert first is not None
    assert (first.cache_read_input_tokens, first.output_tokens, first.reasoning_output_tokens, first.total_tokens) == (
        7000,
        300,
        120,
        9300,
    )


def test_token_usage_difference_of_totals_when_last_is_absent(tmp_path: Path) -> None:
    def count(total: dict[str, int]) -> str:
        return line("event_msg", {"type": "token_count", "info": {"total_token_usage": total}})

    path = write(
        tmp_path,
        meta(),
        count({"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 10, "total_tokens": 110}),
        count({"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 10, "total_tokens": 110}),
        count({"input_tokens": 250, "cached_input_tokens": 90, "output_tokens": 30, "total_tokens": 280}),
    )
    usage = [
        (u.input_tokens, u.cache_read_input_tokens, u.output_tokens, u.total_tokens)
        for u in (o.usage for o in scan(path).family(Family.USAGE))
        if u
    ]
    assert usage == [(100, 40, 10, 110), (150, 50, 20, 170)]


def test_injected_context_is_marked() -> None:
    result = scan(MAIN)
    injected = {(o.role, o.injected) for o in result.family(Family.MESSAGE)[:3]}
    assert injected == {("developer", True), ("user", True)}
    user_words = [o for o in result.family(Family.MESSAGE) if o.role == "user" and not o.injected]
    assert next(o.text for o in user_words) == "List the files, run the tests and fix the failing one."
    interrupted = scan(INTERRUPTED)
    notice = [o for o in interrupted.family(Family.MESSAGE) if o.text and o.text.startswith("<turn_aborted>")]
    assert notice[0].injected is True


def test_inherited_message_metadata_marks_injected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        meta(),
        line(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "copied from parent"}]},
            metadata={"inherited_user_message": True},
        ),
    )
    (msg,) = scan(path).family(Family.MESSAGE)
    assert msg.injected is True and msg.attributes == {"inherited": "true"}


# -- interrupted turns ------------------------------------------------------------------------


def test_interrupted_turn_reports_pending_call_as_interrupted() -> None:
    result = scan(INTERRUPTED)
    found = result.result("call_X1")
    assert found.interrupted is True
    assert found.result is None
    assert found.tool_name == "exec_command"
    assert found.attributes == {"abort_reason": "interrupted"}
    assert found.sequence == 7  # the turn_aborted line
    # The answered call is not marked; the late "aborted" output is a duplicate.
    assert result.result("call_X2").interrupted is False
    assert result.result("call_X2").exit_code == 2
    # A call still waiting at the end is reported as requested only.
    assert result.requested("call_X3").command == "make lib"
    assert not [o for o in result.tools(Stage.RESULT) if o.call_id == "call_X3"]


# -- facets -----------------------------------------------------------------------------------


def test_shell_command_lines() -> None:
    result = scan(MAIN)
    assert result.requested("call_A1").command == "ls -la"
    assert result.requested("call_B2").command == 'pytest -q tests/ && echo "done"'
    assert result.requested("call_D4").command == "cat docs/index.md 'docs/my notes.md'"
    assert result.requested("call_D4").tool_name == "local_shell"
    assert result.requested("call_F6").command == "git log --oneline -3"
    assert result.requested("call_E5").command is None  # code-mode exec is code, not a command line


def test_shell_exit_codes_from_outputs() -> None:
    result = scan(MAIN)
    assert result.result("call_A1").exit_code == 0
    assert result.result("call_B2").exit_code == 1
    assert result.result("call_B2").result == "1 failed, 10 passed in 0.40s\n"
    assert result.result("call_F6").exit_code == 0
    assert result.result("call_E5").exit_code is None


def test_apply_patch_target_paths() -> None:
    found = scan(MAIN).requested("call_C3")
    assert found.file_path == "src/app.py"
    assert found.attributes == {"input_format": "freeform", "path_count": "2", "paths": "src/app.py\ntests/test_app.py"}


def test_web_search_url_and_query() -> None:
    searches = [o for o in scan(MAIN).tools(Stage.REQUESTED) if o.tool_name == "web_search"]
    assert [o.attributes.get("query") for o in searches] == ["pytest fixtures documentation", None]
    assert [o.url for o in searches] == [None, "https://docs.pytest.org/en/stable/how-to/fixtures.html"]
    assert searches[1].provenance.record_id == "ws_0002"


def test_argument_json_in_a_string_is_decoded_and_canonical() -> None:
    found = scan(MAIN).requested("call_A1")
    assert found.arguments == '{"cmd":"ls -la","max_output_tokens":6000,"workdir":"/home/dev/project"}'


def test_unparseable_arguments_are_kept_as_text(tmp_path: Path) -> None:
    path = write(tmp_path, meta(), function_call("c1", "mcp__srv__tool", "not json {"))
    found = scan(path).requested("c1")
    assert found.arguments == "not json {"
    assert found.attributes == {"arguments_format": "text"}


def test_generic_path_and_url_arguments_become_facets(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        meta(),
        function_call("c1", "view_image", {"path": "/tmp/shot.png"}),
        function_call("c2", "mcp__web__fetch", {"url": "https://example.invalid/a"}),
    )
    result = scan(path)
    assert result.requested("c1").file_path == "/tmp/shot.png"
    assert result.requested("c2").url == "https://example.invalid/a"


def test_newer_tool_search_and_image_generation_items(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        meta(),
        line(
            "response_item",
            {
                "type": "tool_search_call",
                "call_id": "ts1",
                "execution": "client",
                "arguments": {"query": "github issues"},
            },
        ),
        line(
            "response_item",
            {
                "type": "tool_search_output",
                "call_id": "ts1",
                "status": "completed",
                "execution": "client",
                "tools": [{"name": "create_issue", "description": "Create an issue"}],
            },
        ),
        line(
            "response_item",
            {
                "type": "image_generation_call",
                "id": "ig1",
                "status": "completed",
                "revised_prompt": "a cat",
                "result": "iVBORFAKE",
            },
        ),
    )
    result = scan(path)
    assert result.requested("ts1").tool_name == "tool_search"
    assert result.result("ts1").result == '[{"description":"Create an issue","name":"create_issue"}]'
    (image,) = [o for o in result.tools(Stage.REQUESTED) if o.tool_name == "image_generation"]
    assert image.arguments == '{"revised_prompt":"a cat"}'


# -- G1 legacy generation -------------------------------------------------------------------


def test_g1_bare_jsonl_without_timestamps() -> None:
    result = scan(LEGACY)
    assert result.quarantined == []
    (session,) = result.family(Family.SESSION)
    assert session.session_id == S5
    assert session.occurred_at == "2025-08-19T08:25:08.061Z"  # the header's own time
    assert all(o.occurred_at is None for o in result.observations[1:])  # never invented
    assert result.requested("call_L1").command == "cat build.sh | head -50"
    assert result.requested("call_L2").command == "nvcc --version"
    assert (result.result("call_L1").result, result.result("call_L1").exit_code) == (
        "#!/bin/sh\nset -e\nnvcc kernel.cu\n",
        0,
    )
    assert result.result("call_L2").exit_code == 127
    assert result.result("call_L3").result == "Plan updated"
    assert result.other == 5  # four state markers and one reasoning item
    assert [o.injected for o in result.family(Family.MESSAGE)] == [True, False, False]


# -- identity, archives, compression ----------------------------------------------------------


def test_archived_rollout_keeps_its_observation_ids(tmp_path: Path) -> None:
    archived = tmp_path / "archived_sessions" / MAIN.name
    archived.parent.mkdir()
    shutil.copy(MAIN, archived)
    live = scan(MAIN)
    moved = scan(archived, kind="codex.archived_sessions")
    assert [o.observation_id for o in moved.observations] == [o.observation_id for o in live.observations]
    assert {o.source_kind for o in moved.observations} == {"codex.archived_sessions"}


def test_observation_ids_are_deterministic_and_unique() -> None:
    first, second = scan(MAIN), scan(MAIN)
    ids = [o.observation_id for o in first.observations]
    assert ids == [o.observation_id for o in second.observations]
    assert len(set(ids)) == len(ids)


def test_zstd_rollout_is_read_as_a_stream(tmp_path: Path) -> None:
    raw = MAIN.read_bytes()
    half = len(raw) // 2
    path = tmp_path / (MAIN.name + ".zst")
    # Two frames: the reader must read across frame boundaries.
    path.write_bytes(zstandard.ZstdCompressor().compress(raw[:half]) + zstandard.ZstdCompressor().compress(raw[half:]))
    plain, packed = scan(MAIN), scan(path)
    assert [o.observation_id for o in packed.observations] == [o.observation_id for o in plain.observations]
    assert [msgspec.structs.replace(o, provenance=o.provenance) for o in packed.observations] != []
    assert [msgspec.structs.replace(o, provenance=plain.observations[0].provenance) for o in packed.observations] == [
        msgspec.structs.replace(o, provenance=plain.observations[0].provenance) for o in plain.observations
    ]
    assert {o.provenance.path for o in packed.observations} == {str(path)}
    # Nothing new on a rescan of the same compressed file.
    again = scan(path, cursor=packed.cursor)
    assert again.observations == [] and again.quarantined == []


def test_zstd_small_rollout_resumes_inside_the_head(tmp_path: Path) -> None:
    first = meta("z") + function_call("c1", "exec_command", {"cmd": "ls"})
    path = tmp_path / "rollout-z.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(first.encode()))
    one = scan(path)
    assert len(one.observations) == 2
    # A rewritten archive with one more line: resumes after the first two lines.
    path.write_bytes(zstandard.ZstdCompressor().compress((first + output("c1", "done")).encode()))
    two = scan(path, cursor=one.cursor)
    assert [(o.call_id, o.tool_name, o.result) for o in two.observations] == [("c1", "exec_command", "done")]


def test_corrupt_zstd_fails_the_source(tmp_path: Path) -> None:
    path = tmp_path / "rollout-bad.jsonl.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00garbage" * 40)
    with pytest.raises(SourceError) as info:
        scan(path)
    assert info.value.reason == "unreadable"


# -- incremental scans ------------------------------------------------------------------------


def test_two_scans_append_nothing_duplicated_and_late_result_joined(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        meta(),
        line("turn_context", {"model": "gpt-5.5"}),
        function_call("c1", "exec_command", {"cmd": "sleep 30"}),
    )
    first = scan(path)
    assert [(o.family, o.call_id) for o in first.observations] == [(Family.SESSION, None), (Family.TOOL, "c1")]
    with path.open("a", encoding="utf-8") as fh:
        fh.write(output("c1", "Process exited with code 0\n"))
        fh.write(
            line(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
                        "last_token_usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
                    },
                },
            )
        )
    second = scan(path, cursor=first.cursor)
    assert [o.family for o in second.observations] == [Family.TOOL, Family.USAGE]
    late = second.observations[0]
    assert (late.stage, late.call_id, late.tool_name, late.model, late.session_id) == (
        Stage.RESULT,
        "c1",
        "exec_command",
        "gpt-5.5",
        "sess-1",
    )
    assert late.sequence == 3
    third = scan(path, cursor=second.cursor)
    assert third.observations == [] and third.records == 0
    ids = [o.observation_id for o in first.observations + second.observations]
    assert ids == [o.observation_id for o in scan(path).observations]


def test_partial_last_line_is_held_for_the_next_scan(tmp_path: Path) -> None:
    complete = meta() + function_call("c1", "exec_command", {"cmd": "ls"})
    tail = output("c1", "done")
    path = write(tmp_path, complete + tail[:20])
    first = scan(path)
    assert len(first.observations) == 2 and first.batches[-1].partial is True
    with path.open("a", encoding="utf-8") as fh:
        fh.write(tail[20:])
    second = scan(path, cursor=first.cursor)
    assert [(o.call_id, o.result) for o in second.observations] == [("c1", "done")]
    assert second.batches[-1].partial is False


def test_replaced_file_is_read_again_without_stale_state(tmp_path: Path) -> None:
    path = write(tmp_path, meta("old"), function_call("c1", "exec_command", {"cmd": "ls"}))
    first = scan(path)
    path.unlink()
    write(tmp_path, meta("new"), output("c1", "done"))
    second = scan(path, cursor=first.cursor)
    assert {o.session_id for o in second.observations} == {"new"}
    assert second.result("c1").tool_name is None  # the old file's pending call does not leak


def test_backfill_ignores_the_cursor(tmp_path: Path) -> None:
    path = write(tmp_path, meta(), function_call("c1", "exec_command", {"cmd": "ls"}))
    first = scan(path)
    again = scan(path, cursor=first.cursor, history=HistoryMode.BACKFILL)
    assert [o.observation_id for o in again.observations] == [o.observation_id for o in first.observations]


def test_batches_are_windows_with_resumable_cursors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex_adapter, "BATCH_BYTES", 4096)
    result = scan(MAIN)
    assert len(result.batches) > 2
    assert [o.observation_id for o in result.observations] == [o.observation_id for o in scan(MAIN).observations]
    # Resuming from any window's cursor continues exactly after it.
    seen = 0
    for batch in result.batches[:-1]:
        seen += len(batch.observations)
        rest = scan(MAIN, cursor=batch.cursor)
        assert rest.observations == result.observations[seen:]
    assert sum(b.bytes_read for b in result.batches) == MAIN.stat().st_size


def test_carry_is_bounded(tmp_path: Path) -> None:
    unanswered = [function_call(f"call_{i:04d}", "exec_command", {"cmd": f"echo {i}"}) for i in range(600)]
    results = [output(f"late_{i:04d}", "ok") for i in range(600)]
    path = write(tmp_path, meta(), *unanswered, *results)
    cursor = decode_cursor(scan(path).cursor)
    assert cursor is not None and cursor.carry is not None
    carry = json.loads(bytes(cursor.carry))
    assert len(carry["pending"]) == codex_adapter.MAX_PENDING
    assert carry["pending"][-1] == ["call_0599", "exec_command"]  # the oldest are dropped first
    assert len(carry["answered"]) == codex_adapter.MAX_ANSWERED
    assert len(bytes(cursor.carry)) < 64 * 1024


def test_carry_does_not_keep_long_tool_names(tmp_path: Path) -> None:
    name = "mcp__" + "n" * 1000
    first = scan(write(tmp_path, meta(), function_call("c1", name, {})))
    assert first.requested("c1").tool_name == name
    cursor = decode_cursor(first.cursor)
    assert cursor is not None and cursor.carry is not None
    assert json.loads(bytes(cursor.carry))["pending"] == [["c1", None]]


def test_oversized_line_is_quarantined_unread(tmp_path: Path) -> None:
    adapter = CodexAdapter()
    adapter.max_line_bytes = 256
    path = write(tmp_path, meta(), output("c1", "x" * 1000), function_call("c2", "exec_command", {"cmd": "ls"}))
    result = scan(path, adapter=adapter)
    assert [(q.reason, q.line) for q in result.quarantined] == [("oversized_line", 2)]
    assert result.requested("c2").command == "ls"


def test_invalid_utf8_line_is_quarantined(tmp_path: Path) -> None:
    path = tmp_path / "rollout-bad-utf8.jsonl"
    path.write_bytes(meta().encode() + b'{"timestamp":"t","type":"event_msg","payload":{"type":"\xff"}}\n')
    (quarantine,) = scan(path).quarantined
    assert (quarantine.reason, quarantine.line) == ("invalid_utf8", 2)


def test_rollout_without_session_meta_uses_path_identity(tmp_path: Path) -> None:
    path = write(tmp_path, function_call("c1", "exec_command", {"cmd": "ls"}))
    (found,) = scan(path).observations
    assert found.session_id is None and found.command == "ls"


def test_scan_leaves_the_store_untouched(tmp_path: Path) -> None:
    path = tmp_path / MAIN.name
    shutil.copy(MAIN, path)
    os.chmod(path, 0o444)
    before = (sorted(os.listdir(tmp_path)), path.stat().st_mtime_ns, path.read_bytes())
    scan(path)
    assert (sorted(os.listdir(tmp_path)), path.stat().st_mtime_ns, path.read_bytes()) == before


def test_symlinked_rollout_is_not_followed(tmp_path: Path) -> None:
    link = tmp_path / "rollout-link.jsonl"
    link.symlink_to(MAIN)
    with pytest.raises(SourceError):
        scan(link)


def test_whole_fixture_tree_acquires() -> None:
    by_kind = {
        "sessions": "codex.sessions",
        "archived_sessions": "codex.archived_sessions",
        "headless": "codex.headless_sessions",
    }
    total = 0
    for path in sorted(STORE.rglob("*.jsonl")):
        kind = by_kind[path.relative_to(STORE).parts[0]]
        total += len(scan(path, kind=kind).observations)
    assert total > 60
