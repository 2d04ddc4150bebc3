"""Cursor agent transcripts: JSONL and plain-text generations, ids, times, facets, bounds."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scan_helpers import read_events, run_cli
from telltale.discovery import DiscoveryOptions, discover
from telltale.model import Family, Observation, Quarantine, Stage
from telltale.normalize.stage import normalize_observation
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.cursor.transcripts import CursorTranscriptAdapter, prompt_time
from telltale.sources.spec import RootType, Source
from test_discovery_roots import windows_mapper

CHAT = "8f79ec24-dbb2-44fe-945e-04fdbabe3f4f"
SUB = "01c33457-5f77-40e4-8c97-55f1bed331f7"
SLUG = "Users-dev-work-app"


def _root(home: Path) -> Path:
    return home / ".cursor" / "projects"


def _source(home: Path, path: Path) -> Source:
    return Source(client="cursor", kind="cursor.agent_transcripts", path=str(path), root_type=RootType.HOME,
                  store_root=str(_root(home)), found_by="home")


def _write(path: Path, records: list[dict[str, Any]] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(records, str):
        path.write_text(records, encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _run(source: Source, cursor: bytes | None = None, ctx: AcquireContext | None = None) -> list[Batch]:
    return list(CursorTranscriptAdapter().acquire(source, cursor, ctx or AcquireContext(now=time.time())))


def _obs(batches: list[Batch]) -> list[Observation]:
    return [o for b in batches for o in b.observations]


def _quarantined(batches: list[Batch]) -> list[Quarantine]:
    return [q for b in batches for q in b.quarantined]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "message": {"content": [{"type": "text", "text": text}]}}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "message": {"content": list(blocks)}}


def tool(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": args}


PROMPT = "<timestamp>Tuesday, Sep 1, 2026, 1:20 PM (UTC+8)</timestamp>\n<user_query>\nfix the build\n</user_query>"
CHAT_RECORDS = [
    user(PROMPT),
    assistant({"type": "text", "text": "Looking.\n\n[REDACTED]"},
              tool("Shell", command="make test", working_directory="/w"),
              tool("Read", path="/home/dev/.aws/credentials"),
              tool("Glob", glob_pattern="**/*.py", target_directory="/w"),
              tool("WebFetch", url="https://example.invalid/x"),
              tool("StrReplace", path="/w/a.py", old_string="a", new_string="b"),
              tool("UpdateCurrentStep", current_step="x")),
    {"type": "turn_ended", "status": "success"},
    user("no timestamp here"),
    assistant({"type": "text", "text": "[REDACTED]"}),
]


def test_jsonl_chat_maps_messages_tools_facets_and_times(tmp_path: Path) -> None:
    path = _write(_root(tmp_path) / SLUG / "agent-transcripts" / CHAT / f"{CHAT}.jsonl", CHAT_RECORDS)
    batches = _run(_source(tmp_path, path))
    obs = _obs(batches)
    assert _quarantined(batches) == []
    assert sum(b.records_read for b in batches) == 5
    assert sum(b.other_records for b in batches) == 1
    session = [o for o in obs if o.family is Family.SESSION]
    assert len(session) == 1 and session[0].session_id == CHAT
    assert session[0].attributes["coverage_tool_results"] == "absent"
    assert session[0].attributes["project_slug"] == SLUG
    assert session[0].occurred_at == "2026-09-01T05:20:00.000Z"
    users = [o for o in obs if o.role == "user"]
    assert [u.text for u in users] == ["fix the build", "no timestamp here"]
    assert users[0].occurred_at == "2026-09-01T05:20:00.000Z" and not users[0].injected
    assert users[1].occurred_at is None  # no source time: observed, never the file's mtime
    texts = [o.text for o in obs if o.role == "assistant"]
    assert texts == ["Looking."]  # the [REDACTED] reasoning placeholder is dropped
    calls = [o for o in obs if o.family is Family.TOOL]
    assert all(c.stage is Stage.REQUESTED and c.call_id is None for c in calls)
    by_tool = {c.tool_name: c for c in calls}
    assert by_tool["Shell"].command == "make test"
    assert by_tool["Read"].file_path == "/home/dev/.aws/credentials"
    assert by_tool["Glob"].file_path == "/w"
    assert by_tool["WebFetch"].url == "https://example.invalid/x"
    assert by_tool["StrReplace"].file_path == "/w/a.py"
    assert (by_tool["StrReplace"].file_access, by_tool["Read"].file_access) == ("write", "read")
    assert by_tool["UpdateCurrentStep"].file_access is None
    # The normalisation stage turns the facet into the path fields rules match on.
    assert normalize_observation(by_tool["StrReplace"]).written_paths == "/w/a.py"
    assert normalize_observation(by_tool["Read"]).read_paths == "/home/dev/.aws/credentials"
    assert by_tool["Shell"].occurred_at is None
    assert by_tool["Shell"].attributes == {"turn_started_at": "2026-09-01T05:20:00.000Z"}
    assert all(o.provenance.line is not None for o in obs)
    # Deterministic ids from (file, line): a second read gives the same ids.
    assert [o.observation_id for o in _obs(_run(_source(tmp_path, path)))] == [o.observation_id for o in obs]


def test_subagent_links_parent_and_marks_prompt_injected(tmp_path: Path) -> None:
    path = _write(_root(tmp_path) / SLUG / "agent-transcripts" / CHAT / "subagents" / f"{SUB}.jsonl", CHAT_RECORDS[:2])
    obs = _obs(_run(_source(tmp_path, path)))
    assert {o.session_id for o in obs} == {SUB}
    assert {o.parent_session_id for o in obs} == {CHAT}
    assert [o.injected for o in obs if o.role == "user"] == [True]


def test_bad_lines_are_quarantined_by_line_and_the_rest_kept(tmp_path: Path) -> None:
    big = "x" * 70_000
    lines = [json.dumps(user("hello")), "{not json", json.dumps({"role": "system", "what": 1}),
             json.dumps(assistant({"type": "image", "data": "…"}, {"type": "text", "text": "ok"})),
             json.dumps(assistant(tool("Write", path="/w/f", contents=big))),
             json.dumps(assistant(tool("Shell", command="ls")))]
    path = _write(_root(tmp_path) / SLUG / "agent-transcripts" / CHAT / f"{CHAT}.jsonl", "\n".join(lines) + "\n")
    batches = _run(_source(tmp_path, path))
    reasons = sorted((q.line, q.reason) for q in _quarantined(batches))
    assert reasons == [(2, "malformed_json"), (3, "unknown_record_type"), (4, "unknown_content_block"),
                       (5, "unbounded_value")]
    obs = _obs(batches)
    assert [o.text for o in obs if o.family is Family.MESSAGE] == ["hello", "ok"]
    assert [o.command for o in obs if o.family is Family.TOOL] == ["ls"]
    assert all(q.session_id == CHAT for q in _quarantined(batches))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<timestamp>Tuesday, May 12, 2026, 10:20 PM (UTC+8)</timestamp>", "2026-05-12T14:20:00.000Z"),
        ("<timestamp>Monday, Jan 5, 2026, 12:05 AM (UTC-5:30)</timestamp>", "2026-01-05T05:35:00.000Z"),
        ("<timestamp>Sunday, December 31, 2028, 11:59 PM (UTC)</timestamp>", "2028-12-31T23:59:00.000Z"),
        ("<timestamp>Sep 31, 2026, 1:20 PM (UTC+8)</timestamp>", None),  # no such day
        ("<timestamp>Foo 1, 2026, 1:20 PM (UTC+8)</timestamp>", None),
        ("<timestamp>Sep 1, 2026, 13:20 PM (UTC+8)</timestamp>", None),
        ("no block", None),
    ],
)
def test_prompt_time(text: str, expected: str | None) -> None:
    assert prompt_time(text) == expected


TEXT_TRANSCRIPT = """user:
<timestamp>Tuesday, May 12, 2026, 10:20 PM (UTC+8)</timestamp>
<user_query>
list files
</user_query>

