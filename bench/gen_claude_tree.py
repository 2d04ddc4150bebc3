"""Generate a large synthetic Claude Code projects tree for the adapter benchmark.

The record mix follows real transcripts (Claude Code 2.0.x–2.1.x, see
``docs/sources/claude.md``): per turn a typed prompt (sometimes with injected IDE context
or an ``isMeta`` caveat), one or more API responses written as several ``assistant`` lines
sharing a ``message.id`` (text, thinking, tool_use blocks, the usage repeated on each line),
hook ``progress`` records between them, ``tool_result`` user records (Bash output, Read
results with line-number prefixes, Grep/Glob listings and now and then a large result),
``file-history-snapshot``, ``system`` and ``queue-operation`` bookkeeping, and Task calls
whose subagent transcripts are written in the new layout
(``<session>/subagents/agent-<id>.jsonl``) with ``agent_progress`` records in the parent.
By bytes, tool results are about half the input, as in real files. All text is synthetic
filler; nothing is copied from a real transcript.

    python bench/gen_claude_tree.py OUT_DIR [--size-mb 200] [--files 24] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from pathlib import Path
from typing import Any, TextIO

WORDS = [
    "alpha", "build", "cache", "deploy", "error", "fixture", "graph", "handler", "index",
    "json", "kernel", "lint", "module", "network", "output", "parser", "query", "render",
    "schema", "token", "update", "vector", "worker", "yaml", "zone", "the", "a", "to", "and",
]  # fmt: skip
TOOLS = ["Bash", "Bash", "Bash", "Read", "Read", "Edit", "Grep", "Glob", "Write", "WebFetch"]
MODELS = ["claude-opus-4-6", "claude-sonnet-4-5-20250929"]
#: Subagent transcripts per main session (Task calls beyond this are plain tools).
MAX_SUBAGENTS = 6


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _code(rng: random.Random, lines: int, numbered: bool) -> str:
    out = []
    for i in range(1, lines + 1):
        body = (
            f"    {rng.choice(WORDS)}_{rng.randrange(99)} = {rng.choice(WORDS)}({_words(rng, rng.randrange(1, 6))!r})"
        )
        out.append(f"{i:6d}→{body}" if numbered else body)
    return "\n".join(out)


class Writer:
    """Writes one transcript with a consistent envelope; tracks its size."""

    def __init__(self, fh: TextIO, rng: random.Random, session: str, cwd: str, agent: str | None = None) -> None:
        self.fh, self.rng, self.session, self.cwd, self.agent = fh, rng, session, cwd, agent
        self.parent: str | None = None
        self.size = 0
        self.clock = rng.randrange(10**6)

    def record(self, kind: str, **fields: Any) -> str:
        self.clock += self.rng.randrange(1, 4000)
        rid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        rec: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": self.agent is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.1.39",
            "gitBranch": "main",
        }
        if self.agent is not None:
            rec["agentId"] = self.agent
        rec["type"] = kind
        rec.update(fields)
        rec["uuid"] = rid
        secs, ms = divmod(self.clock, 1000)
        day, hour, minute = 1 + secs // 86400 % 28, secs // 3600 % 24, secs // 60 % 60
        rec["timestamp"] = f"2026-03-{day:02d}T{hour:02d}:{minute:02d}:{secs % 60:02d}.{ms:03d}Z"
        self.parent = rid
        return self.write(rec) or rid

    def write(self, rec: dict[str, Any]) -> None:
        data = json.dumps(rec, separators=(",", ":"), ensure_ascii=False) + "\n"
        self.fh.write(data)
        self.size += len(data.encode("utf-8"))


def _tool_input(rng: random.Random, name: str, cwd: str) -> dict[str, Any]:
    path = f"{cwd}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
    if name == "Bash":
        cmd = rng.choice(["pytest -q", "git status --short", "ls -la", "make build", "rg -n TODO", "npm test"])
        return {"command": f"{cmd} {rng.choice(WORDS)}", "description": _words(rng, 4)}
    if name == "Read":
        return {"file_path": path}
    if name == "Edit":
        return {"file_path": path, "old_string": _code(rng, 3, False), "new_string": _code(rng, 4, False)}
    if name == "Write":
        return {"file_path": path, "content": _code(rng, rng.randrange(10, 120), False)}
    if name == "Grep":
        return {"pattern": rng.choice(WORDS), "path": cwd, "output_mode": "content"}
    if name == "Glob":
        return {"pattern": f"**/*{rng.choice(WORDS)}*.py", "path": cwd}
    return {"url": f"https://docs.example.invalid/{rng.choice(WORDS)}", "prompt": _words(rng, 10)}


def _tool_output(rng: random.Random, name: str) -> str:
    large = rng.random() < 0.04
    if name == "Read":
        return _code(rng, rng.randrange(600, 1200) if large else rng.randrange(20, 200), True)
    if name == "Bash":
        lines = rng.randrange(400, 900) if large else rng.randrange(1, 60)
        return "\n".join(f"{rng.choice(WORDS)}/{rng.choice(WORDS)}.py::{_words(rng, 3)} PASSED" for _ in range(lines))
    if name in ("Grep", "Glob"):
        return "\n".join(
            f"src/{rng.choice(WORDS)}.py:{rng.randrange(999)}:{_words(rng, 6)}" for _ in range(rng.randrange(1, 80))
        )
    if name == "WebFetch":
        return _words(rng, rng.randrange(50, 400))
    return f"The file has been updated successfully. {_words(rng, 6)}"


def _usage(rng: random.Random, base: int) -> dict[str, Any]:
    cc = rng.randrange(0, 4000)
    return {
        "input_tokens": rng.randrange(1, 12),
        "cache_creation_input_tokens": cc,
        "cache_read_input_tokens": base,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": cc},
        "output_tokens": rng.randrange(1, 900),
        "service_tier": "standard",
    }


def response(w: Writer, rng: random.Random, context: int, subagents: list[str]) -> list[tuple[str, str, str]]:
    """One API response as several assistant lines; returns its (call id, tool, spawned agent)."""
    mid = f"msg_{rng.getrandbits(80):020x}"
    req = f"req_{rng.getrandbits(80):020x}"
    model = rng.choice(MODELS)
    usage = _usage(rng, context)
    blocks: list[dict[str, Any]] = []
    if rng.random() < 0.3:
        blocks.append({"type": "thinking", "thinking": _words(rng, rng.randrange(20, 200)), "signature": "c2ln" * 40})
    if rng.random() < 0.8:
        blocks.append({"type": "text", "text": _words(rng, rng.randrange(5, 250))})
    calls: list[tuple[str, str, str]] = []
    for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
        call_id = f"toolu_{rng.getrandbits(96):024x}"
        if rng.random() < 0.004 and len(subagents) < MAX_SUBAGENTS:
            agent = f"a{rng.getrandbits(28):07x}"
            subagents.append(agent)
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": "Task",
                    "input": {
                        "description": _words(rng, 4),
                        "prompt": _words(rng, 60),
                        "subagent_type": "general-purpose",
                    },
                }
            )
            calls.append((call_id, "Task", agent))
        else:
            name = rng.choice(TOOLS)
            blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": _tool_input(rng, name, w.cwd)})
            calls.append((call_id, name, ""))
    if not blocks:
        blocks.append({"type": "text", "text": "Done."})
    for block in blocks:
        w.record(
            "assistant",
            message={
                "model": model,
                "id": mid,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
            requestId=req,
        )
        if block["type"] == "tool_use" and rng.random() < 0.5:
            w.record(
                "progress",
                data={
                    "type": "hook_progress",
                    "hookEvent": "PreToolUse",
                    "hookName": f"PreToolUse:{block['name']}",
                    "command": "echo pre",
                },
                parentToolUseID=block["id"],
                toolUseID=block["id"],
            )
    return calls


def results(w: Writer, rng: random.Random, calls: list[tuple[str, str, str]]) -> None:
    for call_id, name, agent in calls:
        if agent:
            for _ in range(rng.randrange(2, 8)):
                nested = {
                    "type": "assistant",
                    "message": {
                        "model": MODELS[1],
                        "id": "msg_nested",
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "toolu_nested",
                                "name": "Read",
                                "input": {"file_path": f"{w.cwd}/README.md"},
                            }
                        ],
                    },
                }
                w.record(
                    "progress",
                    data={
                        "message": nested,
                        "normalizedMessages": [],
                        "type": "agent_progress",
                        "prompt": _words(rng, 30),
                        "agentId": agent,
                    },
                    toolUseID=f"agent_{call_id}",
                    parentToolUseID=call_id,
                )
            text = _words(rng, 200)
            w.record(
                "user",
                message={
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": call_id,
                            "type": "tool_result",
                            "content": [{"type": "text", "text": text}, {"type": "text", "text": f"agentId: {agent}"}],
                        }
                    ],
                },
                toolUseResult={"status": "completed", "agentId": agent, "totalTokens": rng.randrange(10**5)},
            )
            continue
        output = _tool_output(rng, name)
        is_error = rng.random() < 0.05
        extra: dict[str, Any] = {}
        if name == "Bash":
            extra["toolUseResult"] = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
        elif name == "Read":
            extra["toolUseResult"] = {
                "type": "text",
                "file": {"filePath": f"{w.cwd}/x.py", "numLines": output.count("\n") + 1},
            }
        w.record(
            "user",
            message={
                "role": "user",
                "content": [{"tool_use_id": call_id, "type": "tool_result", "content": output, "is_error": is_error}],
            },
            **extra,
        )


def transcript(w: Writer, rng: random.Random, target: int, subagents: list[str]) -> None:
    context = 12_000
    while w.size < target:
        w.write(
            {
                "type": "file-history-snapshot",
                "messageId": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "snapshot": {"trackedFileBackups": {}, "timestamp": "2026-03-02T10:00:00.000Z"},
                "isSnapshotUpdate": False,
            }
        )
        if rng.random() < 0.2:
            w.record(
                "user",
                message={
                    "role": "user",
                    "content": "<local-command-caveat>Caveat: generated locally.</local-command-caveat>",
                },
                isMeta=True,
            )
        prompt = _words(rng, rng.randrange(5, 120))
        if rng.random() < 0.25:
            w.record(
                "user",
                message={
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": f"<ide_opened_file>The user opened {w.cwd}/src/app.py</ide_opened_file>",
                        },
                        {"type": "text", "text": prompt},
                    ],
                },
            )
        else:
            w.record("user", message={"role": "user", "content": prompt}, permissionMode="default")
        for _ in range(rng.randrange(1, 12)):
            context += rng.randrange(200, 3000)
            calls = response(w, rng, context, subagents)
            if not calls:
                break
            results(w, rng, calls)
        w.record("system", subtype="turn_duration", durationMs=rng.randrange(10**5), isMeta=False)
        if rng.random() < 0.1:
            w.write(
                {
                    "type": "queue-operation",
                    "operation": "enqueue",
                    "timestamp": "2026-03-02T10:00:00.000Z",
                    "sessionId": w.session,
                    "content": _words(rng, 8),
                }
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size-mb", type=float, default=200.0, help="approximate total size (10^6 bytes)")
    parser.add_argument("--files", type=int, default=24, help="main session transcripts")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    per_file = int(args.size_mb * 1e6 / args.files)
    total = 0
    count = 0
    for i in range(args.files):
        project = args.out / "projects" / f"-home-dev-{WORDS[i % len(WORDS)]}-{i:02d}"
        project.mkdir(parents=True, exist_ok=True)
        session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        cwd = f"/home/dev/{WORDS[i % len(WORDS)]}-{i:02d}"
        subagents: list[str] = []
        with (project / f"{session}.jsonl").open("w", encoding="utf-8") as fh:
            w = Writer(fh, rng, session, cwd)
            transcript(w, rng, int(per_file * 0.9), subagents)
            total += w.size
            count += 1
        share = int(per_file * 0.1 / max(1, len(subagents)))
        for agent in subagents:
            path = project / session / "subagents" / f"agent-{agent}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8") as fh:
                w = Writer(fh, rng, session, cwd, agent=agent)
                transcript(w, rng, max(share, 20_000), [])
                total += w.size
                count += 1
    print(f"wrote {count} transcripts, {total / 1e6:.1f} MB under {args.out}")


if __name__ == "__main__":
    main()
