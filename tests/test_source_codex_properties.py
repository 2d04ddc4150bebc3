"""Property tests for the Codex adapter: split scans equal one scan; bad input stays bounded.

Hypothesis cuts a rollout at arbitrary byte positions (inside lines, inside multi-byte
characters) and feeds the pieces to successive incremental scans; the observations and
quarantines must equal one scan of the whole file. A second property throws arbitrary
JSON and bytes at the parser: the only exception allowed out is ``SourceError``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telltale.errors import SourceError
from telltale.model import Observation, Quarantine
from telltale.sources.base import AcquireContext
from telltale.sources.codex import CodexAdapter
from telltale.sources.spec import RootType, Source

STORE = Path(__file__).parent / "fixtures" / "session_stores" / "codex"
ROLLOUTS = sorted(p for p in STORE.rglob("*.jsonl") if p.relative_to(STORE).parts[0] == "sessions")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _source(path: Path) -> Source:
    return Source(
        client="codex",
        kind="codex.sessions",
        path=str(path),
        root_type=RootType.CODEX_HOME,
        store_root=str(path.parent),
        found_by="fixture",
    )


def _scan(path: Path, cursor: bytes | None) -> tuple[list[Observation], list[Quarantine], bytes | None]:
    observations: list[Observation] = []
    quarantined: list[Quarantine] = []
    for batch in CodexAdapter().acquire(_source(path), cursor, AcquireContext()):
        observations.extend(batch.observations)
        quarantined.extend(batch.quarantined)
        cursor = batch.cursor
    return observations, quarantined, cursor


def _with_extras(data: bytes) -> bytes:
    """The fixture plus records that exercise carried state across a cut."""
    extra = [
        {"timestamp": "2026-03-09T00:00:00.000Z", "type": "mystery", "payload": {}},
        {
            "timestamp": "2026-03-09T00:00:01.000Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd":"ls ü"}',
                "call_id": "call_split",
            },
        },
        {"timestamp": "2026-03-09T00:00:02.000Z", "type": "event_msg", "payload": {"type": "turn_aborted"}},
    ]
    return data + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in extra).encode()


@pytest.mark.parametrize("rollout", ROLLOUTS, ids=lambda p: p.parent.name)
@SETTINGS
@given(data=st.data())
def test_split_appends_give_the_same_observations_as_one_scan(
    tmp_path_factory: pytest.TempPathFactory, rollout: Path, data: st.DataObject
) -> None:
    whole = _with_extras(rollout.read_bytes()) if "ordinal" not in rollout.read_text() else rollout.read_bytes()
    cuts = sorted(data.draw(st.sets(st.integers(min_value=1, max_value=len(whole) - 1), max_size=6)))
    folder = tmp_path_factory.mktemp("split")
    reference = folder / "whole.jsonl"
    reference.write_bytes(whole)
    expected = _scan(reference, None)[:2]

    path = folder / "growing.jsonl"
    path.write_bytes(b"")
    observations: list[Observation] = []
    quarantined: list[Quarantine] = []
    cursor: bytes | None = None
    start = 0
    for end in [*cuts, len(whole)]:
        with path.open("ab") as fh:
            fh.write(whole[start:end])
        start = end
        got, held, cursor = _scan(path, cursor)
        observations.extend(got)
        quarantined.extend(held)

    def strip(items: list[Any]) -> list[Any]:
        # Provenance names the file; everything else must be identical.
        return [
            msgspec.structs.replace(o, path="x")
            if isinstance(o, Quarantine)
            else msgspec.structs.replace(o, provenance=msgspec.structs.replace(o.provenance, path="x"))
            for o in items
        ]

    assert strip(observations) == strip(expected[0])
    assert strip(quarantined) == strip(expected[1])


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
_types = st.sampled_from(
    ["session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state", "mystery"]
)
_payload_types = st.sampled_from(
    [
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "reasoning",
        "token_count",
        "turn_aborted",
        "item_completed",
        "user_message",
        "exec_command_end",
        "tool_search_output",
        "unknown",
    ]
)


@st.composite
def _records(draw: st.DrawFn) -> bytes:
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return draw(st.binary(max_size=60)).replace(b"\n", b" ")
    if choice == 1:
        return json.dumps(draw(_json)).encode()
    payload = draw(
        st.dictionaries(
            st.sampled_from(
                [
                    "call_id",
                    "name",
                    "arguments",
                    "output",
                    "content",
                    "role",
                    "info",
                    "item",
                    "thread_id",
                    "action",
                    "input",
                    "id",
                    "history_base",
                    "subagent_history_start_ordinal",
                    "tools",
                    "text",
                ]
            ),
            _json,
            max_size=5,
        )
    )
    payload["type"] = draw(_payload_types)
    record: dict[str, Any] = {"timestamp": draw(st.text(max_size=30)), "type": draw(_types), "payload": payload}
    if draw(st.booleans()):
        record["ordinal"] = draw(_json)
    return json.dumps(record).encode()


@SETTINGS
@given(records=st.lists(_records(), max_size=12))
def test_arbitrary_input_never_escapes_as_anything_but_source_error(
    tmp_path_factory: pytest.TempPathFactory, records: list[bytes]
) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "rollout-fuzz.jsonl"
    header = b'{"timestamp":"2026-03-09T00:00:00Z","type":"session_meta","payload":{"id":"fuzz","cwd":"/w"}}\n'
    path.write_bytes(header + b"\n".join(records) + b"\n")
    try:
        observations, quarantined, cursor = _scan(path, None)
    except SourceError as exc:
        assert len(exc.detail) <= 512
        return
    assert cursor is not None
    for quarantine in quarantined:
        assert quarantine.line is not None and quarantine.line >= 2
    for observation in observations:
        assert observation.session_id == "fuzz"