assistant:
[Thinking] pondering
  deeply
Let me look.
[Tool call] Shell
  command=ls -la ~/.ssh
  description=list
[Tool result] Shell
  id_rsa
  known_hosts
Done.
user:
thanks
"""


def test_plain_text_transcript_blocks_calls_results(tmp_path: Path) -> None:
    path = _write(_root(tmp_path) / SLUG / "agent-transcripts" / f"{CHAT}.txt", TEXT_TRANSCRIPT)
    old = time.time() - 3600
    os.utime(path, (old, old))
    batches = _run(_source(tmp_path, path))
    obs = _obs(batches)
    assert _quarantined(batches) == []
    assert [o.text for o in obs if o.family is Family.MESSAGE] == ["list files", "Let me look.\nDone.", "thanks"]
    call = next(o for o in obs if o.stage is Stage.REQUESTED)
    assert call.tool_name == "Shell" and call.command == "ls -la ~/.ssh"
    result = next(o for o in obs if o.stage is Stage.RESULT)
    assert result.tool_name == "Shell" and result.result == "id_rsa\nknown_hosts"
    session = next(o for o in obs if o.family is Family.SESSION)
    assert "coverage_tool_results" not in session.attributes
    assert not any(b.revisit for b in batches)


def test_plain_text_last_block_held_while_the_file_is_fresh(tmp_path: Path) -> None:
    path = _write(_root(tmp_path) / SLUG / "agent-transcripts" / f"{CHAT}.txt", TEXT_TRANSCRIPT)
    source = _source(tmp_path, path)
    first = _run(source)
    assert first[-1].revisit and first[-1].partial
    assert "thanks" not in [o.text for o in _obs(first)]
    # Later (file settled), the held block is mapped, once, with the id a single read gives.
    later = AcquireContext(now=time.time() + 3600)
    second = _run(source, first[-1].cursor, later)
    assert [o.text for o in _obs(second)] == ["thanks"]
    assert not second[-1].revisit
    whole = _obs(_run(source, None, later))
    assert sorted(o.observation_id for o in _obs(first) + _obs(second)) == sorted(o.observation_id for o in whole)
    assert _obs(_run(source, second[-1].cursor, later)) == []


# -- split-append property -----------------------------------------------------------------

block_kinds = st.sampled_from(["text", "shell", "read", "write", "redacted"])
texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30)
responses = st.lists(st.lists(st.tuples(block_kinds, texts), min_size=1, max_size=4), min_size=1, max_size=3)
turns = st.lists(st.tuples(texts, st.booleans(), responses), min_size=1, max_size=4)


def _transcript(turn_list: list[tuple[str, bool, list[list[tuple[str, str]]]]]) -> bytes:
    records: list[dict[str, Any]] = []
    for n, (prompt, dated, responses) in enumerate(turn_list):
        stamp = f"<timestamp>Monday, Mar {n + 1}, 2026, 9:0{n % 10} AM (UTC+2)</timestamp>\n" if dated else ""
        records.append(user(f"{stamp}<user_query>{prompt}</user_query>"))
        for blocks in responses:
            content: list[dict[str, Any]] = []
            for kind, value in blocks:
                if kind == "text":
                    content.append({"type": "text", "text": value})
                elif kind == "redacted":
                    content.append({"type": "text", "text": "[REDACTED]"})
                elif kind == "shell":
                    content.append(tool("Shell", command=value))
                elif kind == "read":
                    content.append(tool("Read", path=value))
                else:
                    content.append(tool("Write", path="/w/f", contents=value))
            records.append(assistant(*content))
        records.append({"type": "turn_ended", "status": "success"})
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def _key(o: Observation) -> tuple[Any, ...]:
    return (o.observation_id, o.family, o.role, o.text, o.tool_name, o.command, o.file_path, o.occurred_at,
            tuple(sorted(o.attributes.items())), o.provenance)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turn_list=turns, cuts=st.lists(st.floats(min_value=0, max_value=1), max_size=6))
def test_split_append_equals_one_read(tmp_path_factory: pytest.TempPathFactory,
                                      turn_list: list[tuple[str, bool, list[list[tuple[str, str]]]]],
                                      cuts: list[float]) -> None:
    home = tmp_path_factory.mktemp("home")
    data = _transcript(turn_list)
    path = _root(home) / SLUG / "agent-transcripts" / CHAT / f"{CHAT}.jsonl"
    path.parent.mkdir(parents=True)
    source = _source(home, path)
    points = sorted({int(c * len(data)) for c in cuts} | {len(data)})
    cursor: bytes | None = None
    pieces: list[Observation] = []
    written = 0
    with path.open("wb") as fh:
        for point in points:
            fh.write(data[written:point])
            fh.flush()
            written = point
            for batch in _run(source, cursor):
                pieces.extend(batch.observations)
                assert batch.quarantined == []
                if batch.cursor is not None:
                    cursor = batch.cursor
    whole = _obs(_run(source, None, AcquireContext(history=HistoryMode.ALL)))
    assert sorted(map(_key, pieces)) == sorted(map(_key, whole))
    assert len({o.observation_id for o in whole}) == len(whole)


# -- discovery ------------------------------------------------------------------------------


def test_discovery_finds_each_generation_and_nothing_else(tmp_path: Path) -> None:
    root = _root(tmp_path)
    wanted = [
        root / SLUG / "agent-transcripts" / CHAT / f"{CHAT}.jsonl",
        root / SLUG / "agent-transcripts" / CHAT / "subagents" / f"{SUB}.jsonl",
        root / SLUG / "agent-transcripts" / "old.txt",
        root / SLUG / "agent-transcripts" / "old2.jsonl",
    ]
    noise = [
        root / SLUG / "terminals" / "1.txt",
        root / SLUG / "agent-tools" / "x.txt",
        root / SLUG / "agent-transcripts" / CHAT / "other.jsonl",
        root / SLUG / "agent-transcripts" / CHAT / "subagents" / "deeper" / "x.jsonl",
        root / "loose.jsonl",
    ]
    for p in wanted + noise:
        _write(p, "")
    found = discover(DiscoveryOptions(root=str(tmp_path), clients=("cursor",), env={})).sources
    assert sorted(s.path for s in found if s.kind == "cursor.agent_transcripts") == sorted(map(str, wanted))


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_discovery_home_per_platform(tmp_path: Path, platform: str) -> None:
    path = _write(_root(tmp_path) / SLUG / "agent-transcripts" / CHAT / f"{CHAT}.jsonl", "")
    found = discover(DiscoveryOptions(root=".", clients=("cursor.agent_transcripts",), env={"HOME": str(tmp_path)},
                                      platform=platform)).sources
    assert [s.path for s in found] == [str(path)]


def test_discovery_windows_userprofile(tmp_path: Path) -> None:
    _write(tmp_path / "C" / "Users" / "me" / ".cursor" / "projects" / SLUG / "agent-transcripts" / CHAT
           / f"{CHAT}.jsonl", "")
    found = discover(DiscoveryOptions(root=".", clients=("cursor",), env={"USERPROFILE": "C:\\Users\\me"},
                                      platform="windows", host_path=windows_mapper(tmp_path))).sources
    assert [s.path for s in found] == [
        f"C:\\Users\\me\\.cursor\\projects\\{SLUG}\\agent-transcripts\\{CHAT}\\{CHAT}.jsonl"]


# -- end to end -------------------------------------------------------------------------------


def test_cli_scan_rescan_append_and_detection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = _write(_root(home) / SLUG / "agent-transcripts" / CHAT / f"{CHAT}.jsonl", CHAT_RECORDS[:3])
    before = path.read_bytes()
    log, state = tmp_path / "out" / "e.jsonl", tmp_path / "out" / "s.sqlite"
    args = ["scan", "--root", str(home), "--log-path", str(log), "--state-path", str(state)]
    run_cli(args, tmp_path)
    first = read_events(log)
    activity = [e for e in first if e["event"]["dataset"] == "telltale.activity"]
    assert len(activity) == 9  # session, prompt, text, six tool calls
    rules = {e["rule"]["id"] for e in first if e["event"]["dataset"] == "telltale.detection"}
    assert any(r.startswith("credential") for r in rules), rules
    run_cli(args, tmp_path)
    again = read_events(log)
    assert [e for e in again if e["event"]["dataset"] in ("telltale.activity", "telltale.detection")] == [
        e for e in first if e["event"]["dataset"] in ("telltale.activity", "telltale.detection")]
    with path.open("a") as fh:
        fh.write(json.dumps(CHAT_RECORDS[3]) + "\n")
    run_cli(args, tmp_path)
    ids = [e["event"]["id"] for e in read_events(log) if e["event"]["dataset"] == "telltale.activity"]
    assert len(ids) == 10 and len(set(ids)) == 10
    assert path.read_bytes()[: len(before)] == before


FIXTURES = Path(__file__).parent / "fixtures" / "session_stores"


def test_fixture_tree_every_generation(tmp_path: Path) -> None:
    found = discover(DiscoveryOptions(root=str(FIXTURES), clients=("cursor.agent_transcripts",), env={}))
    assert found.fixture_tree and len(found.sources) == 3
    later = AcquireContext(now=time.time() + 3600)  # the checked-out .txt looks fresh; it is not
    counts: dict[str, tuple[int, int, int, int]] = {}
    for source in found.sources:
        batches = _run(source, None, later)
        obs = _obs(batches)
        assert _quarantined(batches) == []
        counts[Path(source.path).name] = (
            sum(o.family is Family.MESSAGE for o in obs),
            sum(o.stage is Stage.REQUESTED for o in obs),
            sum(o.stage is Stage.RESULT for o in obs),
            sum(o.occurred_at is not None for o in obs),
        )
    assert counts == {
        "0b8e4c1a-2f6d-4c3e-9a51-7d2e8f4b6c10.jsonl": (4, 8, 0, 3),
        "5c9a1e77-3b2d-4f80-8e6a-1d4c7b9e2a03.jsonl": (2, 1, 0, 2),
        "3f1d2c4b-0a9e-4b7c-8d6f-5e4a3b2c1d0e.txt": (4, 1, 1, 0),
    }


def test_pipeline_rereads_a_held_plain_text_transcript_until_it_settles(tmp_path: Path) -> None:
    """``Batch.revisit``: an unchanged source whose adapter holds a block is not skipped."""
    from telltale.pipeline import Scanner, ScanOptions

    home = tmp_path / "home"
    path = _write(_root(home) / SLUG / "agent-transcripts" / f"{CHAT}.txt", TEXT_TRANSCRIPT)
    sources = discover(DiscoveryOptions(root=str(home), env={})).sources
    options = ScanOptions(log_path=str(tmp_path / "e.jsonl"), state_path=str(tmp_path / "s.sqlite"), content="full")

    def scan() -> tuple[str, list[str]]:
        scanner = Scanner(options)
        try:
            report = scanner.scan(sources).sources[0]
        finally:
            scanner.close()
        texts = [e["telltale"].get("message", {}).get("text", "") for e in read_events(tmp_path / "e.jsonl")
                 if e["event"]["dataset"] == "telltale.activity"]
        return report.status, texts

    status, texts = scan()
    assert status == "partial" and "thanks" not in " ".join(texts)
    status, _ = scan()
    assert status != "unchanged"  # read again although size and mtime did not move
    old = time.time() - 3600
    os.utime(path, (old, old))
    _, texts = scan()
    assert texts.count("thanks") == 1
    status, again = scan()
    assert status == "unchanged" and again == texts
