"""A scanned fixture home for the report's tests: the read side's home (Claude Code with a
subagent and a resumed session, Codex, detections, rotated log, a backfill writing every
event twice), plus a Claude session whose prompt carries markup and a script, scanned
with ``--content full`` so the log holds the prompt's text."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from scan_helpers import run_cli
from test_readside_cli import S1, build_home

HOSTILE = "5f0c1a2e-3333-4aaa-8bbb-000000000003"
#: The prompt a person typed (or an agent was fed): it must show as text, never run.
HOSTILE_PROMPT = (
    "<script>window.__pwned = 1; document.title = 'pwned'</script>"
    "</script><img src=x onerror=\"window.__pwned=2\"><!-- <b>bold?</b> & &amp; \u2028 end"
)


def _hostile_session(home: Path) -> None:
    projects = home / ".claude" / "projects" / "-work-web"
    projects.mkdir(parents=True, exist_ok=True)
    base = {"sessionId": HOSTILE, "cwd": "/work/web", "version": "2.1.40", "userType": "external",
            "isSidechain": False}  # fmt: skip
    lines = [
        {**base, "type": "user", "uuid": "h1", "timestamp": "2026-03-03T12:00:00.000Z",
         "message": {"role": "user", "content": HOSTILE_PROMPT}},
        {**base, "type": "assistant", "uuid": "h2", "timestamp": "2026-03-03T12:00:01.000Z", "requestId": "req_H",
         "message": {"id": "msg_H", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                     "content": [{"type": "tool_use", "id": "toolu_web", "name": "WebFetch",
                                  "input": {"url": "https://example.invalid/<script>x</script>", "prompt": "read"}}],
                     "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                               "output_tokens": 5}}},
        {**base, "type": "user", "uuid": "h3", "timestamp": "2026-03-03T12:00:02.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_web",
                                                  "content": "</script><script>window.__pwned=3</script>"}]}},
    ]  # fmt: skip
    (projects / f"{HOSTILE}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def _qwen(home: Path) -> None:
    """A third agent: the Qwen Code fixtures, one of them with records that are skipped."""
    fixtures = Path(__file__).parent / "fixtures" / "session_stores" / "qwen" / "projects"
    shutil.copytree(fixtures, home / ".qwen" / "projects")


def build(home: Path) -> dict[str, Any]:
    """Build and scan the home; the paths the tests need."""
    build_home(home)
    _hostile_session(home)
    _qwen(home)
    out = home / ".state-out"
    log, state = out / "events.jsonl", out / "state.sqlite"
    base = ["--root", str(home), "--log-path", str(log), "--state-path", str(state), "--content", "full",
            "--log-rotate-max-size", "8k", "--log-rotate-keep", "100", "--window-bytes", "3k", "--json"]  # fmt: skip
    run_cli(["scan", "--once", *base], home)
    run_cli(["scan", "--once", "--backfill", *base], home)
    return {"home": home, "log": log, "state": state, "paths": ["--state-path", str(state)], "parent": S1}


def report(ctx: dict[str, Any], out: Path, *args: str, check: bool = True) -> Any:
    return run_cli(["report", "-o", str(out), "--force", *args, *ctx["paths"]], ctx["home"],
                   extra_env={"TZ": "UTC"}, check=check)  # fmt: skip


_DATA = re.compile(r'<script type="application/json" id="report-(head|data)">(.*?)</script>', re.S)


def embedded(page: str) -> dict[str, Any]:
    """The data the page carries (what its script draws): the overview's and the rest."""
    parts = {m.group(1): json.loads(m.group(2)) for m in _DATA.finditer(page)}
    assert set(parts) == {"head", "data"}, "the page must carry both data elements"
    return {**parts["head"], **parts["data"]}


def cli_json(ctx: dict[str, Any], *args: str) -> list[dict[str, Any]]:
    proc = run_cli([*args, *ctx["paths"], "--json"], ctx["home"], extra_env={"TZ": "UTC"})
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
