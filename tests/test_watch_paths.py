"""The watch path filter: classification of native events by path name alone."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.discovery.api import StoreRoot
from telltale.watch.paths import ADDED, DELETED, MODIFIED, Action, Decision, PathFilter

CLAUDE = "/h/.claude/projects"
OPENCODE = "/h/.local/share/opencode"
OVERRIDE_DIR = "/data/custom"
OPENCLAW = "/h/.openclaw/agents"

KNOWN = {
    f"{CLAUDE}/-work-p/s1.jsonl": "claude.projects",
    f"{CLAUDE}/-work-p/s1/subagents/agent-1.jsonl": "claude.projects",
    f"{OPENCODE}/opencode.db": "opencode.sqlite",
    f"{OVERRIDE_DIR}/mydata": "opencode.sqlite",
    f"{OPENCLAW}/main/agent/openclaw-agent.sqlite": "openclaw.sqlite",
    f"{OPENCLAW}/main/sessions/s.jsonl": "openclaw.agents",
}

ROOTS = [
    StoreRoot(path=CLAUDE, recursive=True, kinds=("claude.projects",)),
    StoreRoot(path=OPENCODE, recursive=False, kinds=("opencode.sqlite",)),
    StoreRoot(path=OVERRIDE_DIR, recursive=False, kinds=("opencode.sqlite",), exact_files=("mydata",)),
    StoreRoot(path=OPENCLAW, recursive=True, kinds=("openclaw.agents", "openclaw.sqlite")),
]


@pytest.fixture
def flt() -> PathFilter:
    return PathFilter(ROOTS, KNOWN)


def targeted(path: str) -> Decision:
    return Decision(Action.TARGETED, path)


REDISCOVER = Decision(Action.REDISCOVER)
IGNORE = Decision(Action.IGNORE)


# -- WAL -> main (WATCH-3) --------------------------------------------------------------
@pytest.mark.parametrize("change", [ADDED, MODIFIED, DELETED])
def test_WATCH_3_wal_maps_to_its_main_database(flt: PathFilter, change: int) -> None:
    assert flt.classify(change, f"{OPENCODE}/opencode.db-wal") == targeted(f"{OPENCODE}/opencode.db")


def test_WATCH_3_wal_of_arbitrary_override_name_maps_to_that_file(flt: PathFilter) -> None:
    assert flt.classify(MODIFIED, f"{OVERRIDE_DIR}/mydata-wal") == targeted(f"{OVERRIDE_DIR}/mydata")
    assert flt.classify(MODIFIED, f"{OVERRIDE_DIR}/mydata") == targeted(f"{OVERRIDE_DIR}/mydata")


def test_WATCH_3_wal_of_a_database_not_known_yet_rediscovers() -> None:
    flt = PathFilter(ROOTS, {})  # the override file does not exist yet
    assert flt.classify(ADDED, f"{OVERRIDE_DIR}/mydata-wal") == REDISCOVER
    assert flt.classify(ADDED, f"{OVERRIDE_DIR}/mydata") == REDISCOVER
    assert flt.classify(ADDED, f"{OPENCODE}/opencode-beta.db-wal") == REDISCOVER


def test_WATCH_3_openclaw_sqlite_wal_in_recursive_root(flt: PathFilter) -> None:
    main = f"{OPENCLAW}/main/agent/openclaw-agent.sqlite"
    assert flt.classify(MODIFIED, main + "-wal") == targeted(main)
    assert flt.classify(MODIFIED, main + "-shm") == IGNORE


# -- SHM / journal (WATCH-4) ------------------------------------------------------------
@pytest.mark.parametrize(
    "path",
    [
        f"{OPENCODE}/opencode.db-shm",
        f"{OPENCODE}/opencode.db-journal",
        f"{OPENCODE}/opencode-beta.db-shm",  # a channel database not indexed yet
        f"{OVERRIDE_DIR}/mydata-shm",
        f"{OVERRIDE_DIR}/mydata-journal",
    ],
)
@pytest.mark.parametrize("change", [ADDED, MODIFIED, DELETED])
def test_WATCH_4_shm_and_journal_are_ignored(flt: PathFilter, path: str, change: int) -> None:
    assert flt.classify(change, path) == IGNORE


def test_WATCH_4_journal_suffix_on_a_non_database_is_not_swallowed(flt: PathFilter) -> None:
    # A Claude project directory for ~/my-journal is named "-home-me-my-journal".
    assert flt.classify(ADDED, f"{CLAUDE}/-home-me-my-journal") == REDISCOVER
    assert flt.classify(ADDED, f"{CLAUDE}/-home-me-my-journal/s.jsonl") == REDISCOVER


# -- override siblings (WATCH-6) and OpenCode non-recursion (WATCH-1) ---------------------
@pytest.mark.parametrize("name", ["notes.txt", "other.db", "other.db-wal", "opencode.db", "mydata2", "sub"])
@pytest.mark.parametrize("change", [ADDED, MODIFIED, DELETED])
def test_WATCH_6_unrelated_siblings_of_override_are_ignored(flt: PathFilter, name: str, change: int) -> None:
    assert flt.classify(change, f"{OVERRIDE_DIR}/{name}") == IGNORE


def test_WATCH_1_opencode_directory_events_below_it_are_ignored(flt: PathFilter) -> None:
    assert flt.classify(ADDED, f"{OPENCODE}/storage/session/x.json") == IGNORE
    assert flt.classify(ADDED, f"{OPENCODE}/log") == IGNORE  # a subdirectory: not a candidate
    assert flt.classify(MODIFIED, f"{OPENCODE}/auth.json") == IGNORE
    assert flt.classify(ADDED, f"{OPENCODE}/opencode-beta.db") == REDISCOVER  # a new channel database


def test_WATCH_7_other_roots_keep_their_coverage(flt: PathFilter) -> None:
    # The OpenCode filtering does not narrow Claude's or OpenClaw's recursive coverage.
    assert flt.classify(ADDED, f"{CLAUDE}/-work-q/deep/er/s.jsonl") == REDISCOVER
    assert flt.classify(MODIFIED, f"{OPENCLAW}/main/sessions/s.jsonl") == targeted(f"{OPENCLAW}/main/sessions/s.jsonl")


# -- targeted vs rediscovery --------------------------------------------------------------
def test_known_source_modified_is_targeted(flt: PathFilter) -> None:
    path = f"{CLAUDE}/-work-p/s1.jsonl"
    assert flt.classify(MODIFIED, path) == targeted(path)
    assert flt.classify(ADDED, path) == targeted(path)  # replaced by a rename over it
    sub = f"{CLAUDE}/-work-p/s1/subagents/agent-1.jsonl"
    assert flt.classify(MODIFIED, sub) == targeted(sub)


def test_new_or_removed_paths_rediscover(flt: PathFilter) -> None:
    assert flt.classify(DELETED, f"{CLAUDE}/-work-p/s1.jsonl") == REDISCOVER
    assert flt.classify(ADDED, f"{CLAUDE}/-work-p/s2.jsonl") == REDISCOVER
    assert flt.classify(MODIFIED, f"{CLAUDE}/-work-p/s2.jsonl") == REDISCOVER  # unknown but matching
    assert flt.classify(ADDED, f"{CLAUDE}/-work-new") == REDISCOVER  # maybe a directory
    assert flt.classify(DELETED, f"{CLAUDE}/-work-p") == REDISCOVER
    assert flt.classify(DELETED, CLAUDE) == REDISCOVER  # a store root itself


def test_irrelevant_changes_are_ignored(flt: PathFilter) -> None:
    assert flt.classify(MODIFIED, f"{CLAUDE}/-work-p/notes.txt") == IGNORE
    assert flt.classify(MODIFIED, "/elsewhere/s.jsonl") == IGNORE
    assert flt.classify(ADDED, "/h/.claude/settings.json") == IGNORE  # above the store root
    assert flt.classify(ADDED, f"{OPENCLAW}/main/sessions/s.trajectory.jsonl") == REDISCOVER  # new path, recursive
    assert flt.classify(MODIFIED, f"{OPENCLAW}/main/sessions/s.trajectory.jsonl") == IGNORE  # excluded pattern


def test_batch_targets_and_rediscovery(flt: PathFilter) -> None:
    paths, rediscover = flt.targets(
        [
            (MODIFIED, f"{OPENCODE}/opencode.db-wal"),
            (MODIFIED, f"{OPENCODE}/opencode.db-shm"),
            (MODIFIED, f"{CLAUDE}/-work-p/s1.jsonl"),
        ]
    )
    assert paths == {f"{OPENCODE}/opencode.db", f"{CLAUDE}/-work-p/s1.jsonl"}
    assert rediscover is False
    paths, rediscover = flt.targets([(MODIFIED, f"{OPENCODE}/opencode.db-shm")])
    assert paths == set() and rediscover is False
    _, rediscover = flt.targets([(ADDED, f"{CLAUDE}/-work-p/s9.jsonl")])
    assert rediscover is True


# -- WATCH-8: names only ------------------------------------------------------------------
def test_WATCH_8_classification_does_no_filesystem_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    flt = PathFilter(ROOTS, KNOWN)  # built before the file system is taken away

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("filesystem lookup during event filtering")

    for name in ("stat", "lstat", "scandir", "listdir", "readlink", "access", "open"):
        monkeypatch.setattr(os, name, boom)
    for name in ("exists", "isdir", "isfile", "islink", "realpath", "lexists"):
        monkeypatch.setattr(os.path, name, boom)
    assert flt.classify(MODIFIED, f"{OPENCODE}/opencode.db-wal") == targeted(f"{OPENCODE}/opencode.db")
    assert flt.classify(ADDED, f"{CLAUDE}/-work-z/s.jsonl") == REDISCOVER
    assert flt.classify(MODIFIED, f"{OVERRIDE_DIR}/junk") == IGNORE


name_chars = st.sampled_from([*"abc.-_/", "-wal", "-shm", "-journal", ".jsonl", ".db", "opencode", "mydata"])
names = st.lists(name_chars, min_size=0, max_size=12).map("".join)
bases = st.sampled_from([CLAUDE, OPENCODE, OVERRIDE_DIR, OPENCLAW, "/h", "/", ""])


@settings(max_examples=400, deadline=None)
@given(change=st.sampled_from([ADDED, MODIFIED, DELETED, 0, 99]), base=bases, tail=names)
def test_classify_property_total_and_conservative(change: int, base: str, tail: str) -> None:
    flt = PathFilter(ROOTS, KNOWN)
    path = f"{base}/{tail}" if tail else base
    decision = flt.classify(change, path)
    assert isinstance(decision.action, Action)
    if decision.action is Action.TARGETED:
        # Only ever a known source, never a sidecar or an unknown name.
        assert decision.path in KNOWN
    if tail.endswith(("-shm", "-journal")) and path[: path.rindex("-")] in KNOWN:
        assert decision == IGNORE
