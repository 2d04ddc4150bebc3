"""Helpers for end-to-end tests that run the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def cli_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    scrub = ("CODEX_", "CLAUDE_", "OPENCODE_", "TELLTALE_", "XDG_", "COPILOT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(scrub)}
    env["HOME"] = str(home)
    env["XDG_STATE_HOME"] = str(home / ".state-out")
    # The host's /etc/telltale never reaches a test: the system root is an (absent) dir in the home.
    env["TELLTALE_SYSTEM_CONFIG_DIR"] = str(home / ".system-config")
    env["PYTHONPATH"] = str(REPO / "src")
    if extra:
        env.update(extra)
    return env


def run_cli(args: list[str], home: Path, *, extra_env: dict[str, str] | None = None, timeout: float = 120,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "telltale", *args],
        env=cli_env(home, extra_env),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(home),
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"telltale {' '.join(args)} exited {proc.returncode}\n{proc.stderr}\n{proc.stdout}")
    return proc


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def scan_detections(home: Path, out: Path, detector: Any, *, window_bytes: int | None = None) -> list[str]:
    """Scan ``home`` in-process into ``out`` with ``detector``; the rule ids of the
    detection events in the log, sorted."""
    from telltale.discovery import DiscoveryOptions, discover
    from telltale.pipeline import Scanner, ScanOptions

    sources = discover(DiscoveryOptions(root=str(home), env={})).sources
    options = ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"))
    if window_bytes is not None:
        options.window_bytes = window_bytes
    scanner = Scanner(options, detector=detector)
    try:
        scanner.scan(sources)
    finally:
        scanner.close()
    events = read_events(out / "e.jsonl")
    return sorted(e["rule"]["id"] for e in events if e["event"]["dataset"] == "telltale.detection")


def activity(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"]["dataset"] in ("telltale.activity", "telltale.detection")]


def write_claude_session(root: Path, slug: str, session: str, n_turns: int, *, start: int = 0) -> Path:
    """Append ``n_turns`` synthetic turns (prompt, tool call, tool result, answer) to a transcript."""
    d = root / ".claude" / "projects" / slug
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{session}.jsonl"
    with path.open("a") as fh:
        for i in range(start, start + n_turns):
            base = {"sessionId": session, "cwd": "/work/p", "version": "2.1.38", "isSidechain": False,
                    "userType": "external", "timestamp": f"2026-11-20T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z"}
            fh.write(json.dumps({**base, "type": "user", "uuid": f"{session}-u{i}", "parentUuid": None,
                                 "message": {"role": "user", "content": f"please run step {i}"}}) + "\n")
            fh.write(json.dumps({**base, "type": "assistant", "uuid": f"{session}-a{i}",
                                 "parentUuid": f"{session}-u{i}",
                                 "requestId": f"req_{i}", "message": {
                                     "id": f"msg_{session}_{i}", "type": "message", "role": "assistant",
                                     "model": "claude-sonnet-4-5",
                                     "content": [{"type": "tool_use", "id": f"toolu_{session}_{i}", "name": "Bash",
                                                  "input": {"command": f"echo step {i} && ls -la"}}],
                                     "stop_reason": "tool_use",
                                     "usage": {"input_tokens": 5, "cache_read_input_tokens": 100,
                                               "cache_creation_input_tokens": 10, "output_tokens": 7}}}) + "\n")
            fh.write(json.dumps({**base, "type": "user", "uuid": f"{session}-t{i}", "parentUuid": f"{session}-a{i}",
                                 "message": {"role": "user", "content": [
                                     {"type": "tool_result", "tool_use_id": f"toolu_{session}_{i}",
                                      "content": f"step {i}\ntotal 0"}]}}) + "\n")
    return path


_OPEN_AUDIT = '''
"""Test seam: record every open of the watched paths (audit hooks see what chmod 0 cannot
show when the tests run as root)."""
import os
import sys
from urllib.parse import unquote

_WATCHED = set(os.environ["TELLTALE_TEST_OPEN_WATCH"].split(os.pathsep))
_LOG = os.open(os.environ["TELLTALE_TEST_OPEN_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


def _hook(event, args):
    if event == "open" or event == "sqlite3.connect":
        path = args[0]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return
        if event == "sqlite3.connect" and path.startswith("file:"):
            path = unquote(path[5:].split("?", 1)[0])
        path = os.path.realpath(path)
        if path in _WATCHED:
            os.write(_LOG, (event + " " + path + "\\n").encode())


sys.addaudithook(_hook)
'''


def open_audit(tmp: Path, watched: list[Path]) -> tuple[dict[str, str], Path]:
    """Environment for ``run_cli(extra_env=...)`` under which the CLI records each open (a
    file open or an SQLite connection) of ``watched``, and the file it records them in.

    ``chmod 0`` proves nothing when the suite runs as root; an audit hook does.
    """
    site = tmp / "open-audit-site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(_OPEN_AUDIT)
    log = tmp / "open-audit.log"
    log.touch()
    env = {
        "PYTHONPATH": f"{site}{os.pathsep}{REPO / 'src'}",
        "TELLTALE_TEST_OPEN_WATCH": os.pathsep.join(os.path.realpath(p) for p in watched),
        "TELLTALE_TEST_OPEN_LOG": str(log),
    }
    return env, log


def opened(log: Path) -> list[str]:
    """The watched paths opened so far (``event path`` lines), in order."""
    return log.read_text().splitlines()
