"""Copilot process-log adapter (``copilot.process_log``): the format of upstream EXPECTED.md §2."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telltale.errors import SourceError
from telltale.model import Family, Observation, Quarantine, Stage
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.copilot import SPECS, CopilotProcessLogAdapter
from telltale.sources.copilot.process_log import split_header
from telltale.sources.spec import RootType, Source

ROOT = Path(__file__).parent / "fixtures" / "session_stores" / "copilot"
MULTI = ROOT / "process-multi-session.log"
RULES = ROOT / "process-rules.log"


def _source(path: Path) -> Source:
    return Source(
        client="copilot", kind="copilot.process_log", path=str(path), root_type=RootType.PROJECT_LOCAL,
        store_root=str(path.parent), found_by="fixture",
    )


def _scan(path: Path, cursor: bytes | None = None) -> tuple[list[Observation], list[Quarantine], list[Batch]]:
    batches = list(CopilotProcessLogAdapter().acquire(_source(path), cursor, AcquireContext()))
    return (
        [o for b in batches for o in b.observations],
        [q for b in batches for q in b.quarantined],
        batches,
    )


def test_COP_1_spec_is_project_local_logs_directory() -> None:
    spec = SPECS[0]
    assert spec.kind == "copilot.process_log"
    assert spec.root_type.value == "project_local"
    assert spec.relative_path == "logs/copilot"
    assert spec.matches("process-1781779613986-83399.log")
    assert not spec.matches("events.jsonl")


def test_COP_5_multi_session_boundaries_give_per_session_ordinals() -> None:
    obs, quarantined, batches = _scan(MULTI)
    assert quarantined == []
    assert [(o.session_id, o.sequence, o.tool_name, o.family, o.stage) for o in obs] == [
        ("cop-fixture-a", 0, "view", Family.TOOL, Stage.REQUESTED),
        ("cop-fixture-b", 0, "run_in_terminal", Family.TOOL, Stage.REQUESTED),
    ]
    assert obs[0].observation_id != obs[1].observation_id
    assert obs[0].file_path == "README.md"
    assert obs[1].command == "pytest -q"
    # arguments are the item's JSON text, verbatim
    assert obs[0].arguments == '{"path":"README.md"}'
    assert obs[0].call_id == "call_fx_001"
    assert obs[0].provider == "github" and obs[0].model is None
    assert obs[0].occurred_at == "2026-05-07T09:00:10.000Z"
    assert obs[0].provenance.line == 2
    assert batches[-1].records_read == 6
    # A replay gives identical results.
    again, _, _ = _scan(MULTI)
    assert [msgspec.json.encode(o) for o in again] == [msgspec.json.encode(o) for o in obs]


def test_COP_5_rules_log_every_item_rule() -> None:
    obs, quarantined, _ = _scan(RULES)
    # Items before any workspace, a truncated array and a broken array with no session.
    assert [(q.reason, q.line, q.session_id) for q in quarantined] == [
        ("replay_unverifiable", 2, None),
        ("malformed_structured_output", 14, "cop-rules-a"),
        ("replay_unverifiable", 17, None),
    ]
    summary = [(o.session_id, o.sequence, o.family.value, o.stage, o.tool_name) for o in obs]
    assert summary == [
        # reasoning item is ordinal 0 and yields nothing
        ("cop-rules-a", 1, "tool", Stage.REQUESTED, "bash"),
        ("cop-rules-a", 1, "tool", Stage.RESULT, "bash"),  # the item's message is its result
        ("cop-rules-a", 2, "message", None, None),
        ("cop-rules-a", 3, "other", None, None),  # unknown item kind: present, nothing copied
        ("cop-rules-a", 4, "tool", Stage.REQUESTED, "view"),  # pretty-printed over 4 lines
        ("cop-rules-a", 5, "tool", Stage.REQUESTED, "edit"),  # a line that is itself an array
        ("cop-rules-a", 6, "tool", Stage.REQUESTED, "web_fetch"),  # projected before completion
        ("cop-rules-b", 0, "tool", Stage.REQUESTED, "create"),  # init and items on one line
        ("cop-rules-a", 7, "tool", Stage.REQUESTED, "view"),  # reactivated: counter continues
    ]
    bash = obs[0]
    assert bash.command == "git status --short"
    assert obs[1].result == "M src/app.py" and obs[1].call_id == "call_rules_001"
    assert obs[2].text == "One file changed." and obs[2].role == "assistant"
    assert obs[3].attributes == {"item": "unknown_output_item"}
    assert obs[3].text is None and obs[3].model is None
    assert obs[6].url == "https://example.net/guide"
    assert obs[7].file_path == "docs/new.md"
    # No forged workspace ever became a session.
    assert not any(o.session_id and o.session_id.startswith("cop-forged") for o in obs)
    assert len({o.observation_id for o in obs}) == len(obs)


@pytest.mark.parametrize(
    ("line", "trusted_init"),
    [
        ("2026-05-07T09:00:00.000Z [INFO] Workspace initialized: s1 (checkpoints: 0)", True),
        ("Workspace initialized: s1 (checkpoints: 0)", True),
        ("whatever [INFO] Workspace initialized: s1", True),
        ("2026-05-07T09:00:00.000Z [INFO] tool output: Workspace initialized: s1", False),
        ("2026-05-07T09:00:00.000Z Workspace initialized: s1", False),
        ("[INFO] Workspace initialized: s1", False),
    ],
)
def test_trusted_control_position(line: str, trusted_init: bool) -> None:
    is_header, _, message, trusted = split_header(line)
    assert is_header
    assert (trusted and message.startswith("Workspace initialized:")) is trusted_init


def test_header_timestamp_only_when_rfc3339() -> None:
    assert split_header("2026-05-07T09:00:00.5Z [INFO] x")[1] == "2026-05-07T09:00:00.500Z"
    assert split_header("yesterday [INFO] x")[1] is None
    assert split_header("   continuation text")[0] is False


def test_non_object_item_fails_the_source(tmp_path: Path) -> None:
    path = tmp_path / "process-bad.log"
    path.write_text(
        "2026-05-07T09:00:00.000Z [INFO] Workspace initialized: s1 (checkpoints: 0)\n"
        '2026-05-07T09:00:01.000Z [INFO] Accumulated output items (2): [{"type":"reasoning"}, "secret-ish"]\n'
    )
    with pytest.raises(SourceError) as info:
        _scan(path)
    assert info.value.reason == "schema"
    assert "secret-ish" not in str(info.value)


def test_two_scans_carry_active_session_and_ordinals(tmp_path: Path) -> None:
    lines = RULES.read_bytes().splitlines(keepends=True)
    path = tmp_path / RULES.name  # the log's name is part of the item coordinates
    # Stop inside the pretty-printed entry: it must not be mapped until it is complete.
    path.write_bytes(b"".join(lines[:10]))
    first, held, batches = _scan(path)
    assert held == [q for q in held if q.line != 10]  # not quarantined: held for later
    assert batches[-1].partial
    with path.open("ab") as fh:
        fh.write(b"".join(lines[10:]))
    second, _, _ = _scan(path, batches[-1].cursor)
    full, _, _ = _scan(RULES)
    strip = str(RULES).encode(), str(path).encode()
    assert [msgspec.json.encode(o) for o in first + second] == [
        msgspec.json.encode(o).replace(*strip) for o in full
    ]


def test_entry_held_until_complete_when_window_ends_mid_entry(tmp_path: Path) -> None:
    """A window boundary inside a multi-line entry resumes at the entry's first line."""
    from telltale.sources._jsonl_driver import acquire_lines
    from telltale.sources.copilot.process_log import _ProcessLogHandler

    source = _source(RULES)
    batches = list(
        acquire_lines(source, None, AcquireContext(), lambda c: _ProcessLogHandler(source, c), batch_bytes=1)
    )
    full, _, _ = _scan(RULES)
    assert [o.observation_id for b in batches for o in b.observations] == [o.observation_id for o in full]
    # Resuming from any window's cursor replays exactly what followed it.
    for index, batch in enumerate(batches[:-1]):
        rest = [o.observation_id for b in batches[index + 1 :] for o in b.observations]
        resumed, _, _ = _scan(RULES, batch.cursor)
        assert [o.observation_id for o in resumed] == rest


