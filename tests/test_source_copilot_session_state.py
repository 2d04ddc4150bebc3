"""Copilot session-state adapter (``copilot.session_state``): event types, calls, usage, increments."""

from __future__ import annotations

from pathlib import Path

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telltale.model import Family, Observation, Quarantine, Stage, TokenUsage
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.copilot import SPECS, CopilotSessionStateAdapter
from telltale.sources.registry import adapter_for
from telltale.sources.spec import RootType, Source

STATE = Path(__file__).parent / "fixtures" / "session_stores" / "copilot" / "session-state"
SID = "5c3e9a10-0000-4000-8000-c0p11o7f1x01"
EVENTS = STATE / SID / "events.jsonl"
FLAT = STATE / "0d1e2f30-0000-4000-8000-f1a7f1a7f1a7.jsonl"
EDGE = STATE / "edge-session" / "events.jsonl"


def _source(path: Path) -> Source:
    return Source(
        client="copilot", kind="copilot.session_state", path=str(path), root_type=RootType.HOME,
        store_root=str(STATE), found_by="fixture",
    )


def _scan(path: Path, cursor: bytes | None = None) -> tuple[list[Observation], list[Quarantine], list[Batch]]:
    batches = list(CopilotSessionStateAdapter().acquire(_source(path), cursor, AcquireContext()))
    return (
        [o for b in batches for o in b.observations],
        [q for b in batches for q in b.quarantined],
        batches,
    )


def _of(obs: list[Observation], family: Family, stage: Stage | None = None) -> list[Observation]:
    return [o for o in obs if o.family is family and o.stage is stage]


def test_COP_6_spec_takes_event_logs_never_the_databases() -> None:
    spec = SPECS[1]
    assert spec.kind == "copilot.session_state"
    assert adapter_for("copilot.session_state").kind == "copilot.session_state"
    assert spec.matches("events.jsonl", SID)
    assert spec.matches(f"{SID}.jsonl", "session-state")
    for name in ("session-store.db", "session.db", "workspace.yaml", "index.md", "session.db-wal"):
        assert not spec.matches(name, SID), name


def test_session_start_and_messages() -> None:
    obs, quarantined, batches = _scan(EVENTS)
    assert quarantined == []
    assert batches[-1].records_read == 26
    session = _of(obs, Family.SESSION)
    assert len(session) == 1
    assert session[0].session_id == SID
    assert session[0].cwd == "/home/dev/app"
    assert session[0].provider == "github"
    assert session[0].attributes == {
        "copilot_version": "1.0.60", "repository": "example/app", "git_root": "/home/dev/app",
        "branch": "main", "host_type": "github",
    }
    messages = _of(obs, Family.MESSAGE)
    assert [(m.role, m.injected, m.text) for m in messages] == [
        ("system", True, "You are the GitHub Copilot CLI (synthetic fixture prompt)."),
        ("user", False, "/init"),  # what the user typed, not transformedContent
        ("assistant", False, "I will create the instructions file."),
    ]
    assert messages[2].model == "claude-sonnet-4.6"  # model names stay as Copilot writes them
    for o in obs:
        assert o.session_id == SID and o.client == "copilot"
        assert o.provenance.line == o.sequence


def test_tool_requests_results_and_execution_start_not_duplicated() -> None:
    obs, _, _ = _scan(EVENTS)
    requested = _of(obs, Family.TOOL, Stage.REQUESTED)
    assert [(t.tool_name, t.call_id, t.sequence) for t in requested] == [
        ("report_intent", "toolu_fx_intent", 7),
        ("view", "toolu_fx_view", 7),
        ("bash", "toolu_fx_bash", 7),
        # never requested in an assistant.message: its execution_start stands in
        ("web_fetch", "toolu_fx_sub", 20),
        ("bash", "toolu_fx_mkdir", 22),
    ]
    assert requested[1].file_path == "/home/dev/app/README.md"
    assert requested[2].command == "ls -la /home/dev/app"
    assert requested[3].url == "https://example.com/copilot-docs"
    assert requested[3].model == "claude-haiku-4.5"
    assert requested[0].model == "claude-sonnet-4.6" and requested[0].provider == "github"
    assert msgspec.json.decode(requested[4].arguments or "") == {
        "command": "mkdir -p /home/dev/app/.github", "description": "mkdir",
    }

    results = _of(obs, Family.TOOL, Stage.RESULT)
    assert [(r.call_id, r.tool_name, r.is_error, r.interrupted) for r in results] == [
        ("toolu_fx_intent", "report_intent", False, False),
        ("toolu_fx_view", "view", False, False),
        ("toolu_fx_bash", "bash", True, False),
        ("toolu_fx_sub", "web_fetch", False, False),
        ("toolu_fx_mkdir", "bash", None, True),  # pending at the abort
    ]
    assert results[2].result == "ls: cannot access '/home/dev/app': No such file or directory"
    assert results[4].attributes == {"abort_reason": "user_initiated"}


def test_execution_start_id_matches_a_request_seen_elsewhere(tmp_path: Path) -> None:
    """Requests are keyed by call id: the stand-in from execution_start has the request's id."""
    lines = EVENTS.read_bytes().splitlines(keepends=True)
    full, _, _ = _scan(EVENTS)
    # Drop the assistant.message (line 7): the three requests now come from execution_start.
    path = tmp_path / SID / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(lines[:6] + lines[7:]))
    partial, _, _ = _scan(path)
    ids = {o.call_id: o.observation_id for o in _of(full, Family.TOOL, Stage.REQUESTED)}
    standins = {o.call_id: o.observation_id for o in _of(partial, Family.TOOL, Stage.REQUESTED)}
    assert standins["toolu_fx_view"] == ids["toolu_fx_view"]
    assert standins["toolu_fx_bash"] == ids["toolu_fx_bash"]


