"""Cline family and Continue end to end: discovery on three platform layouts, the real CLI,
re-scans, rewrites, health events and stores left byte-identical."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from extension_fixtures import (
    CLINE_METADATA,
    continue_agent_session,
    continue_chat_session,
    native_era_api,
    roo_native_api,
    ui_messages,
    write_continue,
    write_task,
    xml_era_api,
)
from scan_helpers import read_events, run_cli
from telltale.discovery import DiscoveryOptions, discover
from telltale.discovery.editors import EDITORS
from test_discovery_editors import windows_mapper

#: (fork client, kind, extension folder as an editor may spell it).
FORKS = (
    ("cline", "cline.tasks", "saoudrizwan.claude-dev"),
    ("roo", "roo.tasks", "RooVeterinaryInc.roo-cline"),  # mixed case: matched case-insensitively
    ("kilo", "kilo.legacy_tasks", "kilocode.kilo-code"),
)
PLATFORMS = {
    "linux": ({"HOME": "/home/me"}, "home/me/.config"),
    "darwin": ({"HOME": "/Users/me"}, "Users/me/Library/Application Support"),
    "windows": ({"USERPROFILE": "C:\\Users\\me"}, "C/Users/me/AppData/Roaming"),
}


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if ".state-out" not in p.parts):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            stat = path.stat()
            digest.update(path.read_bytes() + f"{stat.st_mtime_ns}:{stat.st_mode}".encode())
    return digest.hexdigest()


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_discovery_across_eight_editors_on_each_platform_layout(tmp_path: Path, platform: str) -> None:
    env, app_data = PLATFORMS[platform]
    for n, editor in enumerate(EDITORS):
        user = tmp_path / app_data / editor.folder / "User"
        for _client, _kind, folder in FORKS:
            write_task(user / "globalStorage" / folder / "tasks", f"17605{n}", api=[], ui=[])
    mapper = windows_mapper(tmp_path) if platform == "windows" else (lambda path: str(tmp_path) + path)
    result = discover(DiscoveryOptions(env=env, platform=platform, host_path=mapper,
                                       clients=("cline", "roo", "kilo.legacy_tasks")))
    assert result.errors == []
    found = {(s.kind, s.found_by, s.path.replace("\\", "/").rsplit("/", 1)[-1]) for s in result.sources}
    expected = {
        (kind, f"editor:{editor.id}", name)
        for editor in EDITORS for _client, kind, _folder in FORKS
        for name in ("api_conversation_history.json", "ui_messages.json")
    }
    assert found == expected
    assert len(result.sources) == 8 * 3 * 2


def test_continue_global_dir_and_home_are_both_searched(tmp_path: Path) -> None:
    home, moved = tmp_path / "home", tmp_path / "elsewhere"
    write_continue(home / ".continue", [continue_chat_session()])
    write_continue(moved, [continue_agent_session()])
    result = discover(DiscoveryOptions(env={"HOME": str(home), "CONTINUE_GLOBAL_DIR": str(moved)},
                                       platform="linux", clients=("continue",)))
    got = sorted((s.kind, s.found_by) for s in result.sources)
    assert got == [
        ("continue.dev_data", "env:CONTINUE_GLOBAL_DIR"), ("continue.dev_data", "home"),
        ("continue.sessions", "env:CONTINUE_GLOBAL_DIR"), ("continue.sessions", "home"),
    ]


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    gs = home / ".config" / "Code" / "User" / "globalStorage"
    write_task(gs / "saoudrizwan.claude-dev" / "tasks", "1760534080239", api=native_era_api(),
               ui=ui_messages(requests=2), metadata=CLINE_METADATA)
    write_task(gs / "saoudrizwan.claude-dev" / "tasks", "1760534099999", api=xml_era_api(), ui=ui_messages())
    write_task(home / ".config" / "Cursor" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks", "7",
               api=roo_native_api(), history_item={"workspace": "/home/dev/roo"})
    write_continue(home / ".continue", [continue_chat_session(), continue_agent_session()])
    return home


def _scan(home: Path, out: Path) -> list[dict[str, object]]:
    before = len(read_events(out / "e.jsonl"))
    run_cli(["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"),
             "--state-path", str(out / "s.sqlite")], home)
    return read_events(out / "e.jsonl")[before:]


def _activity(events: list[dict[str, object]]) -> list[dict[str, object]]:
    """Record events of the sources (activity and detections; not inventory or health)."""
    wanted = ("telltale.activity", "telltale.detection")
    return [e for e in events if e["event"]["dataset"] in wanted]  # type: ignore[index]


def test_cli_sources_scan_rescan_rewrite_and_byte_identical_stores(tmp_path: Path) -> None:
    home = _home(tmp_path)
    out = tmp_path / "out"
    listed = run_cli(["sources", "--root", str(home), "--json"], home).stdout.splitlines()
    kinds = sorted(json.loads(line)["kind"] for line in listed if json.loads(line).get("type") == "source")
    assert kinds == sorted(["cline.tasks"] * 4 + ["roo.tasks"] + ["continue.sessions"] * 2 + ["continue.dev_data"])
    before = _tree_digest(home)

    first = _activity(_scan(home, out))
    clients = {e["telltale"]["client"] for e in first}  # type: ignore[index]
    assert clients == {"cline", "roo", "continue"}
    calls = [e for e in first if e["event"]["action"] == "tool_call"]  # type: ignore[index]
    assert len(calls) == 3 + 4 + 2 + 2  # native Cline, XML Cline, Roo, Continue agent
    ids = [e["event"]["id"] for e in first]  # type: ignore[index]
    assert len(ids) == len(set(ids))
    # Detection fires on the canonical facets (curl | sh in a Cline task, ~/.ssh in Continue,
    # and the Roo task's file tool writing ~/.bashrc: the written_path facet, whatever the tool).
    detections = [e for e in first if e["event"]["dataset"] == "telltale.detection"]  # type: ignore[index]
    assert {e["telltale"]["client"] for e in detections} == {"cline", "continue", "roo"}  # type: ignore[index]
    assert {e["rule"]["id"] for e in detections if e["telltale"]["client"] == "roo"} == {  # type: ignore[index]
        "persistence.shell_profile"
    }

    assert _activity(_scan(home, out)) == []  # re-scan emits nothing
    assert _tree_digest(home) == before  # the stores are byte-identical (content, mtime, mode)

    # The task grows by one round; then a checkpoint restore shrinks it.
    task = home / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1760534080239"
    api = native_era_api()
    feedback = {"type": "text", "text": "<feedback>more</feedback>"}
    read = {"type": "tool_use", "id": "tooluse_c1", "name": "read_file",
            "input": {"path": "/home/dev/.aws/credentials"}}
    api.append({"role": "user", "ts": 1760534090000, "content": [feedback]})
    api.append({"role": "assistant", "ts": 1760534090010, "content": [read]})
    (task / "api_conversation_history.json").write_text(json.dumps(api), encoding="utf-8")
    grown = _activity(_scan(home, out))
    requested = [e for e in grown if e["event"]["action"] == "tool_call"]  # type: ignore[index]
    assert len(requested) == 1
    assert {str(e["event"]["id"]) for e in grown}.isdisjoint(ids)  # type: ignore[index]
    (task / "api_conversation_history.json").write_text(json.dumps(api[:3]), encoding="utf-8")
    shrunk = _scan(home, out)
    assert _activity(shrunk) == []
    reordered = [e for e in shrunk if e["event"]["action"] == "source_reordered"]  # type: ignore[index]
    assert len(reordered) == 1
    assert reordered[0]["telltale"]["health"]["vanished"] == 5  # type: ignore[index]
    assert str(task) not in json.dumps(reordered)  # path hash only