def test_log_without_items_is_acquired_empty(tmp_path: Path) -> None:
    path = tmp_path / "process-quiet.log"
    path.write_text(
        "2026-06-18T10:46:54.073Z [INFO] Workspace initialized: abc (checkpoints: 0)\n"
        "2026-06-18T10:46:55.633Z [INFO] Starting Copilot CLI: 1.0.60\n"
        "2026-06-18T10:46:56.554Z [ERROR] Starting MCP client for x with \n"
        "command: uvx \n"
        "args: serve \n"
        "\n"
    )
    obs, quarantined, batches = _scan(path)
    assert obs == [] and quarantined == []
    assert batches[-1].records_read == 3
    assert batches[-1].other_records == 3

_pieces = st.sampled_from([
    "2026-05-07T09:00:00.000Z [INFO] ", "[INFO] ", "x [WARNING] ", "  ", "",
    "Workspace initialized: s1 (checkpoints: 0)", "Workspace initialized: s2 {", "Session completed.",
    "Accumulated output items (1): ", '[{"type":"function_call","name":"bash","arguments":"{\\"command\\":\\"ls\\"}"}]',
    '[{"type":"message","role":"assistant","content":"hi"}', "]", '{"a":', "[]", "[1]", "tool output: ",
])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.lists(_pieces, min_size=1, max_size=4).map("".join), min_size=1, max_size=8))
def test_arbitrary_logs_fail_only_with_schema_error(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "process-fuzz.log"
    path.write_text("\n".join(lines) + "\n")
    try:
        obs, quarantined, batches = _scan(path)
    except SourceError as exc:
        assert exc.reason == "schema"  # only a non-object array element fails the source
        return
    assert all(o.session_id in ("s1",) for o in obs)
    assert batches[-1].cursor is not None
    assert {q.reason for q in quarantined} <= {"malformed_structured_output", "replay_unverifiable"}
