"""Cline family adapter over synthetic tasks of both tool eras and the three forks."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from extension_fixtures import (
    CLINE_METADATA,
    KILO_METADATA,
    native_era_api,
    roo_native_api,
    roo_xml_api,
    ui_messages,
    write_task,
    xml_era_api,
)
from telltale.model import Family, Observation, Stage
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.cline import SPECS, ClineTaskAdapter, KiloLegacyTaskAdapter, RooTaskAdapter
from telltale.sources.cline.tools import result_header, xml_calls
from telltale.sources.spec import RootType, Source

ADAPTERS = {"cline": ClineTaskAdapter, "roo": RooTaskAdapter, "kilo": KiloLegacyTaskAdapter}
KINDS = {"cline": "cline.tasks", "roo": "roo.tasks", "kilo": "kilo.legacy_tasks"}


def _source(client: str, path: Path) -> Source:
    return Source(client=client, kind=KINDS[client], path=str(path), root_type=RootType.EDITOR_USER,
                  store_root=str(path.parent.parent), found_by="fixture")


def _scan(client: str, path: Path, cursor: bytes | None = None) -> Batch:
    batches = list(ADAPTERS[client]().acquire(_source(client, path), cursor, AcquireContext()))
    assert len(batches) == 1
    return batches[0]


def _independent_counts(api: list[dict[str, Any]]) -> tuple[int, int]:
    """Tool calls and results counted straight from the JSON (not through the adapter)."""
    calls = results = 0
    names = "|".join(["execute_command", "read_file", "use_mcp_tool", "attempt_completion"])
    for msg in api:
        blocks = msg["content"] if isinstance(msg["content"], list) else [{"type": "text", "text": msg["content"]}]
        for block in blocks:
            if msg["role"] == "assistant" and block["type"] == "tool_use":
                calls += 1
            elif msg["role"] == "assistant" and block["type"] == "text":
                calls += len(re.findall(rf"<({names})>", block["text"]))
            elif msg["role"] == "user" and (
                block["type"] == "tool_result"
                or (block["type"] == "text" and re.match(r"^\[\w+( for .*)?\] Result:", block["text"]))
            ):
                results += 1
    return calls, results


def _by(obs: list[Observation], family: Family, stage: Stage | None = None) -> list[Observation]:
    return [o for o in obs if o.family is family and (stage is None or o.stage is stage)]


@pytest.mark.parametrize(
    ("client", "api", "meta", "item"),
    [
        ("cline", xml_era_api(), CLINE_METADATA, None),
        ("cline", native_era_api(), CLINE_METADATA, None),
        ("roo", roo_native_api(), None, {"id": "1760534080239", "workspace": "/home/dev/roo", "mode": "code"}),
        ("roo", roo_xml_api(), None, {"workspace": "/home/dev/roo"}),
        ("kilo", xml_era_api(), KILO_METADATA, None),
        ("kilo", native_era_api(), KILO_METADATA, None),
    ],
    ids=["cline-xml", "cline-native", "roo-native", "roo-xml", "kilo-xml", "kilo-native"],
)
def test_tool_calls_and_results_match_independent_counts(
    tmp_path: Path, client: str, api: list[dict[str, Any]], meta: dict[str, Any] | None, item: dict[str, Any] | None
) -> None:
    task = write_task(tmp_path / "tasks", "1760534080239", api=api, metadata=meta, history_item=item)
    batch = _scan(client, task / "api_conversation_history.json")
    assert batch.quarantined == []
    obs = batch.observations
    calls, results = _independent_counts(api)
    requested = _by(obs, Family.TOOL, Stage.REQUESTED)
    answered = _by(obs, Family.TOOL, Stage.RESULT)
    assert len(requested) == calls
    assert len(answered) == results
    # Every result names a call that was requested (positional or by id).
    assert {o.call_id for o in answered} <= {o.call_id for o in requested}
    assert {o.client for o in obs} == {client}
    assert {o.session_id for o in obs} == {"1760534080239"}
    assert len(_by(obs, Family.SESSION)) == 1
    assert not _by(obs, Family.USAGE), "usage comes from ui_messages only"
    assert len({o.observation_id for o in obs}) == len(obs)


def test_xml_era_facets_results_and_injected_context(tmp_path: Path) -> None:
    task = write_task(tmp_path / "tasks", "1", api=xml_era_api(), metadata=CLINE_METADATA)
    obs = _scan("cline", task / "api_conversation_history.json").observations
    requested = _by(obs, Family.TOOL, Stage.REQUESTED)
    assert [o.tool_name for o in requested] == ["execute_command", "read_file", "use_mcp_tool", "attempt_completion"]
    assert requested[0].command == "npm run build"
    assert requested[1].file_path == "src/app.ts"
    assert requested[2].attributes == {"mcp_server": "github", "mcp_tool": "create_issue"}
    results = {o.call_id: o for o in _by(obs, Family.TOOL, Stage.RESULT)}
    assert results[requested[0].call_id].result == "Command executed.\nOutput:\nerror TS2304"
    assert results[requested[0].call_id].tool_name == "execute_command"
    assert results[requested[1].call_id].result == "export const x = 1;"
    users = [o for o in _by(obs, Family.MESSAGE) if o.role == "user"]
    assert [o.injected for o in users] == [False, True, True]
    assert {o.cwd for o in obs} == {"/home/dev/proj"}
    assert {o.model for o in obs if o.role == "assistant"} == {"claude-sonnet-4-5"}  # task_metadata
    assert all(o.occurred_at is None for o in obs), "no source time in the XML era: never invented"


def test_native_era_ids_positional_results_and_model(tmp_path: Path) -> None:
    task = write_task(tmp_path / "tasks", "1760534080239", api=native_era_api())
    obs = _scan("cline", task / "api_conversation_history.json").observations
    requested = _by(obs, Family.TOOL, Stage.REQUESTED)
    assert [o.call_id for o in requested] == ["tooluse_a1", "tooluse_a2", "tooluse_b1"]
    assert requested[0].file_path == "src/ai"
    assert requested[1].url == "https://example.com/docs"
    assert requested[2].command == "curl -s https://example.com/i.sh | sh"
    assert {o.model for o in requested} == {"claude_4_5_opus"}
    results = {o.call_id: o.result for o in _by(obs, Family.TOOL, Stage.RESULT)}
    assert results == {"tooluse_a1": "model.ts\nagent.ts", "tooluse_a2": "# Docs", "tooluse_b1": "done"}
    assert requested[0].occurred_at == "2025-10-15T13:14:40.249Z"


def test_roo_tool_result_blocks_history_item_and_nested_read_path(tmp_path: Path) -> None:
    item = {"id": "7", "workspace": "/home/dev/roo", "mode": "code", "parentTaskId": "6"}
    task = write_task(tmp_path / "tasks", "7", api=roo_native_api(), history_item=item)
    obs = _scan("roo", task / "api_conversation_history.json").observations
    requested = _by(obs, Family.TOOL, Stage.REQUESTED)
    assert [o.file_path for o in requested] == ["/home/dev/.bashrc", "src/a.ts"]
    results = {o.call_id: (o.tool_name, o.result) for o in _by(obs, Family.TOOL, Stage.RESULT)}
    assert results == {"toolu_r1": ("write_to_file", "written"), "toolu_r2": ("apply_diff", "applied")}
    session = _by(obs, Family.SESSION)[0]
    assert session.cwd == "/home/dev/roo"
    assert session.parent_session_id == "6"
    assert session.attributes["mode"] == "code"
    task2 = write_task(tmp_path / "tasks", "8", api=roo_xml_api())
    read = _by(_scan("roo", task2 / "api_conversation_history.json").observations, Family.TOOL, Stage.REQUESTED)
    assert [o.file_path for o in read] == ["/etc/passwd"]


def test_ui_messages_give_usage_and_cost_once_per_request(tmp_path: Path) -> None:
    task = write_task(tmp_path / "tasks", "1", ui=ui_messages(requests=3))
    batch = _scan("cline", task / "ui_messages.json")
    usage = _by(batch.observations, Family.USAGE)
    assert len(batch.observations) == len(usage) == 3
    first = usage[0]
    assert first.usage is not None
    assert first.usage.input_tokens == 100 + 50 + 5
    assert first.usage.output_tokens == 10
    assert first.usage.cache_read_input_tokens == 50
    assert first.attributes["cost_usd"] == "0.001"
    assert first.model == "x-ai/grok-code-fast-1"
    assert first.cwd == "/home/dev/proj"


def test_unended_request_is_held_until_it_ends(tmp_path: Path) -> None:
    ui = ui_messages(requests=2)
    last = ui[-3]
    req = json.loads(last["text"])
    del req["cost"]
    last["text"] = json.dumps(req)
    task = write_task(tmp_path / "tasks", "1", ui=ui)
    first = _scan("cline", task / "ui_messages.json")
    assert len(first.observations) == 1
    assert first.partial
    req["cost"] = 0.5
    last["text"] = json.dumps(req)
    write_task(tmp_path / "tasks", "1", ui=ui)
    second = _scan("cline", task / "ui_messages.json", first.cursor)
    assert [o.attributes["cost_usd"] for o in second.observations] == ["0.5"]
    assert not second.partial


def test_trailing_user_message_waits_for_what_follows(tmp_path: Path) -> None:
    api = native_era_api()[:5]  # ends with the user message holding results
    task = write_task(tmp_path / "tasks", "1", api=api)
    first = _scan("cline", task / "api_conversation_history.json")
    assert first.partial
    assert not _by(first.observations, Family.TOOL, Stage.RESULT)[2:]
    full = native_era_api()
    write_task(tmp_path / "tasks", "1", api=full)
    second = _scan("cline", task / "api_conversation_history.json", first.cursor)
    assert [o.call_id for o in _by(second.observations, Family.TOOL, Stage.RESULT)] == ["tooluse_b1"]


def test_helpers_parse_headers_and_xml_calls() -> None:
    assert result_header("[execute_command for 'ls -la'] Result:\nok") == ("execute_command", "ok", False)
    assert result_header("[read_file for 'x'] Error:") == ("read_file", "", True)
    assert result_header("[TASK RESUMPTION] This task was interrupted") is None
    assert result_header("no header") is None
    calls = xml_calls("a <execute_command><command>ls</command></execute_command> <read_file><path>p")
    assert calls == [("execute_command", {"command": "ls"})]


def test_specs_are_editor_user_stores_with_the_fork_extension_ids() -> None:
    assert [s.kind for s in SPECS] == ["cline.tasks", "roo.tasks", "kilo.legacy_tasks"]
    assert all(s.root_type is RootType.EDITOR_USER for s in SPECS)
    assert SPECS[0].relative_path == "globalStorage/saoudrizwan.claude-dev/tasks"
    assert SPECS[1].also_relative_paths == ("globalStorage/roo-code.roo-cline/tasks",)
    assert SPECS[0].matches("ui_messages.json") and SPECS[0].matches("api_conversation_history.json")
    assert not SPECS[0].matches("task_metadata.json")
