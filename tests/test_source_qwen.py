"""Qwen Code adapter (``qwen.projects``): record kinds, usage semantics, quarantine, increments."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telltale.model import Family, Observation, Quarantine, Stage, TokenUsage
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.qwen import SPECS, QwenAdapter, _UsageMetadata, gemini_usage
from telltale.sources.registry import adapter_for
from telltale.sources.spec import RootType, Source

FIXTURES = Path(__file__).parent / "fixtures" / "session_stores" / "qwen" / "projects"
TOOLS = FIXTURES / "-home-dev-demo" / "chats" / "qwen-fixture-tools.jsonl"
EDGE = FIXTURES / "-home-dev-edge" / "chats" / "qwen-fixture-edge.jsonl"


def _source(path: Path) -> Source:
    return Source(
        client="qwen", kind="qwen.projects", path=str(path), root_type=RootType.HOME,
        store_root=str(FIXTURES), found_by="fixture",
    )


def _scan(
    path: Path, cursor: bytes | None = None, history: HistoryMode = HistoryMode.INCREMENTAL
) -> tuple[list[Observation], list[Quarantine], list[Batch]]:
    batches = list(QwenAdapter().acquire(_source(path), cursor, AcquireContext(history=history)))
    obs = [o for b in batches for o in b.observations]
    quarantined = [q for b in batches for q in b.quarantined]
    return obs, quarantined, batches


def _tools(obs: list[Observation], stage: Stage) -> list[Observation]:
    return [o for o in obs if o.family is Family.TOOL and o.stage is stage]


def test_QWEN_1_spec_matches_chats_jsonl_only() -> None:
    spec = SPECS[0]
    assert spec.kind == "qwen.projects"
    assert spec.matches("abc.jsonl", "chats")
    assert not spec.matches("abc.jsonl", "tmp")
    assert not spec.matches("logs.json", "chats")
    assert adapter_for("qwen.projects").kind == "qwen.projects"


def test_QWEN_3_messages_tools_results_and_session() -> None:
    obs, quarantined, batches = _scan(TOOLS)
    assert quarantined == []
    assert batches[-1].records_read == 12
    # ui_telemetry, slash_command and at_command are bookkeeping.
    assert batches[-1].other_records == 3

    sessions = [o for o in obs if o.family is Family.SESSION]
    assert len(sessions) == 1
    session = sessions[0]
    assert session.session_id == "qwen-fixture-tools"
    assert session.cwd == "/home/dev/demo"
    assert session.attributes == {"version": "0.14.1", "git_branch": "main"}
    assert session.occurred_at == "2026-05-02T09:00:00.000Z"

    messages = [o for o in obs if o.family is Family.MESSAGE]
    assert [(m.role, m.sequence) for m in messages] == [("user", 1), ("assistant", 3), ("user", 11), ("assistant", 12)]
    # thought parts are dropped; visible text stays.
    assert messages[1].text == "I'll list the directory and open the README."
    assert "user wants" not in (messages[1].text or "")
    assert messages[1].model == "coder-model"
    assert messages[2].text is not None and messages[2].text.startswith("@src/main.py explain\n--- Content")
    assert all(not m.injected for m in messages)

    requested = _tools(obs, Stage.REQUESTED)
    assert [(t.tool_name, t.call_id) for t in requested] == [
        ("run_shell_command", "call_q1"),
        ("read_file", "call_q2"),
        ("write_file", "call_q3"),
        ("web_fetch", "call_q4"),
    ]
    assert requested[0].command == "ls -la /home/dev/demo"
    assert requested[1].file_path == "/home/dev/demo/README.md"
    assert requested[2].file_path == "/home/dev/demo/README.md"
    assert requested[3].url == "https://example.com/docs/setup"
    args = msgspec.json.decode(requested[0].arguments or "")
    assert args == {"command": "ls -la /home/dev/demo", "description": "List files", "is_background": False}

    results = _tools(obs, Stage.RESULT)
    assert [(r.call_id, r.tool_name, r.is_error, r.interrupted) for r in results] == [
        ("call_q1", "run_shell_command", False, False),
        ("call_q2", "read_file", True, False),
        ("call_q3", "write_file", False, False),
        ("call_q4", "web_fetch", False, True),
    ]
    assert results[0].result is not None and "README.md" in results[0].result
    assert results[1].result == "File not found: /home/dev/demo/README.md"
    for o in obs:
        assert o.client == "qwen" and o.source_kind == "qwen.projects"
        assert o.session_id == "qwen-fixture-tools"
        assert o.provenance.path == str(TOOLS)
        assert o.provenance.line == o.sequence


def test_QWEN_2_usage_once_per_assistant_record_not_from_ui_telemetry() -> None:
    obs, _, _ = _scan(TOOLS)
    usage = [o for o in obs if o.family is Family.USAGE]
    # Three assistant records, three usages; the ui_telemetry copy adds none.
    assert [u.sequence for u in usage] == [3, 7, 12]
    # OpenAI-compatible backend: total = prompt + candidates, candidates include thoughts.
    assert usage[0].usage == TokenUsage(
        input_tokens=1200, output_tokens=40, cache_read_input_tokens=1000,
        reasoning_output_tokens=12, total_tokens=1240,
    )
    assert usage[0].model == "coder-model"
    # Gemini-native backend: total = prompt + candidates + thoughts, thoughts added to output.
    assert usage[1].usage == TokenUsage(
        input_tokens=2000, output_tokens=80, reasoning_output_tokens=30, total_tokens=2080
    )
    # Without a total the split cannot be told: default reading, marked ambiguous.
    assert usage[2].usage is not None and usage[2].usage.output_tokens == 20
    assert usage[2].ambiguous == ("usage",)
    assert usage[0].ambiguous == () and usage[1].ambiguous == ()


def test_gemini_usage_tool_prompt_tokens_are_input() -> None:
    usage, ambiguous = gemini_usage(
        _UsageMetadata(promptTokenCount=100, toolUsePromptTokenCount=20, candidatesTokenCount=5,
                       thoughtsTokenCount=3, totalTokenCount=128)
    )
    assert usage.input_tokens == 120
    assert usage.output_tokens == 8
    assert not ambiguous


def test_QWEN_5_unknown_and_schema_invalid_records_quarantined_by_themselves() -> None:
    obs, quarantined, batches = _scan(EDGE)
    assert [(q.reason, q.line) for q in quarantined] == [
        ("unknown_record_type", 2),
        ("schema_mismatch", 3),
        ("malformed_json", 4),
        ("unknown_content_block", 6),
        ("schema_mismatch", 7),
    ]
    assert quarantined[0].record_id == "e-x1"
    assert quarantined[0].session_id == "qwen-fixture-edge"
    # The records around them are still acquired (terminal per record, not per source).
    texts = [o.text for o in obs if o.family is Family.MESSAGE]
    assert texts == ["hello", "Here is a chart.", "bye"]
    # blank line not counted, every other line is a record read
    assert batches[-1].records_read == 7
    for q in quarantined:
        encoded = msgspec.json.encode(q)
        assert b"synthetic" not in encoded and b"chart" not in encoded and b"no uuid" not in encoded


def test_QWEN_4_not_a_generic_fallback_flat_records_are_not_reinterpreted(tmp_path: Path) -> None:
    path = tmp_path / "chats" / "flat.jsonl"
    path.parent.mkdir()
    path.write_text(
        '{"type":"tool_call","sessionId":"s","name":"repo_status","input":{"format":"json"}}\n'
        '{"type":"tool_result","sessionId":"s","tool":"repo_status","content":"MCP text"}\n'
    )
    obs, quarantined, _ = _scan(path)
    assert obs == []
    assert [q.reason for q in quarantined] == ["unknown_record_type", "schema_mismatch"]


def test_bound_exceeded_record_is_quarantined_with_bound(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    big = "x" * 70_000
    lines = [
        msgspec.json.encode({"uuid": "u1", "sessionId": "s", "type": "user", "cwd": "/w",
                             "message": {"role": "user", "parts": [{"text": "ok"}]}}),
        msgspec.json.encode({"uuid": "u2", "sessionId": "s", "type": "user", "cwd": "/w",
                             "message": {"role": "user", "parts": [{"text": big}]}}),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    obs, quarantined, _ = _scan(path)
    assert [q.reason for q in quarantined] == ["unbounded_value"]
    assert quarantined[0].field == "text" and quarantined[0].bound == 65_536
    assert quarantined[0].record_id == "u2"
    assert [o.text for o in obs if o.family is Family.MESSAGE] == ["ok"]


def test_deterministic_ids_and_identity_from_session_id(tmp_path: Path) -> None:
    first, _, _ = _scan(TOOLS)
    again, _, _ = _scan(TOOLS)
    assert [o.observation_id for o in first] == [o.observation_id for o in again]
    assert len({o.observation_id for o in first}) == len(first)
    # A moved transcript keeps its ids: the identity is "qwen:<session id>", not the path.
    moved = tmp_path / "elsewhere.jsonl"
    shutil.copyfile(TOOLS, moved)
    relocated, _, _ = _scan(moved)
    assert [o.observation_id for o in relocated] == [o.observation_id for o in first]


def test_two_scans_resume_and_session_emitted_once(tmp_path: Path) -> None:
    lines = TOOLS.read_bytes().splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_bytes(b"".join(lines[:4]))
    first, _, batches = _scan(path)
    cursor = batches[-1].cursor
    with path.open("ab") as fh:
        fh.write(b"".join(lines[4:]))
    second, _, batches2 = _scan(path, cursor)
    full, _, _ = _scan(TOOLS)
    assert [o.observation_id for o in first + second] == [o.observation_id for o in full]
    assert sum(o.family is Family.SESSION for o in second) == 0
    assert batches2[-1].records_read == 8
    # Backfill ignores the cursor.
    again, _, _ = _scan(path, cursor, HistoryMode.BACKFILL)
    assert len(again) == len(full)


def test_partial_last_line_is_left_for_later(tmp_path: Path) -> None:
    data = TOOLS.read_bytes()
    path = tmp_path / "live.jsonl"
    cut = data.index(b"\n") + 20
    path.write_bytes(data[:cut])
    obs, quarantined, batches = _scan(path)
    assert batches[-1].partial
    assert quarantined == []
    assert {o.sequence for o in obs} == {1}


def test_windows_of_about_four_mib_have_resumable_cursors(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    text = "y" * 60_000
    with path.open("wb") as fh:
        for i in range(160):
            fh.write(msgspec.json.encode({"uuid": f"u{i}", "sessionId": "s", "type": "user",
                                          "message": {"role": "user", "parts": [{"text": text}]}}) + b"\n")
    _, _, batches = _scan(path)
    assert len(batches) >= 2
    total = sum(len(b.observations) for b in batches)
    assert total == 161  # 160 messages + 1 session
    # Resuming from the first window's cursor yields exactly the rest.
    rest, _, _ = _scan(path, batches[0].cursor)
    assert len(rest) == total - len(batches[0].observations)


_LINES = TOOLS.read_bytes()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(_LINES)), min_size=1, max_size=6))
def test_split_append_yields_same_observations(tmp_path: Path, cuts: list[int]) -> None:
    """However the writer's appends are split, incremental scans add up to one full scan."""
    path = tmp_path / f"split-{os.getpid()}.jsonl"
    path.write_bytes(b"")
    cursor = None
    seen: list[Observation] = []
    previous = 0
    for cut in [*sorted(cuts), len(_LINES)]:
        with path.open("ab") as fh:
            fh.write(_LINES[previous:cut])
        previous = max(previous, cut)
        obs, quarantined, batches = _scan(path, cursor)
        assert quarantined == []
        seen.extend(obs)
        cursor = batches[-1].cursor
    full, _, _ = _scan(TOOLS)
    assert [msgspec.json.encode(o) for o in seen] == [
        msgspec.json.encode(o).replace(str(TOOLS).encode(), str(path).encode()) for o in full
    ]
    path.unlink()


