"""The store walker: patterns, ordering, links, loops, odd names and failing filesystems."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import telltale.discovery.walk as walk
from telltale.discovery import DiscoveryOptions, DiscoveryResult, discover
from telltale.errors import DiscoveryError
from telltale.sources.registry import KINDS


def touch(base: Path, relative: str) -> Path:
    path = base.joinpath(*relative.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def run(home: Path, *clients: str, bounded: bool = False, budget: int = 100_000) -> DiscoveryResult:
    return discover(
        DiscoveryOptions(
            env={"HOME": str(home)}, platform="linux", clients=clients, bounded=bounded, budget=budget
        )
    )


def names(result: DiscoveryResult) -> list[str]:
    return [Path(s.path).name for s in result.sources]


def rel(result: DiscoveryResult, home: Path) -> list[str]:
    return [str(Path(s.path).relative_to(home)) for s in result.sources]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


# ---------------------------------------------------------------- patterns per kind


def test_REG_5_every_registered_kind_is_discoverable(home: Path) -> None:
    layout = {
        "codex.sessions": ".codex/sessions/2026/01/01/rollout-1.jsonl",
        "codex.archived_sessions": ".codex/archived_sessions/rollout-2.jsonl",
        "codex.headless_sessions": ".codex/headless/rollout-3.jsonl",
        "claude.projects": ".claude/projects/-home-u-app/11111111.jsonl",
        "qwen.projects": ".qwen/projects/hash/chats/q.jsonl",
        "openclaw.agents": ".openclaw/agents/main/sessions/o.jsonl",
        "openclaw.sqlite": ".openclaw/agents/main/agent/openclaw-agent.sqlite",
        "opencode.sqlite": ".local/share/opencode/opencode.db",
        "copilot.process_log": "github/app/logs/copilot/process-1-2.log",
        "copilot.session_state": ".copilot/session-state/abc/events.jsonl",
        "cursor.agent_transcripts": ".cursor/projects/Users-u-app/agent-transcripts/c1/c1.jsonl",
        "gemini.chats": ".gemini/tmp/proj/chats/session-2026-11-20T10-00-5f0e7c1a.jsonl",
        "gemini.legacy_chats": ".gemini/tmp/proj/chats/session-2025-09-01T08-00-2b7d9e41.json",
        "gemini.logs": ".gemini/tmp/proj/logs.json",
        "kilo.sqlite": ".local/share/kilo/kilo.db",
        "antigravity.history": ".gemini/antigravity-cli/history.jsonl",
        "antigravity.conversations": ".gemini/antigravity/conversations/c.db",
        "antigravity.encrypted": ".gemini/antigravity-cli/implicit/c.pb",
        "cursor.ide_global": ".config/Cursor/User/globalStorage/state.vscdb",
        "cursor.ide_workspace": ".config/Cursor/User/workspaceStorage/0123abcd/state.vscdb",
        "cursor.cli_chats": ".cursor/chats/0123abcd/c1/store.db",
        "cline.tasks": ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1/ui_messages.json",
        "roo.tasks": ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/2/ui_messages.json",
        "kilo.legacy_tasks": ".config/Code/User/globalStorage/kilocode.kilo-code/tasks/3/ui_messages.json",
        "continue.sessions": ".continue/sessions/s1.json",
        "continue.dev_data": ".continue/dev_data/0.2.0/tokensGenerated.jsonl",
        "aider.chat": "projects/app/.aider.chat.history.md",
        "crush.sqlite": "projects/app/.crush/crush.db",
        "goose.sqlite": ".local/share/goose/sessions/sessions.db",
        "goose.legacy": ".local/share/goose/sessions/20250101_1.jsonl",
        "windsurf.cascade": ".codeium/windsurf/cascade/c.pb",
        "trae.agent_db": ".config/Trae/ModularData/ai-agent/database.db",
        "zed.threads": ".local/share/zed/threads/threads.db",
        "amp.threads": ".local/share/amp/threads/T-1.json",
        "droid.sessions": ".factory/sessions/-home-u-app/s1.jsonl",
        "droid.settings": ".factory/sessions/-home-u-app/s1.settings.json",
        "kiro.cli": ".kiro/sessions/cli/k1.jsonl",
        "kiro.cli_sqlite": ".local/share/kiro-cli/data.sqlite3",
        "kiro.ide_sessions": ".config/Kiro/User/globalStorage/kiro.kiroagent/workspace-sessions/d3M/k2.json",
        "kiro.ide_chats": ".config/Kiro/User/globalStorage/kiro.kiroagent/0a1b/k3.chat",
        "kiro.ide_executions":
            ".config/Kiro/User/globalStorage/kiro.kiroagent/0a1b/414d1636299d2b9e4ce7e17fb11f63e9/e1",
    }
    assert set(layout) == set(KINDS)
    for path in layout.values():
        touch(home, path)
    result = run(home)
    assert {s.kind: str(Path(s.path).relative_to(home)) for s in result.sources} == layout


def test_CAND_3_zst_is_a_source_only_without_plain_twin(home: Path) -> None:
    base = ".codex/sessions/2026/01/01"
    touch(home, f"{base}/a.jsonl")
    touch(home, f"{base}/a.jsonl.zst")
    touch(home, f"{base}/b.jsonl.zst")
    touch(home, ".codex/sessions/2026/01/02/a.jsonl.zst")  # twin in another directory does not count
    assert rel(run(home, "codex.sessions"), home) == [
        f"{base}/a.jsonl",
        f"{base}/b.jsonl.zst",
        ".codex/sessions/2026/01/02/a.jsonl.zst",
    ]


def test_CAND_9_qwen_only_under_chats(home: Path) -> None:
    touch(home, ".qwen/projects/p/chats/a.jsonl")
    touch(home, ".qwen/projects/p/b.jsonl")
    touch(home, ".qwen/projects/p/chats/sub/c.jsonl")
    assert rel(run(home, "qwen"), home) == [".qwen/projects/p/chats/a.jsonl"]


def test_CAND_10_openclaw_rotated_included_trajectories_excluded(home: Path) -> None:
    base = ".openclaw/agents/main/sessions"
    for name in (
        "a.jsonl",
        "a.jsonl.reset.2026-01-01",
        "a.jsonl.deleted.2026-01-02",
        "a.jsonl.deleted",
        "a.trajectory.jsonl",
        "a.trajectory.jsonl.reset.1",
        "sessions.json",
    ):
        touch(home, f"{base}/{name}")
    touch(home, ".openclaw/agents/main/agent/openclaw-agent.sqlite")
    touch(home, ".openclaw/agents/main/openclaw-agent.sqlite")  # wrong parent
    result = run(home, "openclaw")
    assert [(s.kind, Path(s.path).name) for s in result.sources] == [
        ("openclaw.agents", "a.jsonl"),
        ("openclaw.agents", "a.jsonl.deleted"),
        ("openclaw.agents", "a.jsonl.deleted.2026-01-02"),
        ("openclaw.agents", "a.jsonl.reset.2026-01-01"),
        ("openclaw.sqlite", "openclaw-agent.sqlite"),
    ]
    # Both kinds share one watched directory.
    assert [(r.path, r.kinds) for r in result.store_roots] == [
        (str(home / ".openclaw/agents"), ("openclaw.agents", "openclaw.sqlite"))
    ]


def test_COP_session_state_layouts(home: Path) -> None:
    base = ".copilot/session-state"
    touch(home, f"{base}/s1/events.jsonl")  # current layout
    touch(home, f"{base}/0a1b.jsonl")  # older flat layout
    touch(home, f"{base}/s1/other.jsonl")
    touch(home, f"{base}/s1/checkpoints/events.jsonl")
    touch(home, f"{base}/s1/workspace.yaml")
    touch(home, f"{base}/s1/session.db")
    touch(home, ".copilot/session-store.db")
    touch(home, ".copilot/logs/process-1-2.log")
    assert rel(run(home, "copilot"), home) == [f"{base}/0a1b.jsonl", f"{base}/s1/events.jsonl"]


# ---------------------------------------------------------------- ordering


def test_REG_2_sorted_by_client_kind_path(home: Path) -> None:
    for path in (
        ".codex/sessions/b.jsonl",
        ".codex/sessions/a/z.jsonl",
        ".codex/archived_sessions/c.jsonl",
        ".claude/projects/p/y.jsonl",
        ".qwen/projects/p/chats/x.jsonl",
    ):
        touch(home, path)
    result = run(home)
    keys = [s.sort_key() for s in result.sources]
    assert keys == sorted(keys)
    assert [s.kind for s in result.sources] == [
        "claude.projects",
        "codex.archived_sessions",
        "codex.sessions",
        "codex.sessions",
        "qwen.projects",
    ]


def test_REG_2_order_independent_of_listing_order(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        touch(home, f".claude/projects/p{i % 3}/s{i:02d}.jsonl")
    (home / ".claude/projects/p0/link.jsonl").symlink_to(home / "missing")
    (home / ".claude/projects/p1/link.jsonl").symlink_to(home / "missing")
    first = run(home)
    real_scandir = os.scandir

    class Reversed:
        def __init__(self, path: str) -> None:
            with real_scandir(path) as it:
                self.entries = list(reversed(list(it)))

        def __enter__(self) -> Iterator[os.DirEntry[str]]:
            return iter(self.entries)

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(os, "scandir", Reversed)
    second = run(home)
    assert first == second
    assert [e.path for e in first.errors] == sorted(e.path for e in first.errors)


# ---------------------------------------------------------------- links and loops


def test_walk_symlinked_file_is_reported_not_followed(home: Path, tmp_path: Path) -> None:
    real = touch(tmp_path, "outside/real.jsonl")
    touch(home, ".claude/projects/p/ok.jsonl")
    (home / ".claude/projects/p/linked.jsonl").symlink_to(real)
    (home / ".claude/projects/p/dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (home / ".claude/projects/p/notes.txt").symlink_to(real)  # recursive store: reported too
    result = run(home, "claude")
    assert names(result) == ["ok.jsonl"]
    assert sorted(Path(e.path).name for e in result.errors if e.reason == "symlink") == [
        "dangling.jsonl",
        "linked.jsonl",
        "notes.txt",
    ]


def test_walk_symlinked_directory_is_not_entered(home: Path, tmp_path: Path) -> None:
    touch(tmp_path, "outside/p/s.jsonl")
    (home / ".claude/projects").mkdir(parents=True)
    (home / ".claude/projects/p").symlink_to(tmp_path / "outside/p", target_is_directory=True)
    result = run(home, "claude")
    assert result.sources == []
    assert [(e.reason, e.path) for e in result.errors] == [("symlink", str(home / ".claude/projects/p"))]


def test_walk_symlink_loop_terminates(home: Path) -> None:
    touch(home, ".codex/sessions/a/r.jsonl")
    (home / ".codex/sessions/a/loop").symlink_to(home / ".codex/sessions", target_is_directory=True)
    (home / ".codex/sessions/self").symlink_to(home / ".codex/sessions/self")  # ELOOP link
    result = run(home, "codex.sessions")
    assert names(result) == ["r.jsonl"]
    assert {e.reason for e in result.errors} == {"symlink"}


def test_walk_linked_store_root_is_followed(home: Path, tmp_path: Path) -> None:
    # A dotfile manager may link ~/.claude; the root named by the rules is reached through it.
    touch(tmp_path, "dotfiles/claude/projects/p/s.jsonl")
    (home / ".claude").symlink_to(tmp_path / "dotfiles/claude", target_is_directory=True)
    result = run(home, "claude")
    assert rel(result, home) == [".claude/projects/p/s.jsonl"]


def test_walk_bind_mount_loop_guard(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulate a bind mount: a subdirectory reporting the store root's own identity.
    touch(home, ".codex/sessions/a.jsonl")
    (home / ".codex/sessions/mnt").mkdir()
    root_stat = os.stat(home / ".codex/sessions")
    real_scandir = os.scandir

    class Entry:
        def __init__(self, inner: os.DirEntry[str]) -> None:
            self._inner = inner
            self.name = inner.name

        def is_symlink(self) -> bool:
            return self._inner.is_symlink()

        def is_dir(self, *, follow_symlinks: bool = True) -> bool:
            return self._inner.is_dir(follow_symlinks=follow_symlinks)

        def is_file(self, *, follow_symlinks: bool = True) -> bool:
            return self._inner.is_file(follow_symlinks=follow_symlinks)

        def stat(self, *, follow_symlinks: bool = True) -> Any:
            return root_stat if self.name == "mnt" else self._inner.stat(follow_symlinks=follow_symlinks)

    class Wrapped:
        def __init__(self, path: str) -> None:
            with real_scandir(path) as it:
                self.entries = [Entry(e) for e in it]

        def __enter__(self) -> Iterator[Entry]:
            return iter(self.entries)

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(os, "scandir", Wrapped)
    result = run(home, "codex.sessions")
    assert names(result) == ["a.jsonl"]
    assert [(e.reason, Path(e.path).name) for e in result.errors] == [("loop", "mnt")]


def test_walk_zero_identity_from_scandir_uses_lstat(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Windows' DirEntry.stat() reports st_ino/st_dev as 0: sibling directories must not
    # look like a loop, and sources must still carry their real identity.
    for name in ("a", "b", "c"):
        touch(home, f".claude/projects/{name}/s.jsonl")
    real_scandir = os.scandir

    class Entry:
        def __init__(self, inner: os.DirEntry[str]) -> None:
            self._inner = inner
            self.name = inner.name

        def is_symlink(self) -> bool:
            return self._inner.is_symlink()

        def is_dir(self, *, follow_symlinks: bool = True) -> bool:
            return self._inner.is_dir(follow_symlinks=follow_symlinks)

        def is_file(self, *, follow_symlinks: bool = True) -> bool:
            return self._inner.is_file(follow_symlinks=follow_symlinks)

        def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
            st_ = self._inner.stat(follow_symlinks=follow_symlinks)
            fields = list(st_)[:10]
            fields[1] = fields[2] = 0  # st_ino, st_dev
            return os.stat_result(fields)

    class Wrapped:
        def __init__(self, path: str) -> None:
            with real_scandir(path) as it:
                self.entries = [Entry(e) for e in it]

        def __enter__(self) -> Iterator[Entry]:
            return iter(self.entries)

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(os, "scandir", Wrapped)
    result = run(home, "claude")
    assert result.errors == []
    assert len(result.sources) == 3
    for source in result.sources:
        assert source.inode == os.lstat(source.path).st_ino != 0


def test_walk_too_deep_is_reported(home: Path) -> None:
    deep = home / ".claude/projects"
    for i in range(walk.MAX_WALK_DEPTH + 2):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "s.jsonl").touch()
    touch(home, ".claude/projects/ok.jsonl")
    result = run(home, "claude")
    assert names(result) == ["ok.jsonl"]
    assert [e.reason for e in result.errors] == ["too_deep"]


# ---------------------------------------------------------------- odd names and entries


def test_walk_non_utf8_names(home: Path) -> None:
    base = home / ".claude/projects"
    base.mkdir(parents=True)
    raw_dir = os.fsencode(base) + b"/proj-\xff"
    os.mkdir(raw_dir)
    with open(raw_dir + b"/sess-\xfe.jsonl", "wb"):
        pass
    result = run(home, "claude")
    assert len(result.sources) == 1
    path = result.sources[0].path
    assert os.fsencode(path) == raw_dir + b"/sess-\xfe.jsonl"
    assert os.path.exists(path)  # the surrogate-escaped string round-trips to the real file


def test_walk_fifo_candidate_is_not_regular(home: Path) -> None:
    base = home / ".claude/projects/p"
    base.mkdir(parents=True)
    os.mkfifo(base / "pipe.jsonl")
    result = run(home, "claude")
    assert result.sources == []
    assert [(e.reason, Path(e.path).name) for e in result.errors] == [("not_regular_file", "pipe.jsonl")]


def test_walk_store_root_that_is_a_file(home: Path) -> None:
    touch(home, ".claude/projects")
    result = run(home, "claude")
    assert result.sources == []
    assert [(e.reason, e.path) for e in result.errors] == [
        ("not_a_directory", str(home / ".claude/projects"))
    ]
    assert result.store_roots == []


def test_walk_missing_roots_are_silent(home: Path) -> None:
    result = run(home)
    assert result.sources == [] and result.errors == [] and result.store_roots == []


def test_walk_identity_recorded(home: Path) -> None:
    path = touch(home, ".claude/projects/p/s.jsonl")
    source = run(home, "claude").sources[0]
    st_ = os.stat(path)
    assert (source.device, source.inode) == (st_.st_dev, st_.st_ino)
    assert source.store_root == str(home / ".claude/projects")


def test_walk_listing_stats_give_the_scans_own_fingerprints(home: Path) -> None:
    """The scan's change check starts from the walk's ``lstat`` instead of one of its own:
    the same fingerprint, WAL included, as ``stat``ing the source then."""
    from telltale.pipeline import stat_fingerprint

    touch(home, ".claude/projects/p/s.jsonl").write_text('{"type":"user"}\n')
    db = touch(home, ".local/share/opencode/opencode.db")
    Path(f"{db}-wal").write_bytes(b"wal")
    result = run(home, "claude", "opencode")
    listed = [s for s in result.sources if s.path in result.stats]
    assert {Path(s.path).name for s in listed} >= {"s.jsonl"}
    for source in result.sources:
        assert stat_fingerprint(source, result.stats.get(source.path)) == stat_fingerprint(source)


def test_walk_hard_link_is_one_source(home: Path) -> None:
    a = touch(home, ".claude/projects/p/a.jsonl")
    os.link(a, home / ".claude/projects/p/b.jsonl")
    assert names(run(home, "claude")) == ["a.jsonl"]


def test_walk_discovery_never_reads_or_writes(home: Path) -> None:
    touch(home, ".claude/projects/p/s.jsonl")
    db = touch(home, ".local/share/opencode/opencode.db")
    db.chmod(0)  # unreadable content is fine: discovery is metadata only
    before = sorted((p, p.stat().st_mtime_ns) for p in home.rglob("*"))
    result = run(home)
    assert len(result.sources) == 2
    assert sorted((p, p.stat().st_mtime_ns) for p in home.rglob("*")) == before


# ---------------------------------------------------------------- failing filesystems


def test_walk_unreadable_directory_simulated(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    touch(home, ".claude/projects/a/ok.jsonl")
    touch(home, ".claude/projects/b/hidden.jsonl")
    blocked = str(home / ".claude/projects/b")
    real_scandir = os.scandir

    def scandir(path: str) -> Any:
        if path == blocked:
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = run(home, "claude")
    assert names(result) == ["ok.jsonl"]
    assert [(e.reason, e.path, e.detail) for e in result.errors] == [("unreadable", blocked, "EACCES")]
    with pytest.raises(DiscoveryError, match="unreadable"):
        run(home, "claude", bounded=True)


def test_walk_vanished_entries(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    touch(home, ".claude/projects/p/gone.jsonl")
    touch(home, ".claude/projects/p/stays.jsonl")
    (home / ".claude/projects/sub").mkdir()
    real_scandir = os.scandir

    class Entry:
        def __init__(self, inner: os.DirEntry[str]) -> None:
            self._inner = inner
            self.name = inner.name

        def is_symlink(self) -> bool:
            return self._inner.is_symlink()

        def is_dir(self, *, follow_symlinks: bool = True) -> bool:
            return self._inner.is_dir(follow_symlinks=follow_symlinks)

        def is_file(self, *, follow_symlinks: bool = True) -> bool:
            return self._inner.is_file(follow_symlinks=follow_symlinks)

        def stat(self, *, follow_symlinks: bool = True) -> Any:
            if self.name == "gone.jsonl":
                raise FileNotFoundError(2, "No such file")
            return self._inner.stat(follow_symlinks=follow_symlinks)

    def scandir(path: str) -> Any:
        if path.endswith("/sub"):
            raise FileNotFoundError(2, "No such file")

        class Wrapped:
            def __enter__(self) -> Iterator[Entry]:
                with real_scandir(path) as it:
                    return iter([Entry(e) for e in it])

            def __exit__(self, *exc: object) -> None:
                return None

        return Wrapped()

    monkeypatch.setattr(os, "scandir", scandir)
    result = run(home, "claude")
    assert names(result) == ["stays.jsonl"]
    assert sorted((e.reason, Path(e.path).name) for e in result.errors) == [
        ("vanished", "gone.jsonl"),
        ("vanished", "sub"),
    ]


NOBODY = 65534


def _discover_claude(base: Path) -> dict[str, Any]:
    r = discover(DiscoveryOptions(env={"HOME": str(base)}, platform="linux", clients=("claude",)))
    return {
        "sources": [s.path for s in r.sources],
        "errors": [[e.reason, e.path, e.detail] for e in r.errors],
    }


def _unreadable_check(base: Path) -> dict[str, Any]:
    """Discover over a tree holding a mode-000 directory, as an unprivileged user.

    Root ignores permission bits, so under root a forked child drops to ``nobody`` first
    (the interpreter may live below a directory ``nobody`` cannot enter, so no exec).
    """
    if os.geteuid() != 0:
        return _discover_claude(base)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write_fd, json.dumps(_discover_claude(base)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    result: dict[str, Any] = json.loads(data)
    return result


def test_walk_unreadable_directory_real_permissions() -> None:
    base = Path(tempfile.mkdtemp(prefix="telltale-perm-"))
    try:
        base.chmod(0o755)
        touch(base, ".claude/projects/a/ok.jsonl")
        touch(base, ".claude/projects/b/hidden.jsonl")
        for path in base.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        blocked = base / ".claude/projects/b"
        blocked.chmod(0)
        result = _unreadable_check(base)
        assert result["sources"] == [str(base / ".claude/projects/a/ok.jsonl")]
        assert result["errors"] == [["unreadable", str(blocked), "EACCES"]]
    finally:
        (base / ".claude/projects/b").chmod(0o755)
        shutil.rmtree(base)


# ---------------------------------------------------------------- bounded mode


def test_walk_bounded_budget_counts_entries(home: Path) -> None:
    for i in range(20):
        touch(home, f".claude/projects/p/s{i}.jsonl")
    # entries: projects/ lists "p" (1), p/ lists 20 files.
    assert len(run(home, "claude", bounded=True, budget=21).sources) == 20
    with pytest.raises(DiscoveryError) as info:
        run(home, "claude", bounded=True, budget=20)
    assert info.value.reason == "budget_exceeded"


def test_walk_bounded_raises_on_first_issue(home: Path) -> None:
    touch(home, ".claude/projects/p/ok.jsonl")
    (home / ".claude/projects/p/l.jsonl").symlink_to(home / "nowhere")
    with pytest.raises(DiscoveryError) as info:
        run(home, "claude", bounded=True)
    assert (info.value.reason, info.value.path) == ("symlink", str(home / ".claude/projects/p/l.jsonl"))


# ---------------------------------------------------------------- property: walker vs a reference

_NAMES = st.sampled_from(
    ["a.jsonl", "b.jsonl", "c.txt", "d.jsonl.zst", "a.jsonl.zst", "chats", "x", "é.jsonl"]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_NAMES, min_size=1, max_size=4), min_size=1, max_size=12))
def test_walk_matches_reference_enumeration(tmp_path: Path, paths: list[list[str]]) -> None:
    home = Path(tempfile.mkdtemp(dir=tmp_path))
    root = home / ".claude/projects"
    root.mkdir(parents=True)
    for parts in paths:
        target = root.joinpath(*parts)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.touch()
        except (FileExistsError, NotADirectoryError):
            continue  # a name used both as a file and a directory: keep the first
    expected = sorted(
        os.path.join(dirpath, name)
        for dirpath, _dirs, files in os.walk(root)
        for name in files
        if fnmatch.fnmatchcase(name, "*.jsonl")
    )
    named_dirs = sorted(
        os.path.join(dirpath, name)
        for dirpath, dirs, _files in os.walk(root)
        for name in dirs
        if fnmatch.fnmatchcase(name, "*.jsonl")
    )
    result = run(home, "claude")
    assert [s.path for s in result.sources] == expected
    # A directory named like a transcript is reported, and walked like any other.
    assert sorted(e.path for e in result.errors) == named_dirs
    assert {e.reason for e in result.errors} <= {"not_regular_file"}
    for source in result.sources:
        assert stat.S_ISREG(os.lstat(source.path).st_mode)


def test_directory_named_like_a_transcript_is_not_regular_file(tmp_path: Path) -> None:
    root = tmp_path / ".claude/projects/-p"
    (root / "x.jsonl").mkdir(parents=True)
    (root / "s.jsonl").write_text("{}\n")
    result = run(tmp_path, "claude")
    assert [Path(s.path).name for s in result.sources] == ["s.jsonl"]
    assert [(e.reason, Path(e.path).name) for e in result.errors] == [("not_regular_file", "x.jsonl")]
