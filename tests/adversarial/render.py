"""Write adversarial-corpus sessions as real agent transcripts (Claude, Codex, Qwen, Copilot).

A session in ``sessions.yaml`` is a list of steps in neutral form — ``user``,
``assistant``, ``shell`` (with ``result``), ``read``, ``write``, ``edit``, ``fetch``,
``mcp`` — and this module writes it the way each agent stores it on disk, with that
agent's own tool names and argument keys (Claude ``Bash``/``Read``/``Write``/``Edit``,
Codex ``exec_command`` and ``apply_patch``, Qwen ``run_shell_command``/``read_file``/
``write_file``/``replace``, Copilot ``bash``/``view``/``create``/``edit``). The record
shapes follow the fixtures in ``tests/fixtures/session_stores`` (which follow the formats
research). The scan then goes through discovery, the real adapters and the pipeline.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
FORMATS = ("claude", "codex", "qwen", "copilot")


def load_sessions() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(attacks, benign)`` sessions of the corpus."""
    data = yaml.safe_load((HERE / "sessions.yaml").read_text(encoding="utf-8"))
    attacks = list(data["attacks"])
    benign = list(data["benign"])
    for extra in sorted(HERE.glob("sessions-*.yaml")):
        more = yaml.safe_load(extra.read_text(encoding="utf-8"))
        attacks.extend(more.get("attacks", []))
        benign.extend(more.get("benign", []))
    return attacks, benign


def session_uuid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "telltale-adversarial:" + name))


def _ts(i: int) -> str:
    return f"2026-06-01T10:{i // 60:02d}:{i % 60:02d}.000Z"