@pytest.mark.parametrize("garbage", [b"\xff\xfe{bad}\n", b"{not json}\n"])
def test_unreadable_lines_are_quarantined_content_free(tmp_path: Path, garbage: bytes) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(garbage + TOOLS.read_bytes().splitlines(keepends=True)[0])
    obs, quarantined, _ = _scan(path)
    assert [q.reason for q in quarantined] == [
        "invalid_utf8" if garbage.startswith(b"\xff") else "malformed_json"
    ]
    assert [o.family for o in obs] == [Family.SESSION, Family.MESSAGE]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
_record = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "tool_result", "system", "other"]), "uuid": st.text(max_size=4)},
    optional={
        "sessionId": st.text(max_size=4) | _json,
        "message": st.fixed_dictionaries({}, optional={"role": _json, "parts": st.lists(
            st.dictionaries(st.sampled_from(["text", "thought", "functionCall", "functionResponse", "x"]), _json,
                            max_size=3), max_size=3) | _json}),
        "usageMetadata": st.dictionaries(st.sampled_from(["promptTokenCount", "candidatesTokenCount",
                                                          "thoughtsTokenCount", "totalTokenCount"]),
                                         st.integers(0, 10**6) | _json, max_size=4),
        "toolCallResult": _json,
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(_record | _json, min_size=1, max_size=6))
def test_arbitrary_records_never_crash_and_every_line_is_accounted(tmp_path: Path, records: list[object]) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in records))
    obs, quarantined, batches = _scan(path)
    assert batches[-1].records_read == len(records)
    handled = {o.provenance.line for o in obs} | {q.line for q in quarantined}
    # every line produced something, was quarantined, or was bookkeeping / empty of facts
    assert handled <= set(range(1, len(records) + 1))
