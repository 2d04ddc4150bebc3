"""Hostile records cost that record only, in the Droid, Kiro CLI, Amp and Zed adapters:
any bytes on a line (or any JSON value in a document entry or thread message) never
raise, and every other record's observations are still there."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from more_agents import acquire, observations

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_hostile_line = st.one_of(
    st.binary(max_size=200).filter(lambda b: b"\n" not in b and b"\r" not in b),
    _json.map(lambda v: json.dumps(v).encode()),
    st.sampled_from([b"[" * 2000, b'{"type": 1e999}', b'{"type": "message", "message": {"content": 5}}',
                     b'{"kind": "Prompt", "data": {"content": [{"kind": "toolUse", "data": 3}]}}',
                     b'{"a":1,}', b'"\\ud800"']),
)


def _lines(path: Path, lines: list[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def _good_droid(i: int) -> bytes:
    return json.dumps({"type": "message", "id": f"m{i}", "message": {"role": "assistant", "content": [
        {"type": "text", "text": f"answer {i}"},
        {"type": "tool_use", "id": f"c{i}", "name": "Execute", "input": {"command": f"echo {i}"}}]}}).encode()


def _good_kiro(i: int) -> bytes:
    return json.dumps({"kind": "AssistantMessage", "data": {"content": [
        {"kind": "text", "data": f"answer {i}"},
        {"kind": "toolUse", "data": {"toolUseId": f"c{i}", "name": "execute_bash", "input": {"command": "ls"}}}]}}
    ).encode()


def _kept(obs: list[Any], n: int) -> None:
    calls = {o.call_id for o in obs if o.call_id}
    assert {f"c{i}" for i in range(n)} <= calls


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=st.lists(_hostile_line, min_size=1, max_size=4))
def test_jsonl_adapters_survive_any_line(tmp_path_factory: Any, bad: list[bytes]) -> None:
    root = tmp_path_factory.mktemp("hostile")
    for kind, good, path in (
        ("droid.sessions", _good_droid, root / "d" / "s.jsonl"),
        ("kiro.cli", _good_kiro, root / "k" / "s.jsonl"),
    ):
        lines = [good(0)] + [b for pair in zip(bad, [good(i + 1) for i in range(len(bad))], strict=True)
                             for b in pair]
        _lines(path, lines)
        batches, _ = acquire(kind, path)
        _kept(observations(batches), len(bad) + 1)


def _amp_message(i: int) -> dict[str, Any]:
    return {"role": "assistant", "messageId": i, "state": {"type": "complete"},
            "content": [{"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {"cmd": "ls"}}]}


@settings(max_examples=60, deadline=None)
@given(bad=st.lists(_json, min_size=1, max_size=3))
def test_amp_survives_any_message_value(tmp_path_factory: Any, bad: list[Any]) -> None:
    root = tmp_path_factory.mktemp("amp")
    messages: list[Any] = [_amp_message(0)]
    for i, value in enumerate(bad):
        messages += [value, _amp_message(i + 1)]
    path = root / "T-x.json"
    path.write_text(json.dumps({"id": "T-x", "messages": messages}))
    batches, _ = acquire("amp.threads", path)
    _kept(observations(batches), len(bad) + 1)


@settings(max_examples=40, deadline=None)
@given(bad=st.lists(_json, min_size=1, max_size=3))
def test_zed_survives_any_message_value(tmp_path_factory: Any, bad: list[Any]) -> None:
    root = tmp_path_factory.mktemp("zed")
    good = [{"Agent": {"content": [{"ToolUse": {"id": f"c{i}", "name": "terminal", "input": {"command": "ls"},
                                                "is_input_complete": True}}], "tool_results": {}}}
            for i in range(len(bad) + 1)]
    messages: list[Any] = [good[0]]
    for i, value in enumerate(bad):
        messages += [value, good[i + 1]]
    db = root / "threads.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE threads (id TEXT, summary TEXT, updated_at TEXT, data_type TEXT, data BLOB)")
        conn.execute("INSERT INTO threads VALUES ('t', 's', 'u', 'json', ?)",
                     (json.dumps({"messages": messages}).encode(),))
    conn.close()
    batches, _ = acquire("zed.threads", db)
    _kept(observations(batches), len(bad) + 1)


@settings(max_examples=40, deadline=None)
@given(odd=st.dictionaries(st.sampled_from(["id", "title", "created", "env", "v", "model",
                                            "cumulative_token_usage", "initial_project_snapshot"]),
                           _json, min_size=1, max_size=4))
def test_odd_thread_fields_cost_only_themselves(tmp_path_factory: Any, odd: dict[str, Any]) -> None:
    root = tmp_path_factory.mktemp("odd")
    path = root / "T-x.json"
    path.write_text(json.dumps({**odd, "messages": [_amp_message(0)]}))
    _kept(observations(acquire("amp.threads", path)[0]), 1)
    db = root / "threads.db"
    agent = {"Agent": {"content": [{"ToolUse": {"id": "c0", "name": "terminal", "input": {"command": "ls"},
                                                "is_input_complete": True}}], "tool_results": {}}}
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE threads (id TEXT, summary TEXT, updated_at TEXT, data_type TEXT, data BLOB)")
        conn.execute("INSERT INTO threads VALUES ('t', 's', 'u', 'json', ?)",
                     (json.dumps({**odd, "messages": [agent]}).encode(),))
    conn.close()
    _kept(observations(acquire("zed.threads", db)[0]), 1)