def _calls(steps: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
    yield from enumerate(steps)


# -- Claude Code --------------------------------------------------------------------


def _claude_tool(step: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    if "shell" in step:
        return ("PowerShell" if step.get("powershell") else "Bash"), {"command": step["shell"],
                                                                      "description": "run"}
    if "read" in step:
        return "Read", {"file_path": step["read"]}
    if "write" in step:
        return "Write", {"file_path": step["write"], "content": step.get("content", "")}
    if "edit" in step:
        return "Edit", {"file_path": step["edit"], "old_string": step.get("old", ""), "new_string": step.get("new", "")}
    if "fetch" in step:
        return "WebFetch", {"url": step["fetch"], "prompt": "Summarise the page"}
    if "mcp" in step:
        m = step["mcp"]
        return f"mcp__{m['server']}__{m['tool']}", dict(m.get("args", {}))
    return None


def write_claude(home: Path, name: str, steps: list[dict[str, Any]]) -> None:
    sid = session_uuid(name)
    d = home / ".claude" / "projects" / "-home-dev-app"
    d.mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/app", "sessionId": sid,
            "version": "2.1.39", "gitBranch": "main"}
    for i, step in _calls(steps):
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{name}:{i}"))
        if "user" in step:
            lines.append({**base, "parentUuid": parent, "type": "user", "uuid": uid, "timestamp": _ts(i),
                          "message": {"role": "user", "content": step["user"]}})
        elif "assistant" in step:
            lines.append({**base, "parentUuid": parent, "type": "assistant", "uuid": uid, "timestamp": _ts(i),
                          "requestId": f"req_{i}", "message": {
                              "model": "claude-opus-4-6", "id": f"msg_{name}_{i}", "type": "message",
                              "role": "assistant", "content": [{"type": "text", "text": step["assistant"]}],
                              "usage": {"input_tokens": 3, "output_tokens": 20}}})
        else:
            tool = _claude_tool(step)
            if tool is None:
                continue
            tool_id = f"toolu_{i:04d}"
            lines.append({**base, "parentUuid": parent, "type": "assistant", "uuid": uid, "timestamp": _ts(i),
                          "requestId": f"req_{i}", "message": {
                              "model": "claude-opus-4-6", "id": f"msg_{name}_{i}", "type": "message",
                              "role": "assistant",
                              "content": [{"type": "tool_use", "id": tool_id, "name": tool[0], "input": tool[1]}],
                              "usage": {"input_tokens": 3, "output_tokens": 20}}})
            parent = uid
            uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{name}:{i}:r"))
            lines.append({**base, "parentUuid": parent, "type": "user", "uuid": uid, "timestamp": _ts(i),
                          "message": {"role": "user", "content": [{"tool_use_id": tool_id, "type": "tool_result",
                                                                   "content": step.get("result", "ok")}]}})
        parent = uid
    (d / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


# -- Codex ----------------------------------------------------------------------------


def _patch(step: dict[str, Any]) -> str:
    if "write" in step:
        body = "".join("+" + line + "\n" for line in str(step.get("content", "")).split("\n"))
        return f"*** Begin Patch\n*** Add File: {step['write']}\n{body}*** End Patch\n"
    old = "".join("-" + line + "\n" for line in str(step.get("old", "")).split("\n"))
    new = "".join("+" + line + "\n" for line in str(step.get("new", "")).split("\n"))
    return f"*** Begin Patch\n*** Update File: {step['edit']}\n@@\n{old}{new}*** End Patch\n"


def write_codex(home: Path, name: str, steps: list[dict[str, Any]]) -> None:
    sid = session_uuid(name)
    d = home / ".codex" / "sessions" / "2026" / "06" / "01"
    d.mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, Any]] = [
        {"timestamp": _ts(0), "type": "session_meta", "payload": {
            "id": sid, "timestamp": _ts(0), "cwd": "/home/dev/app", "originator": "codex_cli_rs",
            "cli_version": "0.120.0", "source": "cli", "model_provider": "openai"}},
        {"timestamp": _ts(0), "type": "turn_context", "payload": {
            "turn_id": "turn-1", "cwd": "/home/dev/app", "approval_policy": "on-request",
            "sandbox_policy": {"type": "workspace-write", "network_access": False}, "model": "gpt-5.3-codex"}},
    ]

    def item(i: int, payload: dict[str, Any]) -> None:
        lines.append({"timestamp": _ts(i), "type": "response_item", "payload": payload})

    for i, step in _calls(steps):
        call = f"call_{i:04d}"
        if "user" in step:
            item(i, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": step["user"]}]})
        elif "assistant" in step:
            item(i, {"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": step["assistant"]}]})
        elif "write" in step or "edit" in step:
            item(i, {"type": "custom_tool_call", "status": "completed", "call_id": call, "name": "apply_patch",
                     "input": _patch(step)})
            item(i, {"type": "custom_tool_call_output", "call_id": call,
                     "output": json.dumps({"output": step.get("result", "Success."), "metadata": {"exit_code": 0}})})
        else:
            if "shell" in step:
                name_, args = "exec_command", {"cmd": step["shell"], "workdir": "/home/dev/app"}
            elif "read" in step:
                name_, args = "exec_command", {"cmd": f"sed -n '1,200p' {step['read']}", "workdir": "/home/dev/app"}
            elif "fetch" in step:
                name_, args = "exec_command", {"cmd": f"curl -sL {step['fetch']}", "workdir": "/home/dev/app"}
            elif "mcp" in step:
                m = step["mcp"]
                name_, args = f"{m['server']}__{m['tool']}", dict(m.get("args", {}))
            else:
                continue
            item(i, {"type": "function_call", "name": name_, "arguments": json.dumps(args), "call_id": call})
            item(i, {"type": "function_call_output", "call_id": call,
                     "output": "Process exited with code 0\nOutput:\n" + str(step.get("result", ""))})
    (d / f"rollout-2026-06-01T10-00-00-{sid}.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8"
    )


# -- Qwen Code ------------------------------------------------------------------------


