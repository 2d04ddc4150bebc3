"""Kilo Code (OpenCode core): ``kilo.db`` discovered per platform and read by the OpenCode
adapter as client ``kilo``; incremental, read-only, ``auth.json`` never opened."""

from __future__ import annotations

import builtins
import io
import json
import ntpath
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import read_events, run_cli

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_opencode as fx

from telltale.discovery import DiscoveryOptions, discover
from telltale.model import Family
from telltale.sources.base import AcquireContext
from telltale.sources.kilo import KiloAdapter
from telltale.sources.opencode import OpenCodeAdapter
from telltale.sources.spec import RootType, Source

FIXTURES = Path(__file__).parent / "fixtures" / "session_stores"


def source(path: Path, kind: str = "kilo.sqlite", client: str = "kilo") -> Source:
    return Source(client=client, kind=kind, path=str(path), root_type=RootType.HOME, store_root=str(path.parent),
                  found_by="home")


def acquire(adapter: Any, src: Source, cursor: bytes | None = None) -> fx.Acquired:
    return fx.Acquired(list(adapter.acquire(src, cursor, AcquireContext())))


def test_kilo_db_read_by_the_opencode_adapter_as_kilo(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "kilo" / "kilo.db", "legacy")
    kilo = acquire(KiloAdapter(), source(db))
    oc = acquire(OpenCodeAdapter(), source(db, "opencode.sqlite", "opencode"))
    assert kilo.observations and len(kilo.observations) == len(oc.observations)
    assert {o.client for o in kilo.observations} == {"kilo"}
    assert {o.source_kind for o in kilo.observations} == {"kilo.sqlite"}
    assert {o.agent for o in kilo.observations} == {"kilo"}
    assert {o.provenance.source_kind for o in kilo.observations} == {"kilo.sqlite"}
    # Same native rows, another product: distinct ids, same shape otherwise.
    assert not {o.observation_id for o in kilo.observations} & {o.observation_id for o in oc.observations}
    assert [(o.family, o.stage, o.text, o.command) for o in kilo.observations] == [
        (o.family, o.stage, o.text, o.command) for o in oc.observations
    ]


def test_kilo_incremental_append_once(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "kilo" / "kilo.db", "empty_v1")
    conn = sqlite3.connect(db, isolation_level=None)
    fx.add_parts(conn, 3)
    conn.close()
    first = acquire(KiloAdapter(), source(db))
    again = acquire(KiloAdapter(), source(db), first.cursor)
    assert again.observations == []
    conn = sqlite3.connect(db, isolation_level=None)
    fx.add_parts(conn, 2, start=3, time_updated=fx.BASE_MS + 60_000)
    conn.close()
    third = acquire(KiloAdapter(), source(db), again.cursor or first.cursor)
    texts = [o.text for o in third.observations if o.family is Family.MESSAGE]
    assert texts == ["bulk part 3", "bulk part 4"]


def windows_mapper(base: Path) -> Callable[[str], str]:
    def host(path: str) -> str:
        drive, rest = ntpath.splitdrive(path)
        parts = [drive.rstrip(":")] + [p for p in rest.replace("/", "\\").split("\\") if p]
        return str(base.joinpath(*[p for p in parts if p]))

    return host


@pytest.mark.parametrize(
    ("platform", "env", "relative", "expected_found_by"),
    [
        ("linux", {}, ".local/share/kilo/kilo.db", "home"),
        ("linux", {"XDG_DATA_HOME": "{tmp}/xdg"}, "../xdg/kilo/kilo.db", "env:XDG_DATA_HOME"),
        ("darwin", {}, ".local/share/kilo/kilo.db", "home"),
        ("darwin", {}, "Library/Application Support/kilo/kilo.db", "home"),
    ],
)
def test_discovery_posix(tmp_path: Path, platform: str, env: dict[str, str], relative: str,
                         expected_found_by: str) -> None:
    home = tmp_path / "home"
    target = (home / relative).resolve()
    fx.build(target, "legacy")
    (target.parent / "auth.json").write_text("{}")
    full_env = {"HOME": str(home), **{k: v.format(tmp=tmp_path) for k, v in env.items()}}
    result = discover(DiscoveryOptions(env=full_env, platform=platform, clients=("kilo",)))
    assert [(s.kind, os.path.realpath(s.path), s.found_by) for s in result.sources] == [
        ("kilo.sqlite", str(target), expected_found_by)
    ]


def test_discovery_windows(tmp_path: Path) -> None:
    for relative in ("C/Users/me/.local/share/kilo", "C/Users/me/AppData/Local/kilo"):
        fx.build(tmp_path / relative / "kilo.db", "legacy")
    result = discover(DiscoveryOptions(env={"USERPROFILE": "C:\\Users\\me"}, platform="windows", clients=("kilo",),
                                       host_path=windows_mapper(tmp_path)))
    assert sorted(s.path for s in result.sources) == [
        "C:\\Users\\me\\.local\\share\\kilo\\kilo.db", "C:\\Users\\me\\AppData\\Local\\kilo\\kilo.db"
    ]


def test_fixture_tree_kilo() -> None:
    result = discover(DiscoveryOptions(root=str(FIXTURES), clients=("kilo",), env={}))
    assert [s.kind for s in result.sources] == ["kilo.sqlite"]
    got = acquire(KiloAdapter(), result.sources[0])
    assert got.observations
    assert {o.client for o in got.observations} == {"kilo"}


def test_scan_end_to_end_untouched_rescan_nothing_auth_never_opened(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    store = home / ".local" / "share" / "kilo"
    fx.build(store / "kilo.db", "legacy")
    (store / "auth.json").write_text(json.dumps({"provider": {"type": "api", "key": "placeholder"}}))
    before = fx.dir_state(store)
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    def spy_os(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    monkeypatch.setattr(os, "open", spy_os)
    from telltale.pipeline import Scanner, ScanOptions

    sources = discover(DiscoveryOptions(root=str(home), env={}, clients=("kilo",))).sources
    scanner = Scanner(ScanOptions(log_path=str(tmp_path / "o" / "e.jsonl"), state_path=str(tmp_path / "o" / "s.db")))
    try:
        result = scanner.scan(sources)
    finally:
        scanner.close()
        monkeypatch.undo()
    assert result.emitted_count > 3
    assert not any(p.endswith("auth.json") for p in opened)
    assert fx.dir_state(store) == before
    events = read_events(tmp_path / "o" / "e.jsonl")
    assert {e["telltale"]["client"] for e in events if e["event"]["dataset"] == "telltale.activity"} == {"kilo"}
    out = tmp_path / "cli"
    args = ["scan", "--once", "--root", str(home), "--client", "kilo", "--log-path", str(out / "e.jsonl"),
            "--state-path", str(out / "s.sqlite"), "--json"]
    assert json.loads(run_cli(args, home).stdout)["scanner_error_count"] == 0
    assert json.loads(run_cli(args, home).stdout)["emitted_count"] == 1
    assert fx.dir_state(store) == before