def test_permissions_are_security_relevant_other_records() -> None:
    obs, _, _ = _scan(EVENTS)
    perms = _of(obs, Family.OTHER)
    assert [(p.attributes["event"], p.call_id, p.tool_name) for p in perms] == [
        ("permission.requested", "toolu_fx_view", "view"),
        ("permission.completed", "toolu_fx_view", "view"),
        ("permission.requested", "toolu_fx_mkdir", "bash"),
        ("permission.completed", "toolu_fx_mkdir", "bash"),
    ]
    assert perms[0].attributes["permission_kind"] == "read"
    assert perms[1].attributes["approved"] == "true"
    assert perms[3].attributes["decision"] == "denied-interactively-by-user"
    assert perms[3].attributes["approved"] == "false"
    # The command text of a shell permission is not copied (it lives on the tool request).
    assert all("mkdir" not in v for p in perms for v in p.attributes.values())


def test_usage_per_response_output_and_per_model_at_shutdown() -> None:
    obs, _, _ = _scan(EVENTS)
    usage = _of(obs, Family.USAGE)
    responses = [u for u in usage if u.attributes["usage_scope"] == "response"]
    assert [(u.usage, u.model) for u in responses] == [
        (TokenUsage(output_tokens=210), "claude-sonnet-4.6"),
        (TokenUsage(output_tokens=95), "claude-sonnet-4.6"),
    ]
    totals = {u.model: u.usage for u in usage if u.attributes["usage_scope"] == "session"}
    assert totals == {
        "claude-sonnet-4.6": TokenUsage(
            input_tokens=30000, output_tokens=305, cache_read_input_tokens=20000,
            cache_creation_input_tokens=5000, reasoning_output_tokens=40,
        ),
        "claude-haiku-4.5": TokenUsage(
            input_tokens=800, output_tokens=30, cache_read_input_tokens=0,
            cache_creation_input_tokens=0, reasoning_output_tokens=0,
        ),
    }


def test_flat_layout_session_id_and_model_fallback() -> None:
    obs, quarantined, _ = _scan(FLAT)
    assert quarantined == []
    assert {o.session_id for o in obs} == {"0d1e2f30-0000-4000-8000-f1a7f1a7f1a7"}
    assert [o.family for o in obs] == [Family.SESSION, Family.MESSAGE, Family.MESSAGE, Family.USAGE]
    assert obs[0].cwd == "/home/dev/old"


def test_malformed_quarantined_unknown_dotted_types_counted() -> None:
    obs, quarantined, batches = _scan(EDGE)
    assert [(q.reason, q.line) for q in quarantined] == [
        ("malformed_json", 2),
        ("schema_mismatch", 3),  # envelope without a type
        ("unknown_record_type", 4),  # undotted unknown type
        ("schema_mismatch", 6),  # toolRequests is not a list
    ]
    assert batches[-1].other_records == 1  # session.future_feature
    assert {q.session_id for q in quarantined} == {"edge-session"}
    late = _of(obs, Family.TOOL, Stage.RESULT)
    assert [(r.call_id, r.tool_name, r.result) for r in late] == [("toolu_late", None, "late")]


def test_two_scans_carry_pending_calls(tmp_path: Path) -> None:
    lines = EVENTS.read_bytes().splitlines(keepends=True)
    path = tmp_path / SID / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(lines[:8]))  # requests seen, nothing completed yet
    first, _, batches = _scan(path)
    with path.open("ab") as fh:
        fh.write(b"".join(lines[8:]))
    second, _, _ = _scan(path, batches[-1].cursor)
    results = _of(second, Family.TOOL, Stage.RESULT)
    # tool names and the no-duplicate rule come from the carried pending calls
    assert [(r.call_id, r.tool_name) for r in results][:3] == [
        ("toolu_fx_intent", "report_intent"), ("toolu_fx_view", "view"), ("toolu_fx_bash", "bash"),
    ]
    assert not [o for o in second if o.stage is Stage.REQUESTED and o.call_id == "toolu_fx_view"]
    full, _, _ = _scan(EVENTS)
    assert [o.observation_id for o in first + second] == [o.observation_id for o in full]
    assert {o.cwd for o in second} == {"/home/dev/app"}

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
_types = st.sampled_from([
    "session.start", "user.message", "system.message", "assistant.message", "tool.execution_start",
    "tool.execution_complete", "permission.requested", "permission.completed", "session.shutdown", "abort",
    "session.model_change", "future.thing", "mystery",
])
_event = st.fixed_dictionaries(
    {"type": _types},
    optional={"id": st.text(max_size=4), "timestamp": _json, "data": st.dictionaries(
        st.sampled_from(["content", "toolRequests", "toolCallId", "success", "result", "modelMetrics",
                         "sessionId", "context", "outputTokens", "permissionRequest"]), _json, max_size=4)},
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(_event | _json, min_size=1, max_size=6))
def test_arbitrary_events_never_crash(tmp_path: Path, events: list[object]) -> None:
    path = tmp_path / "fuzz-session" / "events.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))
    obs, quarantined, batches = _scan(path)
    assert batches[-1].records_read == len(events)
    assert len(quarantined) + batches[-1].other_records <= len(events)
    assert all(1 <= (o.provenance.line or 0) <= len(events) for o in obs)
