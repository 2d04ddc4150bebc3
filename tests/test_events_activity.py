"""Activity event documents: field names, content modes, bounds, redaction at the boundary."""

from __future__ import annotations

import json

import msgspec
import pytest

from telltale.events.activity import FIELD_LIMIT, TEXT_LIMIT, activity_event, activity_line
from telltale.model import Family, Provenance, Stage, TokenUsage, make_observation

SECRET = "ghp_FAKEfakeFAKEfakeFAKEfake01234"


def _obs(**fields: object) -> object:
    base: dict[str, object] = {
        "client": "claude", "sequence": 7, "session_id": "S1", "agent": "claude-code", "provider": "anthropic",
        "model": "claude-x", "occurred_at": "2026-11-20T10:00:00.000Z", "cwd": "/home/dev/p",
        "provenance": Provenance(source_kind="claude.projects", path="/h/.claude/projects/p/S1.jsonl", line=3),
    }
    base.update(fields)
    return make_observation(adapter="claude.projects", source_identity="claude:S1", coordinate="c", **base)


def _call() -> object:
    return _obs(
        family=Family.TOOL, stage=Stage.REQUESTED, tool_name="Bash", call_id="toolu_1",
        command=f"git push https://x:{SECRET}@github.com/o/r && cat ~/.ssh/id_rsa",
        arguments=json.dumps({"command": f"export GH_TOKEN={SECRET}"}), file_path="/home/dev/p/.env",
        url=f"https://api.example.com/?token={SECRET}",
    )


def test_tool_call_fields_and_redaction_in_the_default_mode() -> None:
    doc = activity_event(_call(), content="redacted", observed_at="2026-11-29T00:00:00.000Z")  # type: ignore[arg-type]
    assert doc["event"]["action"] == "tool_call" and doc["event"]["dataset"] == "telltale.activity"
    assert doc["@timestamp"] == "2026-11-20T10:00:00.000Z" and doc["telltale"]["time_source"] == "source"
    assert doc["gen_ai"]["tool"] == {"name": "Bash", "call": {"id": "toolu_1"}}
    assert doc["gen_ai"]["conversation"]["id"] == "S1" and doc["gen_ai"]["provider"]["name"] == "anthropic"
    assert doc["process"]["command_line"].startswith("git push https://x:[REDACTED:")
    assert doc["file"]["path"] == "/home/dev/p/.env"
    assert doc["url"]["full"].startswith("https://api.example.com/?token=[REDACTED:")
    assert SECRET not in json.dumps(doc)
    assert doc["host"]["name"] and doc["observer"]["product"] == "telltale"


def test_none_mode_carries_only_ids_names_sizes_and_hashes() -> None:
    doc = activity_event(_call(), content="none", observed_at="t")  # type: ignore[arg-type]
    text = json.dumps(doc)
    assert "process" not in doc and "file" not in doc and "url" not in doc
    assert "arguments" not in doc["telltale"]["tool"] and "cwd" not in doc["telltale"]
    assert {"arguments_hash", "arguments_length", "command_hash", "file_path_hash", "url_hash"} <= set(
        doc["telltale"]["tool"]
    )
    assert "/home/dev" not in text and "git push" not in text and SECRET not in text


@pytest.mark.parametrize("mode", ["none", "redacted", "full"])
def test_message_text_leaves_only_in_full_mode_and_redacted(mode: str) -> None:
    obs = _obs(family=Family.MESSAGE, role="user", text=f"deploy with {SECRET} please")
    doc = activity_event(obs, content=mode, observed_at="t")  # type: ignore[arg-type]
    msg = doc["telltale"]["message"]
    assert msg["role"] == "user" and msg["length"] == len(f"deploy with {SECRET} please") and msg["hash"]
    if mode == "full":
        assert msg["text"].startswith("deploy with [REDACTED:github_token:")
    else:
        assert "text" not in msg
    assert SECRET not in json.dumps(doc)


def test_bounds_cut_long_values_and_say_so() -> None:
    long_command = "echo " + "a" * (FIELD_LIMIT * 3)
    obs = _obs(family=Family.TOOL, stage=Stage.REQUESTED, tool_name="Bash", call_id="c", command=long_command)
    doc = activity_event(obs, content="redacted", observed_at="t")  # type: ignore[arg-type]
    assert len(doc["process"]["command_line"]) == FIELD_LIMIT
    assert "process.command_line" in doc["telltale"]["truncated"]
    result = _obs(family=Family.TOOL, stage=Stage.RESULT, tool_name="Bash", call_id="c", result="r" * (TEXT_LIMIT * 2))
    full = activity_event(result, content="full", observed_at="t")  # type: ignore[arg-type]
    assert len(full["telltale"]["tool"]["result"]) == TEXT_LIMIT
    assert full["telltale"]["tool"]["result_length"] == TEXT_LIMIT * 2


def test_a_secret_straddling_the_bound_is_still_redacted() -> None:
    command = "x" * (FIELD_LIMIT - 10) + " " + SECRET
    obs = _obs(family=Family.TOOL, stage=Stage.REQUESTED, tool_name="Bash", call_id="c", command=command)
    doc = activity_event(obs, content="redacted", observed_at="t")  # type: ignore[arg-type]
    assert SECRET[:10] not in doc["process"]["command_line"]


def test_usage_follows_the_opentelemetry_names() -> None:
    obs = _obs(family=Family.USAGE, usage=TokenUsage(input_tokens=115, output_tokens=7, cache_read_input_tokens=100,
                                                      cache_creation_input_tokens=10, reasoning_output_tokens=2))
    doc = activity_event(obs, content="redacted", observed_at="t")  # type: ignore[arg-type]
    assert doc["gen_ai"]["usage"] == {
        "input_tokens": 115, "output_tokens": 7, "cache_read": {"input_tokens": 100},
        "cache_creation": {"input_tokens": 10}, "reasoning": {"output_tokens": 2},
    }


def test_tool_result_outcome_and_interruption() -> None:
    failed = _obs(family=Family.TOOL, stage=Stage.RESULT, tool_name="Bash", call_id="c", result="boom", is_error=True)
    assert activity_event(failed, content="redacted", observed_at="t")["event"]["outcome"] == "failure"  # type: ignore[arg-type]
    cut = _obs(family=Family.TOOL, stage=Stage.RESULT, tool_name="Bash", call_id="c", interrupted=True)
    doc = activity_event(cut, content="redacted", observed_at="t")  # type: ignore[arg-type]
    assert doc["telltale"]["tool"]["interrupted"] is True and doc["event"]["outcome"] == "unknown"


def test_missing_source_time_falls_back_to_observed_time() -> None:
    obs = _obs(family=Family.MESSAGE, role="assistant", text="hi", occurred_at=None)
    doc = activity_event(obs, content="redacted", observed_at="2026-11-29T01:02:03.000Z")  # type: ignore[arg-type]
    assert doc["@timestamp"] == "2026-11-29T01:02:03.000Z" and doc["telltale"]["time_source"] == "observed"


def test_the_hot_path_encodes_the_same_document() -> None:
    obs = _call()
    line = activity_line(obs, content="redacted", observed_at="t")  # type: ignore[arg-type]
    assert msgspec.json.decode(line) == activity_event(obs, content="redacted", observed_at="t")  # type: ignore[arg-type]
