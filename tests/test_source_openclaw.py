"""OpenClaw JSONL adapter (``openclaw.agents``): entries, rotation, quarantine, increments."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telltale.errors import SourceError
from telltale.model import Family, Observation, Quarantine, Stage, TokenUsage
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.openclaw import SPECS, OpenClawAdapter, rotation_attributes
from telltale.sources.spec import RootType, Source

AGENTS = Path(__file__).parent / "fixtures" / "session_stores" / "openclaw" / "agents"
SESSIONS = AGENTS / "main" / "sessions"
TOOLS = SESSIONS / "claw-fixture-tools.jsonl"
RESET = SESSIONS / "claw-fixture-rotated.jsonl.reset.2026-05-05T01-36-27.276Z"
DELETED = SESSIONS / "claw-fixture-gone.jsonl.deleted.1777939200"
EDGE = AGENTS / "edge" / "sessions" / "claw-fixture-edge.jsonl"


def _source(path: Path) -> Source:
    return Source(
        client="openclaw", kind="openclaw.agents", path=str(path), root_type=RootType.HOME,
        store_root=str(AGENTS), found_by="fixture",
    )


def _scan(path: Path, cursor: bytes | None = None) -> tuple[list[Observation], list[Quarantine], list[Batch]]:
    batches = list(OpenClawAdapter().acquire(_source(path), cursor, AcquireContext()))
    return (
        [o for b in batches for o in b.observations],
        [q for b in batches for q in b.quarantined],
        batches,
    )


def test_CLAW_1_spec_takes_transcripts_and_rotations_not_companions() -> None:
    spec = SPECS[0]
    assert spec.kind == "openclaw.agents"
    transcripts = sorted(p.name for p in SESSIONS.iterdir() if spec.matches(p.name, p.parent.name))
    assert transcripts == sorted([TOOLS.name, RESET.name, DELETED.name])
    for name in ("sessions.json", "claw-fixture-tools.jsonl.lock", "claw-fixture-tools.trajectory.jsonl",
                 "claw-fixture-tools.trajectory-path.json", "x.trajectory.jsonl.reset.1"):
        assert not spec.matches(name, "sessions"), name
    assert spec.matches("abc.jsonl.deleted", "sessions")


def test_entries_map_to_session_messages_tools_and_usage() -> None:
    obs, quarantined, batches = _scan(TOOLS)
    assert quarantined == []
    assert batches[-1].records_read == 13
    # model_change, thinking_level_change, custom and compaction are bookkeeping.
    assert batches[-1].other_records == 4

    session = obs[0]
    assert session.family is Family.SESSION
    assert session.session_id == "claw-fixture-tools"
    assert session.cwd == "/home/claw/workspace"
    assert session.occurred_at == "2026-05-04T08:00:00.000Z"
    assert session.attributes == {"format_version": "3"}

    messages = [o for o in obs if o.family is Family.MESSAGE]
    assert [(m.role, m.text) for m in messages] == [
        ("user", "Check the build and save the notes."),
        ("assistant", "Running the build."),  # thinking dropped
        ("user", "[cron:fixture-job Nightly] summarise the day"),  # string content
        ("assistant", "The build passed; saving notes failed."),
    ]
    assert messages[1].provider == "amazon-bedrock"
    assert messages[1].model == "us.anthropic.claude-opus-4-6-v1"

    requested = [o for o in obs if o.family is Family.TOOL and o.stage is Stage.REQUESTED]
    assert [(t.tool_name, t.call_id) for t in requested] == [
        ("exec", "toolu_claw_exec1"), ("write", "toolu_claw_write1"), ("web_fetch", "toolu_claw_fetch1"),
    ]
    assert requested[0].command == "make -C /home/claw/workspace build"
    assert requested[1].file_path == "/home/claw/workspace/NOTES.md"
    assert requested[2].url == "https://example.org/changelog"
    assert msgspec.json.decode(requested[1].arguments or "") == {
        "path": "/home/claw/workspace/NOTES.md", "content": "# Notes\nBuild passed.\n",
    }

    results = [o for o in obs if o.family is Family.TOOL and o.stage is Stage.RESULT]
    assert [(r.call_id, r.tool_name, r.is_error, r.exit_code) for r in results] == [
        ("toolu_claw_exec1", "exec", False, 0),
        ("toolu_claw_write1", "write", True, None),
        ("toolu_claw_fetch1", "web_fetch", False, None),
    ]
    assert results[0].result == "build ok\n0 warnings"

    usage = [o for o in obs if o.family is Family.USAGE]
    assert len(usage) == 3  # once per assistant response
    # input = input + cacheRead + cacheWrite (OpenTelemetry meaning)
    assert usage[0].usage == TokenUsage(
        input_tokens=9403, output_tokens=120, cache_read_input_tokens=9000,
        cache_creation_input_tokens=400, total_tokens=9523,
    )
    assert usage[2].provider == "litellm" and usage[2].model == "deepseek-v3.2"
    for o in obs:
        assert o.session_id == "claw-fixture-tools" and o.cwd == "/home/claw/workspace"
        assert o.agent == "main"  # agents/<agentId>/sessions/
        assert o.provenance.line == o.sequence


def test_rotated_transcripts_acquired_with_rotation_noted() -> None:
    for path, kind, when in ((RESET, "reset", "2026-05-05T01-36-27.276Z"), (DELETED, "deleted", "1777939200")):
        obs, quarantined, _ = _scan(path)
        assert quarantined == []
        assert [o.family for o in obs] == [Family.SESSION, Family.MESSAGE, Family.MESSAGE, Family.USAGE]
        assert obs[0].session_id == path.name.split(".jsonl")[0]
        for o in obs:
            assert o.attributes["rotation"] == kind
            assert o.attributes["rotated_at"] == when
    assert rotation_attributes("/x/abc.jsonl") == {}
    assert rotation_attributes("/x/abc.jsonl.deleted") == {"rotation": "deleted"}


def test_rotation_keeps_observation_ids(tmp_path: Path) -> None:
    """A live transcript renamed to ``.reset.<ts>`` yields the same ids (coordinates are native)."""
    live, _, _ = _scan(TOOLS)
    rotated = tmp_path / f"{TOOLS.name}.reset.2026-05-06T00-00-00.000Z"
    shutil.copyfile(TOOLS, rotated)
    again, _, _ = _scan(rotated)
    assert [o.observation_id for o in again] == [o.observation_id for o in live]
    assert len({o.observation_id for o in live}) == len(live)


def test_unknown_entries_roles_blocks_and_bad_lines_quarantined() -> None:
    obs, quarantined, batches = _scan(EDGE)
    assert [(q.reason, q.line, q.record_id) for q in quarantined] == [
        ("unknown_record_type", 2, "c0000002"),
        ("unknown_record_type", 3, "c0000003"),  # unknown message role
        ("unknown_content_block", 4, "c0000004"),
        ("malformed_json", 5, None),
        ("schema_mismatch", 6, "c0000006"),
    ]
    # No header: the session id falls back to the file name.
    assert {q.session_id for q in quarantined} == {"claw-fixture-edge"}
    assert [(o.family, o.text) for o in obs] == [
        (Family.MESSAGE, "headerless transcript"), (Family.MESSAGE, "See the picture."),
    ]
    assert batches[-1].other_records == 1  # label
    for q in quarantined:
        assert b"hologram" not in msgspec.json.encode(q)


def test_second_header_with_other_id_is_identity_conflict(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    path.write_bytes(
        TOOLS.read_bytes()
        + b'{"type":"session","version":3,"id":"someone-else","timestamp":"2026-05-04T09:00:00Z","cwd":"/"}\n'
    )
    with pytest.raises(SourceError) as info:
        _scan(path)
    assert info.value.reason == "identity_conflict"
    assert "someone-else" not in str(info.value)


def test_two_scans_carry_session_identity(tmp_path: Path) -> None:
    lines = TOOLS.read_bytes().splitlines(keepends=True)
    path = tmp_path / "renamed-on-disk.jsonl"
    path.write_bytes(b"".join(lines[:5]))
    first, _, batches = _scan(path)
    with path.open("ab") as fh:
        fh.write(b"".join(lines[5:]))
    second, _, batches2 = _scan(path, batches[-1].cursor)
    assert batches2[-1].records_read == len(lines) - 5
    # The header was read in the first scan; its id and cwd come from the carried state.
    assert {o.session_id for o in second} == {"claw-fixture-tools"}
    assert {o.cwd for o in second} == {"/home/claw/workspace"}
    full, _, _ = _scan(TOOLS)
    assert [o.observation_id for o in first + second] == [o.observation_id for o in full]


_DATA = TOOLS.read_bytes()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(_DATA)), min_size=1, max_size=6))
def test_split_append_yields_same_observations(tmp_path: Path, cuts: list[int]) -> None:
    path = tmp_path / "agents" / "main" / "sessions" / "claw-split.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    cursor = None
    seen: list[Observation] = []
    previous = 0
    for cut in [*sorted(cuts), len(_DATA)]:
        with path.open("ab") as fh:
            fh.write(_DATA[previous:cut])
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


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "thinking", "toolCall", "image", "x"])},
    optional={"text": _json, "id": _json, "name": _json, "arguments": _json},
)
_entry = st.fixed_dictionaries(
    {"type": st.sampled_from(["message", "custom", "compaction", "unknown"]), "id": st.text(max_size=4)},
    optional={
        "message": st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "toolResult", "x"])},
            optional={"content": st.lists(_block, max_size=3) | _json, "usage": _json, "isError": _json,
                      "toolCallId": _json, "details": _json},
        ),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(_entry | _json, min_size=1, max_size=6))
def test_arbitrary_entries_never_crash(tmp_path: Path, entries: list[object]) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in entries))
    obs, quarantined, batches = _scan(path)
    assert batches[-1].records_read == len(entries)
    assert all(q.session_id == "fuzz" for q in quarantined)
    assert all(o.session_id == "fuzz" for o in obs)
