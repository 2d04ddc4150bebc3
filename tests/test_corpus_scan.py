"""The real corpus through the whole CLI: every source acquired, detections listed.

Runs only when ``TELLTALE_CORPUS`` names the corpus folder. The corpus is copied into a
temporary home in each agent's real layout (never into the repository).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from conftest import corpus_dir
from scan_helpers import read_events, run_cli

CORPUS = corpus_dir()
pytestmark = pytest.mark.skipif(CORPUS is None, reason="TELLTALE_CORPUS is not set")


def _build_home(corpus: Path, home: Path) -> None:
    projects = home / ".claude" / "projects"
    for path in (corpus / "claude-code").rglob("*.jsonl"):
        rel = path.relative_to(corpus / "claude-code")
        parts = rel.parts
        # keep the project slug directory (and subagent layout) where there is one
        slug = parts[2] if parts[1:2] == ("projects",) else f"-corpus-{parts[0]}"
        tail = parts[3:] if parts[1:2] == ("projects",) else parts[1:]
        dest = projects / slug / Path(*tail)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for i, path in enumerate(sorted((corpus / "codex").rglob("*.jsonl"))):
        if path.name == "history.jsonl":
            continue
        dest = home / ".codex" / "sessions" / "2026" / "01" / f"{i:02d}" / path.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for path in (corpus / "qwen-code").rglob("chats/*.jsonl"):
        dest = home / ".qwen" / "projects" / path.parent.parent.name / "chats" / path.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for path in (corpus / "openclaw").rglob("*"):
        if path.is_file() and "/agents/" in str(path):
            rel = str(path).split("/agents/", 1)[1]
            owner = path.relative_to(corpus / "openclaw").parts[0]
            dest = home / ".openclaw" / "agents" / f"{owner}-{rel}"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    for path in (corpus / "copilot-cli").rglob("events.jsonl"):
        dest = home / ".copilot" / "session-state" / path.parent.name / "events.jsonl"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for path in (corpus / "cursor").rglob("*.jsonl"):
        rel = str(path).split("/projects/", 1)[1]
        dest = home / ".cursor" / "projects" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for path in (corpus / "opencode").rglob("opencode.db"):
        dest = home / ".local" / "share" / "opencode" / "opencode.db"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)


def test_corpus_scans_without_source_failure_and_detections_are_listed(tmp_path: Path) -> None:
    assert CORPUS is not None
    home = tmp_path / "home"
    _build_home(CORPUS, home)
    out = tmp_path / "out"
    proc = run_cli(
        ["scan", "--once", "--root", str(home), "--json", "--log-path", str(out / "e.jsonl"), "--state-path",
         str(out / "s.sqlite"), "--install-inventory-disabled", "--content", "none"],
        home,
    )
    summary = json.loads(proc.stdout)
    kinds = Counter(s["kind"] for s in summary["sources"])
    assert {"claude.projects", "codex.sessions", "qwen.projects", "openclaw.agents", "opencode.sqlite",
            "copilot.session_state", "cursor.agent_transcripts"} <= set(kinds)
    failed = [s for s in summary["sources"] if s["status"] == "error"]
    assert failed == [], failed
    assert summary["scanner_error_count"] == 0
    events = read_events(out / "e.jsonl")
    detections = [e for e in events if e["event"]["dataset"] == "telltale.detection"]
    listing = sorted(
        (e["telltale"].get("client", "?"), e["rule"]["id"], e["event"]["severity"])
        for e in detections
    )
    print(f"\ncorpus: {len(events)} events, {len(detections)} detections")
    for row in listing:
        print("  detection:", row)
    # The corpus is ordinary developer work: nothing may be rated critical.
    assert all(e["telltale"]["detection"]["severity"] != "critical" for e in detections), listing
