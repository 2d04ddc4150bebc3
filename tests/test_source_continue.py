"""Continue sessions and dev-data token log over synthetic chat and agent sessions."""

from __future__ import annotations

import json
from pathlib import Path

from extension_fixtures import continue_agent_session, continue_chat_session, write_continue
from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.continue_ import SPECS, ContinueDevDataAdapter, ContinueSessionAdapter
from telltale.sources.continue_.sessions import workspace_path
from telltale.sources.spec import RootType, Source


def _scan(kind: str, path: Path, cursor: bytes | None = None) -> Batch:
    source = Source(client="continue", kind=kind, path=str(path), root_type=RootType.HOME,
                    store_root=str(path.parent), found_by="fixture")
    adapter = ContinueSessionAdapter() if kind == "continue.sessions" else ContinueDevDataAdapter()
    batches = list(adapter.acquire(source, cursor, AcquireContext()))
    return batches[-1]


def test_chat_session_messages_model_cwd_and_creation_time(tmp_path: Path) -> None:
    session = continue_chat_session()
    write_continue(tmp_path, [session])
    batch = _scan("continue.sessions", tmp_path / "sessions" / f"{session['sessionId']}.json")
    assert batch.quarantined == []
    obs = batch.observations
    assert [(o.family.value, o.role) for o in obs] == [("session", None), ("message", "user"), ("message", "assistant")]
    assert obs[0].occurred_at == "2025-05-04T13:12:50.610Z"  # sessions.json dateCreated
    assert obs[1].text == "how does env work"
    assert obs[2].model == "thudm/glm-4-32b"
    assert {o.cwd for o in obs} == {"/home/dev/proj"}
    assert {o.session_id for o in obs} == {session["sessionId"]}


def test_agent_session_tool_calls_and_results(tmp_path: Path) -> None:
    session = continue_agent_session()
    write_continue(tmp_path, [session])
    obs = _scan("continue.sessions", tmp_path / "sessions" / f"{session['sessionId']}.json").observations
    requested = [o for o in obs if o.family is Family.TOOL and o.stage is Stage.REQUESTED]
    results = {o.call_id: o for o in obs if o.family is Family.TOOL and o.stage is Stage.RESULT}
    # Independent count: toolCalls in the JSON; results = role:"tool" messages + terminal states
    # whose call has no role:"tool" answer.
    history = session["history"]
    calls = sum(len(h["message"].get("toolCalls", [])) for h in history)
    answered = {h["message"]["toolCallId"] for h in history if h["message"]["role"] == "tool"}
    states = [s for h in history for s in h.get("toolCallStates", []) if s["toolCallId"] not in answered]
    assert len(requested) == calls == 2
    assert len(results) == len(answered) + len(states) == 2
    assert requested[0].command == "cat ~/.ssh/id_rsa"
    assert requested[1].tool_name == "read_file" and requested[1].file_path == "src/main.py"
    assert requested[0].model == "claude-sonnet-4-0" and requested[0].provider == "anthropic"
    assert results["call_1"].result == "-----BEGIN" and results["call_1"].tool_name == "run_terminal_command"
    assert results["call_2"].is_error is True and results["call_2"].result == "not found"
    session_obs = next(o for o in obs if o.family is Family.SESSION)
    assert session_obs.attributes == {"mode": "agent"}


def test_streaming_assistant_is_held_and_edit_truncation_is_reported(tmp_path: Path) -> None:
    session = continue_agent_session()
    history = session["history"]
    # Caught while the agent runs its tool: the last item's call is still "calling".
    session["history"] = history[:2]
    session["history"][1] = json.loads(json.dumps(history[1]))
    session["history"][1]["toolCallStates"][0]["status"] = "calling"
    write_continue(tmp_path, [session])
    path = tmp_path / "sessions" / f"{session['sessionId']}.json"
    first = _scan("continue.sessions", path)
    assert first.partial
    assert not [o for o in first.observations if o.family is Family.TOOL]
    session["history"] = history
    write_continue(tmp_path, [session])
    second = _scan("continue.sessions", path, first.cursor)
    assert len([o for o in second.observations if o.family is Family.TOOL]) == 4
    # The user edits the first message: Continue truncates the history after it.
    session["history"] = [{"message": {"id": "u-9", "role": "user", "content": "again"}, "contextItems": []}]
    write_continue(tmp_path, [session])
    third = _scan("continue.sessions", path, second.cursor)
    assert [o.text for o in third.observations] == ["again"]
    assert [h.reason for h in third.health] == ["source_reordered"]
    assert third.health[0].fields["vanished"] == 4


def test_dev_data_token_lines_are_usage(tmp_path: Path) -> None:
    write_continue(tmp_path, [continue_chat_session()], tokens=4)
    path = tmp_path / "dev_data" / "0.2.0" / "tokensGenerated.jsonl"
    batch = _scan("continue.dev_data", path)
    assert [o.usage.input_tokens if o.usage else None for o in batch.observations] == [100, 101, 102, 103]
    assert {o.model for o in batch.observations} == {"thudm/glm-4-32b"}
    assert batch.observations[0].occurred_at == "2025-05-04T13:12:50.550Z"
    assert _scan("continue.dev_data", path, batch.cursor).observations == []


def test_workspace_uri_and_specs() -> None:
    assert workspace_path("file:///home/u/p%20q") == "/home/u/p q"
    assert workspace_path("file:///c%3A/Users/u") == "c:/Users/u"
    assert workspace_path("/Users/u/p") == "/Users/u/p"
    assert workspace_path("") is None
    sessions, dev = SPECS
    assert sessions.matches("0b1e.json") and not sessions.matches("sessions.json")
    assert dev.matches("tokensGenerated.jsonl") and dev.matches("tokens_generated.jsonl")
    assert not dev.matches("chat.jsonl")
