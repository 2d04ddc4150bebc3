"""Generate a large synthetic Codex G2 rollout tree for the adapter benchmark.

The record mix follows real rollouts (Codex CLI 0.98–0.135): per turn a turn_context,
injected and real user messages (response_item + event_msg copies), reasoning with
encrypted content, unified-exec function calls with their outputs, an apply_patch
custom tool call, repeated cumulative token_count events and lifecycle events. All text
is synthetic filler; nothing is copied from a real transcript.

    python bench/gen_codex_tree.py OUT_DIR [--mib 256] [--files 16] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import string
from pathlib import Path

EXEC_HEADER = (
    "Chunk ID: ab12cd\nWall time: 0.0500 seconds\nProcess exited with code 0\nOriginal token count: 120\nOutput:\n"
)
WORDS = [
    "alpha",
    "build",
    "cache",
    "deploy",
    "error",
    "fixture",
    "graph",
    "handler",
    "index",
    "json",
    "kernel",
    "lint",
    "module",
    "network",
    "output",
    "parser",
    "query",
    "render",
    "schema",
    "token",
    "update",
    "vector",
    "worker",
    "yaml",
    "zone",
]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _blob(rng: random.Random, size: int) -> str:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=size))


def _line(ts: str, kind: str, payload: dict[str, object]) -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload}, separators=(",", ":"))


def rollout(rng: random.Random, session: str, target_bytes: int) -> list[str]:
    """One rollout of roughly ``target_bytes`` bytes."""
    lines = [
        _line(
            "2026-03-01T10:00:00.000Z",
            "session_meta",
            {
                "id": session,
                "timestamp": "2026-03-01T10:00:00.000Z",
                "cwd": "/work/project",
                "originator": "codex_cli_rs",
                "cli_version": "0.120.0",
                "source": "cli",
                "model_provider": "openai",
                "base_instructions": {"text": _text(rng, 1500)},
            },
        )
    ]
    size = len(lines[0])
    total = [0, 0, 0, 0, 0]
    turn = 0
    call = 0
    while size < target_bytes:
        turn += 1
        ts = f"2026-03-01T10:{turn // 60 % 60:02d}:{turn % 60:02d}.000Z"
        turn_id = f"turn-{session[:8]}-{turn}"
        prompt = _text(rng, rng.randint(10, 80))
        batch = [
            _line(ts, "event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 258400}),
            _line(
                ts,
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "<environment_context>\n  <cwd>/work/project</cwd>\n</environment_context>",
                        }
                    ],
                },
            ),
            _line(
                ts,
                "turn_context",
                {
                    "turn_id": turn_id,
                    "cwd": "/work/project",
                    "approval_policy": "on-request",
                    "sandbox_policy": {"type": "workspace-write"},
                    "model": "gpt-5.3-codex",
                    "effort": "medium",
                    "summary": "auto",
                },
            ),
            _line(
                ts,
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
            ),
            _line(ts, "event_msg", {"type": "user_message", "message": prompt, "images": [], "local_images": []}),
        ]
        for _ in range(rng.randint(2, 6)):
            call += 1
            call_id = f"call_{session[:6]}{call:06d}"
            summary = _text(rng, 8)
            batch.append(_line(ts, "event_msg", {"type": "agent_reasoning", "text": summary}))
            batch.append(
                _line(
                    ts,
                    "response_item",
                    {
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": summary}],
                        "content": None,
                        "encrypted_content": _blob(rng, rng.randint(800, 3000)),
                    },
                )
            )
            if rng.random() < 0.2:
                patch = (
                    "*** Begin Patch\n*** Update File: src/mod.py\n@@\n-"
                    + _text(rng, 20)
                    + "\n+"
                    + _text(rng, 20)
                    + "\n*** End Patch\n"
                )
                batch.append(
                    _line(
                        ts,
                        "response_item",
                        {
                            "type": "custom_tool_call",
                            "status": "completed",
                            "call_id": call_id,
                            "name": "apply_patch",
                            "input": patch,
                        },
                    )
                )
                batch.append(
                    _line(
                        ts,
                        "response_item",
                        {
                            "type": "custom_tool_call_output",
                            "call_id": call_id,
                            "output": json.dumps(
                                {
                                    "output": "Success. Updated the following files:\nM src/mod.py\n",
                                    "metadata": {"exit_code": 0, "duration_seconds": 0.0},
                                }
                            ),
                        },
                    )
                )
            else:
                cmd = rng.choice(
                    [
                        "rg -n handler src",
                        "ls -la",
                        "pytest -q tests/test_mod.py",
                        "git status --short",
                        "sed -n '1,120p' src/mod.py",
                    ]
                )
                batch.append(
                    _line(
                        ts,
                        "response_item",
                        {
                            "type": "function_call",
                            "name": "exec_command",
                            "arguments": json.dumps(
                                {"cmd": cmd, "workdir": "/work/project", "max_output_tokens": 6000}
                            ),
                            "call_id": call_id,
                        },
                    )
                )
                out = "\n".join(_text(rng, 12) for _ in range(rng.randint(3, 60)))
                batch.append(
                    _line(
                        ts,
                        "response_item",
                        {
                            "type": "function_call_output",
                            "call_id": call_id,
                            "output": f"{EXEC_HEADER}{out}\n",
                        },
                    )
                )
            last = [rng.randint(8000, 30000), rng.randint(0, 8000), rng.randint(50, 800), rng.randint(0, 200)]
            total = [total[0] + last[0], total[1] + last[1], total[2] + last[2], total[3] + last[3], 0]
            info = {
                "total_token_usage": {
                    "input_tokens": total[0],
                    "cached_input_tokens": total[1],
                    "output_tokens": total[2],
                    "reasoning_output_tokens": total[3],
                    "total_tokens": total[0] + total[2],
                },
                "last_token_usage": {
                    "input_tokens": last[0],
                    "cached_input_tokens": last[1],
                    "output_tokens": last[2],
                    "reasoning_output_tokens": last[3],
                    "total_tokens": last[0] + last[2],
                },
                "model_context_window": 258400,
            }
            rate = {"primary": {"used_percent": 1.0, "window_minutes": 300, "resets_at": 1771864831}}
            batch.append(_line(ts, "event_msg", {"type": "token_count", "info": info, "rate_limits": rate}))
            batch.append(_line(ts, "event_msg", {"type": "token_count", "info": info, "rate_limits": rate}))
        answer = _text(rng, rng.randint(20, 200))
        batch.append(_line(ts, "event_msg", {"type": "agent_message", "message": answer}))
        batch.append(
            _line(
                ts,
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": answer}],
                    "phase": "final_answer",
                },
            )
        )
        batch.append(
            _line(ts, "event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer})
        )
        lines.extend(batch)
        size += sum(len(b) + 1 for b in batch)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mib", type=int, default=256, help="total size of the tree")
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    per_file = args.mib * (1 << 20) // args.files
    for index in range(args.files):
        session = f"0199{index:04x}-0000-7000-8000-{rng.getrandbits(48):012x}"
        day = args.out / "sessions" / "2026" / "03" / f"{index % 28 + 1:02d}"
        day.mkdir(parents=True, exist_ok=True)
        path = day / f"rollout-2026-03-01T10-00-00-{session}.jsonl"
        path.write_text("\n".join(rollout(rng, session, per_file)) + "\n", encoding="utf-8")
    print(f"wrote {args.files} rollouts, ~{args.mib} MiB, under {args.out}")


if __name__ == "__main__":
    main()
