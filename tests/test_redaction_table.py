"""Redaction end to end: every secret shape, in every placement, in every supported format,
through the real CLI in every content mode and a dry run — no secret leaves.

One store per format is written with every generated sample (``secret_samples``) placed
in a user prompt, assistant text, a shell command, file content written and edited
through the agent's own file tools (``apply_patch`` for Codex), MCP arguments, a tool
result, a path and a URL. The stores are read back through the adapters first, to prove
the secrets really reach the observations (a placement no adapter reads proves nothing).
Then one scan per content mode (and a dry run) runs through ``python -m telltale`` with a
remote output (an Elasticsearch-like loopback receiver) beside the JSONL log; the log,
stdout, stderr, the state database (cursors, windows, outbox rows) and every body the
receiver got are searched for each secret in plain, base64, URL-encoded and JSON-escaped
form, and for any 24-character fragment of it.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import sys
import urllib.parse
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import re2

from scan_helpers import run_cli
from secret_samples import generate
from sink_receivers import BulkStore, LoopbackReceiver

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from build_opencode import build as build_opencode

MODES = ("none", "redacted", "full")
#: Fragments of a secret at least this long may not appear anywhere.
FRAGMENT = 24
#: (name, text, secret) of every sample, generated once per test session.
ITEMS = [(name, sample.text, sample.secret) for name, _kind, sample in generate(seed=1612)]


def _token_like(text: str) -> bool:
    return not any(c in text for c in " \n\t'\"")


# -- placements ----------------------------------------------------------------------


def prompt(text: str) -> str:
    return f"Please set this up for me:\n{text}\nthanks"


def answer(text: str) -> str:
    return f"I found this in the configuration:\n{text}\n"


def command(text: str) -> str:
    return f"cat > .env.local <<'EOF'\n{text}\nEOF"


def content(text: str) -> str:
    return f"# settings\nDEBUG=0\n{text}\nLOG_LEVEL=info\n"


def result(text: str) -> str:
    return f"$ cat .env\n{text}\n(exit 0)"


def path_of(text: str) -> str | None:
    return f"/home/dev/app/keys/{text}.txt" if _token_like(text) and "://" not in text else None


def url_of(text: str) -> str | None:
    if "://" in text and " " not in text and "\n" not in text:
        return text
    return f"https://files.example.test/share/{text}" if _token_like(text) else None


def mcp_args(text: str) -> dict[str, Any]:
    return {"title": "rotate config", "body": f"config:\n{text}", "labels": ["ops"]}


# -- one writer per format -------------------------------------------------------------


def _jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")


def write_claude(home: Path) -> None:
    session = str(uuid.UUID(int=0xC1A0DE))
    base = {"sessionId": session, "cwd": "/home/dev/app", "version": "2.1.38", "isSidechain": False,
            "userType": "external", "parentUuid": None}
    records: list[dict[str, Any]] = []
    n = 0

    def add(kind: str, message: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        ts = f"2026-11-20T10:{n // 3600 % 60:02d}:{n // 60 % 60:02d}.{n % 60:03d}Z"
        records.append({**base, "type": kind, "uuid": f"u{n}", "timestamp": ts, "message": message,
                        **({"requestId": f"req_{n}"} if kind == "assistant" else {})})

    def tool(name: str, args: dict[str, Any], output: str = "ok") -> None:
        call = f"toolu_{n:05d}"
        add("assistant", {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                          "content": [{"type": "tool_use", "id": call, "name": name, "input": args}],
                          "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 7}})
        add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": output}]})

    for _name, text, _secret in ITEMS:
        add("user", {"role": "user", "content": prompt(text)})
        add("assistant", {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                          "content": [{"type": "text", "text": answer(text)}], "stop_reason": "end_turn",
                          "usage": {"input_tokens": 5, "output_tokens": 7}})
        tool("Bash", {"command": command(text), "description": "write env"}, result(text))
        tool("Write", {"file_path": "/home/dev/app/.env", "content": content(text)})
        tool("Edit", {"file_path": "/home/dev/app/config.yml", "old_string": "x: 1", "new_string": content(text)})
        tool("mcp__tracker__create_issue", mcp_args(text))
        if (p := path_of(text)) is not None:
            tool("Read", {"file_path": p})
        if (u := url_of(text)) is not None:
            tool("WebFetch", {"url": u, "prompt": "summarise"})
    _jsonl(home / ".claude" / "projects" / "-home-dev-app" / f"{session}.jsonl", records)


def write_codex(home: Path) -> None:
    session = "019d1a2b-0000-7000-8000-0000000c0dec"
    records: list[dict[str, Any]] = [{"timestamp": "2026-03-01T09:00:00.000Z", "type": "session_meta", "payload": {
        "id": session, "timestamp": "2026-03-01T09:00:00.000Z", "cwd": "/home/dev/app", "originator": "codex_cli_rs",
        "cli_version": "0.120.0", "source": "cli", "model_provider": "openai"}}]
    n = 0

    def item(payload: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        records.append({"timestamp": f"2026-03-01T09:{n // 60 % 60:02d}:{n % 60:02d}.000Z", "type": "response_item",
                        "payload": payload})

    def call(name: str, args: dict[str, Any], output: str = "ok") -> None:
        cid = f"call_{n:05d}"
        item({"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": cid})
        item({"type": "function_call_output", "call_id": cid, "output": output})

    for _name, text, _secret in ITEMS:
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt(text)}]})
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer(text)}]})
        call("exec_command", {"cmd": command(text), "workdir": "/home/dev/app"}, result(text))
        patch_path = path_of(text) or "/home/dev/app/.env"
        body = "".join("+" + line + "\n" for line in content(text).splitlines())
        cid = f"call_p{n:05d}"
        item({"type": "custom_tool_call", "status": "completed", "call_id": cid, "name": "apply_patch",
              "input": f"*** Begin Patch\n*** Add File: {patch_path}\n{body}*** End Patch\n"})
        item({"type": "custom_tool_call_output", "call_id": cid, "output": "Success."})
        call("mcp__tracker__create_issue", mcp_args(text))
        if (u := url_of(text)) is not None:
            call("shell", {"command": ["bash", "-lc", f"curl -sS '{u}'"]})
    day = home / ".codex" / "sessions" / "2026" / "03" / "01"
    _jsonl(day / f"rollout-2026-03-01T09-00-00-{session}.jsonl", records)


def write_qwen(home: Path) -> None:
    session = "qwen-redaction-table"
    base = {"sessionId": session, "cwd": "/home/dev/app", "version": "0.14.1", "gitBranch": "main"}
    records: list[dict[str, Any]] = []
    n = 0

    def add(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal n
        n += 1
        records.append({"uuid": f"q{n}", "parentUuid": f"q{n - 1}" if n > 1 else None, **base,
                        "timestamp": f"2026-05-02T09:{n // 60 % 60:02d}:{n % 60:02d}.000Z", "type": kind,
                        "message": message, **extra})

    def tool(name: str, args: dict[str, Any], output: str = "ok") -> None:
        cid = f"call_q{n:05d}"
        add("assistant", {"role": "model", "parts": [{"functionCall": {"id": cid, "name": name, "args": args}}]},
            model="coder-model")
        add("tool_result", {"role": "user", "parts": [{"functionResponse": {"id": cid, "name": name,
                                                                            "response": {"output": output}}}]},
            toolCallResult={"callId": cid, "status": "success", "resultDisplay": output})

    for _name, text, _secret in ITEMS:
        add("user", {"role": "user", "parts": [{"text": prompt(text)}]})
        add("assistant", {"role": "model", "parts": [{"text": answer(text)}]}, model="coder-model")
        tool("run_shell_command", {"command": command(text), "description": "write env"}, result(text))
        tool("write_file", {"file_path": "/home/dev/app/.env", "content": content(text)})
        tool("replace", {"file_path": "/home/dev/app/config.yml", "old_string": "x: 1", "new_string": content(text)})
        tool("mcp__tracker__create_issue", mcp_args(text))
        if (p := path_of(text)) is not None:
            tool("read_file", {"absolute_path": p})
        if (u := url_of(text)) is not None:
            tool("web_fetch", {"url": u, "prompt": "summarise"})
    _jsonl(home / ".qwen" / "projects" / "-home-dev-app" / "chats" / f"{session}.jsonl", records)


def write_openclaw(home: Path) -> None:
    session = "claw-redaction-table"
    records: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": session,
                                      "timestamp": "2026-05-04T08:00:00.000Z", "cwd": "/home/claw/app"}]
    n = 0

    def msg(message: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        records.append({"type": "message", "id": f"c{n:07d}", "parentId": f"c{n - 1:07d}" if n > 1 else None,
                        "timestamp": f"2026-05-04T08:{n // 60 % 60:02d}:{n % 60:02d}.000Z", "message": message})

    def tool(name: str, args: dict[str, Any], output: str = "ok") -> None:
        cid = f"toolu_claw_{n:05d}"
        msg({"role": "assistant", "content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args}],
             "provider": "anthropic", "model": "claude-opus-4-6", "stopReason": "toolUse"})
        msg({"role": "toolResult", "toolCallId": cid, "toolName": name, "content": [{"type": "text", "text": output}],
             "isError": False})

    for _name, text, _secret in ITEMS:
        msg({"role": "user", "content": [{"type": "text", "text": prompt(text)}]})
        msg({"role": "assistant", "content": [{"type": "text", "text": answer(text)}], "provider": "anthropic",
             "model": "claude-opus-4-6", "stopReason": "stop"})
        tool("exec", {"command": command(text)}, result(text))
        tool("write", {"path": "/home/claw/app/.env", "content": content(text)})
        tool("edit", {"path": "/home/claw/app/config.yml", "oldText": "x: 1", "newText": content(text)})
        tool("tracker__create_issue", mcp_args(text))
        if (p := path_of(text)) is not None:
            tool("read", {"path": p})
        if (u := url_of(text)) is not None:
            tool("web_fetch", {"url": u})
    _jsonl(home / ".openclaw" / "agents" / "main" / "sessions" / f"{session}.jsonl", records)


def write_copilot_state(home: Path) -> None:
    session = "5c3e9a10-0000-4000-8000-00000000cafe"
    records: list[dict[str, Any]] = [{"type": "session.start", "data": {
        "sessionId": session, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.60",
        "startTime": "2026-05-09T12:00:00.000Z", "context": {"cwd": "/home/dev/app"}},
        "id": "ev-0", "timestamp": "2026-05-09T12:00:00.000Z", "parentId": None}]
    n = 0

    def ev(kind: str, data: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        records.append({"type": kind, "data": data, "id": f"ev-{n}", "parentId": f"ev-{n - 1}",
                        "timestamp": f"2026-05-09T12:{n // 60 % 60:02d}:{n % 60:02d}.000Z"})

    def tool(name: str, args: dict[str, Any], output: str = "ok") -> None:
        cid = f"toolu_cp_{n:05d}"
        ev("assistant.message", {"messageId": f"m{n}", "model": "claude-sonnet-4.6", "content": "",
                                 "toolRequests": [{"toolCallId": cid, "name": name, "arguments": args,
                                                   "type": "function"}]})
        ev("tool.execution_start", {"toolCallId": cid, "toolName": name, "arguments": args})
        ev("tool.execution_complete", {"toolCallId": cid, "success": True, "result": {"content": output}})

    for _name, text, _secret in ITEMS:
        ev("user.message", {"content": prompt(text), "attachments": []})
        ev("assistant.message", {"messageId": f"m{n}", "model": "claude-sonnet-4.6", "content": answer(text),
                                 "toolRequests": []})
        tool("bash", {"command": command(text), "description": "write env"}, result(text))
        tool("create", {"path": "/home/dev/app/.env", "file_text": content(text)})
        tool("str_replace", {"path": "/home/dev/app/config.yml", "old_str": "x: 1", "new_str": content(text)})
        tool("tracker-create_issue", mcp_args(text))
        if (p := path_of(text)) is not None:
            tool("view", {"path": p})
        if (u := url_of(text)) is not None:
            tool("web_fetch", {"url": u})
    _jsonl(home / ".copilot" / "session-state" / session / "events.jsonl", records)


def write_copilot_log(home: Path) -> None:
    lines = ["2026-05-07T09:00:00.000Z [INFO] Workspace initialized: cop-redaction-table (checkpoints: 0)"]
    for i, (_name, text, _secret) in enumerate(ITEMS):
        items: list[dict[str, Any]] = []

        def call(
            name: str, args: dict[str, Any], output: str | None = None, *, k: int = i,
            items: list[dict[str, Any]] = items,
        ) -> None:
            j = len(items)
            entry = {"arguments": json.dumps(args), "call_id": f"call_{k}_{j}", "id": f"i{k}_{j}",
                     "name": name, "status": "completed", "type": "function_call"}
            if output is not None:
                entry["message"] = output
            items.append(entry)

        items.append({"type": "message", "role": "assistant", "id": f"m{i}",
                      "content": [{"type": "output_text", "text": answer(text)}]})
        call("run_in_terminal", {"command": command(text)}, result(text))
        call("create_file", {"filePath": "/home/dev/app/.env", "content": content(text)})
        call("replace_string_in_file", {"filePath": "/home/dev/app/config.yml", "oldString": "x: 1",
                                        "newString": content(text)})
        call("mcp_tracker_create_issue", mcp_args(text))
        if (p := path_of(text)) is not None:
            call("read_file", {"filePath": p})
        if (u := url_of(text)) is not None:
            call("fetch_webpage", {"urls": [u], "query": "summary"})
        ts = f"2026-05-07T09:{i // 60 % 60:02d}:{i % 60:02d}.500Z"
        lines.append(f"{ts} [INFO] Accumulated output items ({len(items)}): {json.dumps(items)}")
    lines.append("2026-05-07T10:00:00.000Z [INFO] Session completed.")
    path = home / "projects" / "app" / "logs" / "copilot" / "process-1781779613986-83399.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_opencode(home: Path) -> None:
    db = build_opencode(home / ".local" / "share" / "opencode" / "opencode.db", "empty_v1")
    conn = sqlite3.connect(db)
    t = 1_785_420_000_000
    with conn:
        conn.execute("INSERT INTO project VALUES ('prj_t', '/home/dev/app', 'git', 'app', NULL, NULL, ?, ?, NULL,"
                     " '[]', NULL, NULL)", (t, t))
        conn.execute("INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created,"
                     " time_updated) VALUES ('ses_t', 'prj_t', NULL, 't', '/home/dev/app', 'table', 'v1.16.0', ?, ?)",
                     (t, t))
        n = 0

        def message(role: str, parts: list[dict[str, Any]]) -> None:
            nonlocal n
            n += 1
            mid = f"msg_{n:05d}"
            at = t + n * 1000
            info: dict[str, Any] = {"role": role, "time": {"created": at}}
            if role == "assistant":
                info.update({"parentID": f"msg_{n - 1:05d}", "modelID": "m1", "providerID": "p1",
                             "time": {"created": at, "completed": at + 500}, "finish": "stop",
                             "path": {"cwd": "/home/dev/app", "root": "/home/dev/app"},
                             "tokens": {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}}})
            conn.execute("INSERT INTO message VALUES (?, 'ses_t', ?, ?, ?)", (mid, at, at, json.dumps(info)))
            for k, part in enumerate(parts):
                conn.execute("INSERT INTO part VALUES (?, ?, 'ses_t', ?, ?, ?)",
                             (f"prt_{n:05d}_{k}", mid, at + k, at + k, json.dumps(part)))

        def tool(name: str, args: dict[str, Any], output: str = "ok") -> dict[str, Any]:
            return {"type": "tool", "tool": name, "callID": f"call_{n}_{name}",
                    "state": {"status": "completed", "input": args, "output": output,
                              "time": {"start": t, "end": t + 1}}}

        for _name, text, _secret in ITEMS:
            message("user", [{"type": "text", "text": prompt(text)}])
            parts = [
                {"type": "text", "text": answer(text)},
                tool("bash", {"command": command(text), "description": "write env"}, result(text)),
                tool("write", {"filePath": "/home/dev/app/.env", "content": content(text)}),
                tool("edit", {"filePath": "/home/dev/app/config.yml", "oldString": "x: 1", "newString": content(text)}),
                tool("tracker_create_issue", mcp_args(text)),
            ]
            if (p := path_of(text)) is not None:
                parts.append(tool("read", {"filePath": p}))
            if (u := url_of(text)) is not None:
                parts.append(tool("webfetch", {"url": u, "format": "text"}))
            message("assistant", parts)
    conn.close()


WRITERS: dict[str, Callable[[Path], None]] = {
    "claude.projects": write_claude,
    "codex.sessions": write_codex,
    "qwen.projects": write_qwen,
    "openclaw.agents": write_openclaw,
    "copilot.session_state": write_copilot_state,
    "copilot.process_log": write_copilot_log,
    "opencode.sqlite": write_opencode,
}


# -- what may not appear --------------------------------------------------------------


def _forms(secret: str) -> list[str]:
    raw = secret.encode()
    return [
        secret,
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        json.dumps(secret)[1:-1],
        json.dumps(json.dumps(secret))[1:-1],  # escaped twice: JSON text inside JSON
    ]


class LeakFinder:
    """Every form of every secret, and every 24-character fragment, found in one pass.

    A 24-character window of a secret always holds one of its 12-character blocks at
    offsets 0, 12, 24 ...; one RE2 alternation finds those blocks, and each hit is then
    widened to the exact fragments that hold it.
    """

    def __init__(self, items: list[tuple[str, str, str]]) -> None:
        self.items = items
        needles: dict[bytes, tuple[str, str, int]] = {}
        for name, _text, secret in items:
            for form in dict.fromkeys(_forms(secret)):
                if len(form) >= 8:
                    needles.setdefault(form.encode(), (name, secret, -1))
            for start in range(0, max(len(secret) - FRAGMENT, -1) + 1, FRAGMENT // 2):
                needles.setdefault(secret[start : start + FRAGMENT // 2].encode(), (name, secret, start))
        self.needles = needles
        options = re2.Options()
        options.max_mem = 512 << 20  # ~700 literals: room for the DFA, or it falls back to the NFA
        self.regex = re2.compile(b"|".join(re2.escape(n) for n in sorted(needles, key=len, reverse=True)), options)

    def leaks(self, data: bytes) -> list[str]:
        found: set[str] = set()
        for match in self.regex.finditer(data):
            name, secret, start = self.needles[match.group(0)]
            if start < 0:
                found.add(f"{name}: {match.group(0)[:40]!r}")
                continue
            # the 12-character block is part of a leak only inside a 24-character window
            for w in range(max(0, start - FRAGMENT // 2), min(start, len(secret) - FRAGMENT) + 1):
                if secret[w : w + FRAGMENT].encode() in data:
                    found.add(f"{name}: fragment {secret[w : w + FRAGMENT]!r}")
                    break
        return sorted(found)


# -- the test --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("redaction-home")
    for write in WRITERS.values():
        write(root)
    return root


def _observation_text(home: Path) -> dict[str, bytes]:
    """Per source kind, every string the adapters put into observations (raw, in memory)."""
    from telltale.discovery import DiscoveryOptions, discover
    from telltale.sources.base import AcquireContext
    from telltale.sources.registry import adapter_for

    out: dict[str, bytearray] = {}
    for source in discover(DiscoveryOptions(root=str(home), env={})).sources:
        buf = out.setdefault(source.kind, bytearray())
        for batch in adapter_for(source.kind).acquire(source, None, AcquireContext()):
            for obs in batch.observations:
                for value in (obs.text, obs.arguments, obs.command, obs.file_path, obs.url, obs.result):
                    if value:
                        buf += value.encode("utf-8", "surrogatepass") + b"\n"
    return {k: bytes(v) for k, v in out.items()}


def test_every_format_really_carries_every_secret(home: Path) -> None:
    """The placements are read: each secret is in the observations of every format."""
    texts = _observation_text(home)
    assert set(WRITERS) <= set(texts), sorted(texts)
    for kind, data in texts.items():
        decoded = data.decode("utf-8", "surrogatepass")
        missing = [name for name, _text, secret in ITEMS if secret not in decoded and json.dumps(secret)[1:-1]
                   not in decoded]
        assert missing == [], (kind, missing)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_no_secret_reaches_any_output_in_any_mode(home: Path, tmp_path: Path) -> None:
    finder = LeakFinder(ITEMS)
    store = BulkStore()
    bodies: list[bytes] = []

    def handle(path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        bodies.append(body)
        return store.handle(path, headers, body)

    failures: dict[str, list[str]] = {}
    with LoopbackReceiver(handle) as receiver:
        outputs = tmp_path / "outputs.yaml"
        outputs.write_text(f"outputs:\n  es:\n    type: elastic\n    url: {receiver.url}\n    timeout: 5\n")
        runs = [(mode, False) for mode in MODES] + [("full", True)]
        for mode, dry in runs:
            out = tmp_path / f"out-{mode}{'-dry' if dry else ''}"
            args = ["scan", "--once", "--root", str(home), "--json", "--content", mode,
                    "--log-path", str(out / "events.jsonl"), "--state-path", str(out / "state.sqlite"),
                    "--outputs", str(outputs), "--install-inventory-disabled"]
            if dry:
                args.append("--dry-run")
            if mode != "full" or dry:
                # Queued only: the outbox rows stay in the state database and are checked
                # there; the ``full`` run also delivers them to the receiver.
                args += ["--delivery-seconds", "0"]
            proc = run_cli(args, home, timeout=600)
            summary = json.loads(proc.stdout)
            assert summary["scanner_error_count"] == 0, proc.stderr
            assert {s["kind"] for s in summary["sources"]} >= set(WRITERS)
            label = f"{mode}{' dry-run' if dry else ''}"
            for name, data in [("stdout", proc.stdout.encode()), ("stderr", proc.stderr.encode())]:
                if leaks := finder.leaks(data):
                    failures[f"{label} {name}"] = leaks
            for path in _files(out):
                if leaks := finder.leaks(path.read_bytes()):
                    failures[f"{label} {path.name}"] = leaks
            if not dry:
                events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
                assert any(e["event"]["dataset"] == "telltale.detection" for e in events)
                assert sum(1 for e in events if e["event"]["dataset"] == "telltale.activity") > 4 * len(ITEMS)
                if mode != "none":
                    assert any("[REDACTED:" in line for line in (out / "events.jsonl").read_text().splitlines())
                with sqlite3.connect(out / "state.sqlite") as conn:
                    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                    for table in tables:
                        for row in conn.execute(f"SELECT * FROM {table}"):
                            cell = b"\x1f".join(c if isinstance(c, bytes) else str(c).encode() for c in row)
                            if leaks := finder.leaks(cell):
                                failures.setdefault(f"{label} state table {table}", []).extend(leaks)
        assert bodies, "the remote output received nothing"
        for body in bodies:
            if leaks := finder.leaks(body):
                failures.setdefault("remote output", []).extend(leaks)
    assert failures == {}, json.dumps({k: sorted(set(v))[:20] for k, v in failures.items()}, indent=1)


def test_leak_finder_finds_every_form_and_fragment() -> None:
    """The check itself: it would see a leak in each form it promises to look for."""
    finder = LeakFinder(ITEMS)
    _name, _text, secret = next(item for item in ITEMS if len(item[2]) >= 40)
    for form in _forms(secret):
        assert finder.leaks(b"xx " + form.encode() + b" yy"), form
    assert finder.leaks(b"..." + secret[7 : 7 + FRAGMENT].encode() + b"...")
    assert not finder.leaks(b"..." + secret[7 : 7 + FRAGMENT - 1].encode() + b"...")


def test_store_paths_in_listings_summaries_and_errors_are_redacted(tmp_path: Path) -> None:
    """Not only events: ``sources --json``, the scan summary and error lines pass the same
    redactor (a store directory named after a token is enough to leak one)."""
    token = "ghp_" + "".join(ch for _n, _t, s in ITEMS for ch in s if ch.isalnum())[:36]
    home = tmp_path / "home"
    session = home / ".claude" / "projects" / f"-home-dev-{token}" / "s.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"type": "user", "sessionId": "s", "uuid": "u1", "timestamp":
                                   "2026-11-20T10:00:00.000Z", "message": {"role": "user", "content": "hi"}}) + "\n")
    listing = run_cli(["sources", "--root", str(home), "--json"], home)
    assert "projects" in listing.stdout and token not in listing.stdout + listing.stderr
    out = tmp_path / "out"
    scan = run_cli(["scan", "--once", "--root", str(home), "--json", "--log-path", str(out / "e.jsonl"),
                    "--state-path", str(out / "s.sqlite"), "--install-inventory-disabled"], home)
    assert token not in scan.stdout + scan.stderr + (out / "e.jsonl").read_text()
    refused = run_cli(["scan", "--once", "--root", str(home / token), "--log-path", str(out / "e.jsonl"),
                       "--state-path", str(out / "s.sqlite")], home, check=False)
    assert "[REDACTED:github_token:" in refused.stderr  # the line is there, the token is not
    assert token not in refused.stdout + refused.stderr


def test_read_side_commands_and_store_text_are_redacted(home: Path, tmp_path: Path) -> None:
    """What the read-side commands print (the index, the log, and ``show --content full``'s
    text read back from the agent's own store) carries no secret either: the store's text
    is redacted on its way out as a ``full`` event's is."""
    finder = LeakFinder(ITEMS)
    paths = ["--log-path", str(tmp_path / "events.jsonl"), "--state-path", str(tmp_path / "state.sqlite")]
    run_cli(["scan", "--once", "--root", str(home), "--content", "redacted", *paths,
             "--install-inventory-disabled"], home, timeout=600)
    printed: dict[str, str] = {}
    sessions = run_cli(["sessions", "--json", *paths], home).stdout
    printed["sessions --json"] = sessions
    ids = [json.loads(line)["session_id"] for line in sessions.splitlines()]
    assert len(ids) >= len(WRITERS) - 1, ids  # Copilot's two formats may share one session
    from_store = 0
    for session_id in ids:
        shown = run_cli(["show", session_id, "--content", "full", "--json", *paths], home).stdout
        from_store += shown.count('"text_from":"store"') + shown.count('"result_from":"store"')
        printed[f"show {session_id} --json"] = shown
        printed[f"show {session_id}"] = run_cli(["show", session_id, "--content", "full", *paths], home).stdout
    # the store was really read back: the log itself holds these texts as hashes only
    assert from_store > 2 * len(ITEMS), from_store
    assert "[REDACTED:" in "".join(v for k, v in printed.items() if k.startswith("show"))
    for command in (["sessions"], ["detections", "--json", "--limit", "0"], ["detections", "--limit", "0"],
                    ["usage", "--json"], ["status", "--json"], ["export"], ["export", "--format", "timeline"],
                    ["export", "--format", "summary"], ["export", "--format", "elastic-bulk"]):
        printed[" ".join(command)] = run_cli([*command, *paths], home).stdout
    assert '"evidence"' in printed["detections --json --limit 0"]
    failures = {name: leaks for name, text in printed.items() if (leaks := finder.leaks(text.encode()))}
    assert failures == {}, json.dumps({k: v[:20] for k, v in failures.items()}, indent=1)


def test_inventory_output_is_redacted(tmp_path: Path) -> None:
    """``telltale inventory`` (JSON lines and the table) passes the redactor as the inventory
    events of a scan do: an MCP server name or launcher from the user's config may be a token."""
    secrets = [s for _n, _t, s in ITEMS if s.startswith(("ghp_", "glpat-", "sk-ant-"))]
    assert len(secrets) >= 3
    home = tmp_path / "home"
    (home / ".npm-global" / "lib" / "node_modules" / "@anthropic-ai" / "claude-code").mkdir(parents=True)
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text("{}")
    servers = {secrets[0]: {"type": "stdio", "command": f"/opt/bin/{secrets[1]}"},
               "web": {"type": "http", "url": f"https://mcp.example.test/{secrets[2]}"}}
    (home / ".claude.json").write_text(json.dumps({"mcpServers": servers}))
    finder = LeakFinder(ITEMS)
    lines = run_cli(["inventory", "--json", "--root", str(home)], home).stdout
    claude = next(json.loads(line) for line in lines.splitlines() if '"agent":"claude"' in line)
    assert len(claude["posture"]["mcp_servers"]) == 2 and "[REDACTED:github_token:" in lines
    assert finder.leaks(lines.encode()) == []
    from rich.console import Console

    from telltale.cli.inventory import write_table
    from telltale.inventory import take_inventory

    console = Console(width=400, record=True)
    write_table(take_inventory(str(home), {}, "linux", path_env="", consult_system=False), console)
    table = console.export_text()
    assert "MCP server" in table and "[REDACTED:" in table
    assert finder.leaks(table.encode()) == []