def _qwen_tool(step: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    if "shell" in step:
        return "run_shell_command", {"command": step["shell"], "description": "run", "is_background": False}
    if "read" in step:
        return "read_file", {"absolute_path": step["read"]}
    if "write" in step:
        return "write_file", {"file_path": step["write"], "content": step.get("content", "")}
    if "edit" in step:
        return "replace", {"file_path": step["edit"], "old_string": step.get("old", ""),
                           "new_string": step.get("new", "")}
    if "fetch" in step:
        return "web_fetch", {"url": step["fetch"], "prompt": "Summarise"}
    if "mcp" in step:
        m = step["mcp"]
        return f"mcp__{m['server']}__{m['tool']}", dict(m.get("args", {}))
    return None


def write_qwen(home: Path, name: str, steps: list[dict[str, Any]]) -> None:
    sid = session_uuid(name)
    d = home / ".qwen" / "projects" / "-home-dev-app" / "chats"
    d.mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    base = {"sessionId": sid, "cwd": "/home/dev/app", "version": "0.14.1", "gitBranch": "main"}
    for i, step in _calls(steps):
        uid = f"q-{i}"
        if "user" in step:
            lines.append({**base, "uuid": uid, "parentUuid": parent, "timestamp": _ts(i), "type": "user",
                          "message": {"role": "user", "parts": [{"text": step["user"]}]}})
        elif "assistant" in step:
            lines.append({**base, "uuid": uid, "parentUuid": parent, "timestamp": _ts(i), "type": "assistant",
                          "model": "coder-model", "message": {"role": "model", "parts": [{"text": step["assistant"]}]}})
        else:
            tool = _qwen_tool(step)
            if tool is None:
                continue
            call = f"call_{i:04d}"
            lines.append({**base, "uuid": uid, "parentUuid": parent, "timestamp": _ts(i), "type": "assistant",
                          "model": "coder-model", "message": {"role": "model", "parts": [
                              {"functionCall": {"id": call, "name": tool[0], "args": tool[1]}}]}})
            parent = uid
            uid = f"q-{i}-r"
            lines.append({**base, "uuid": uid, "parentUuid": parent, "timestamp": _ts(i), "type": "tool_result",
                          "message": {"role": "user", "parts": [{"functionResponse": {
                              "id": call, "name": tool[0], "response": {"output": str(step.get("result", ""))}}}]},
                          "toolCallResult": {"callId": call, "status": "success",
                                             "resultDisplay": str(step.get("result", ""))}})
        parent = uid
    (d / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


# -- Copilot CLI ----------------------------------------------------------------------


def _copilot_tool(step: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    if "shell" in step:
        return ("powershell" if step.get("powershell") else "bash"), {"command": step["shell"],
                                                                       "description": "run"}
    if "read" in step:
        return "view", {"path": step["read"]}
    if "write" in step:
        return "create", {"path": step["write"], "file_text": step.get("content", "")}
    if "edit" in step:
        return "edit", {"path": step["edit"], "old_str": step.get("old", ""), "new_str": step.get("new", "")}
    if "fetch" in step:
        return "web_fetch", {"url": step["fetch"]}
    if "mcp" in step:
        m = step["mcp"]
        return f"{m['server']}-{m['tool']}", dict(m.get("args", {}))
    return None


def write_copilot(home: Path, name: str, steps: list[dict[str, Any]]) -> None:
    sid = session_uuid(name)
    d = home / ".copilot" / "session-state" / sid
    d.mkdir(parents=True, exist_ok=True)
    events: list[dict[str, Any]] = [
        {"type": "session.start", "data": {"sessionId": sid, "version": 1, "producer": "copilot-agent",
                                           "copilotVersion": "1.0.60", "startTime": _ts(0),
                                           "context": {"cwd": "/home/dev/app"}}},
    ]
    for i, step in _calls(steps):
        if "user" in step:
            events.append({"type": "user.message", "data": {"content": step["user"], "attachments": [],
                                                           "interactionId": f"int-{i}"}})
        elif "assistant" in step:
            events.append({"type": "assistant.message", "data": {
                "messageId": f"msg-{i}", "model": "claude-sonnet-4.6", "content": step["assistant"],
                "toolRequests": [], "turnId": str(i), "interactionId": f"int-{i}"}})
        else:
            tool = _copilot_tool(step)
            if tool is None:
                continue
            call = f"toolu_{i:04d}"
            events.append({"type": "assistant.message", "data": {
                "messageId": f"msg-{i}", "model": "claude-sonnet-4.6", "content": "",
                "toolRequests": [{"toolCallId": call, "name": tool[0], "arguments": tool[1], "type": "function"}],
                "turnId": str(i), "interactionId": f"int-{i}"}})
            events.append({"type": "tool.execution_start", "data": {
                "toolCallId": call, "toolName": tool[0], "arguments": tool[1], "turnId": str(i)}})
            events.append({"type": "tool.execution_complete", "data": {
                "toolCallId": call, "success": True, "result": {"content": str(step.get("result", "")),
                                                                "detailedContent": str(step.get("result", ""))},
                "turnId": str(i)}})
    parent: str | None = None
    out = []
    for n, ev in enumerate(events):
        ev_id = f"ev-{n:04d}"
        out.append({**ev, "id": ev_id, "timestamp": _ts(n), "parentId": parent})
        parent = ev_id
    (d / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in out), encoding="utf-8")
    (d / "workspace.yaml").write_text(f"id: {sid}\ncwd: /home/dev/app\n", encoding="utf-8")


WRITERS = {"claude": write_claude, "codex": write_codex, "qwen": write_qwen, "copilot": write_copilot}


def write_session(home: Path, session: dict[str, Any], fmt: str | None = None) -> str:
    """Write one corpus session under ``home`` in its format (or ``fmt``); its session id."""
    WRITERS[fmt or session["format"]](home, session["id"], session["steps"])
    return session_uuid(session["id"])
