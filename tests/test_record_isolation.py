"""Per-record fault isolation in every adapter (issue 15, item 6).

One hostile record — JSON nested ~1,000 deep, a number outside float range, a 400-digit
integer, a duplicated key, invalid UTF-8 in a key, a trailing comma, a line that is not an
object — costs that record only: every adapter keeps every other record's events and
quarantines the bad one by coordinate. A lone surrogate escape is repaired (U+FFFD) and the
record kept; a UTF-8 BOM on the first line is dropped. The fuzzer of
``bench/fuzz_records.py`` runs here on a small budget (``TELLTALE_FUZZ_LINES`` raises it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scan_helpers import read_events, run_cli, write_claude_session
from telltale.discovery import DiscoveryOptions, discover
from telltale.readers.records import (
    NESTING_TOO_DEEP,
    NestingTooDeep,
    decode_guarded,
    failure_reason,
    repair_surrogates,
)
from telltale.sources.base import AcquireContext
from telltale.sources.registry import adapter_for
from telltale.sources.spec import Source

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "session_stores"


def _fuzz_module() -> Any:
    spec = importlib.util.spec_from_file_location("fuzz_records", REPO / "bench" / "fuzz_records.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_records"] = module
    spec.loader.exec_module(module)
    return module


def _jsonl_sources(root: Path) -> list[Source]:
    """One JSONL source per kind (its largest fixture file)."""
    shutil.copytree(FIXTURES, root)
    found = discover(DiscoveryOptions(root=str(root), env={})).sources
    best: dict[str, Source] = {}
    for source in found:
        if not source.path.endswith(".jsonl"):
            continue
        if source.kind not in best or os.path.getsize(source.path) > os.path.getsize(best[source.kind].path):
            best[source.kind] = source
    return list(best.values())


def _acquire(source: Source) -> tuple[list[Any], list[Any]]:
    observations: list[Any] = []
    quarantined: list[Any] = []
    for batch in adapter_for(source.kind).acquire(source, None, AcquireContext()):
        observations += batch.observations
        quarantined += batch.quarantined
    return observations, quarantined


@pytest.fixture(scope="module")
def jsonl_sources(tmp_path_factory: pytest.TempPathFactory) -> list[Source]:
    return _jsonl_sources(tmp_path_factory.mktemp("stores") / "tree")


_DEEP = b'{"a":' * 1000 + b"1" + b"}" * 1000

#: A hostile line, appended after a source's last line, and the reasons it may carry.
HOSTILE: dict[str, tuple[bytes, frozenset[str]]] = {
    "deep_object": (_DEEP, frozenset({NESTING_TOO_DEEP})),
    "deep_value": (b'{"type":"user","x":' + b"[" * 1000 + b"]" * 1000 + b"}", frozenset({NESTING_TOO_DEEP})),
    "deep_array": (b"[" * 3000, frozenset({NESTING_TOO_DEEP, "schema_mismatch", "unknown_record_type"})),
    "float_range": (b'{"type":1e999,"timestamp":1e999}', frozenset({"number_out_of_range"})),
    "big_integer": (b'{"type":' + b"9" * 400 + b"}",
                    frozenset({"schema_mismatch", "unknown_record_type", "number_out_of_range"})),
    "huge_integer": (b'{"type":' + b"9" * 5000 + b"}", frozenset({"number_out_of_range"})),
    "trailing_comma": (b'{"type":"user",}', frozenset({"malformed_json"})),
    "array_trailing_comma": (b"[1,2,]", frozenset({"schema_mismatch", "unknown_record_type", "malformed_json"})),
    "invalid_utf8_key": (b'{"type":"x","k\xff":1}', frozenset({"invalid_utf8", "unknown_record_type"})),
    "not_an_object": (b'"just a string"', frozenset({"schema_mismatch", "unknown_record_type"})),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_line_is_quarantined_by_itself_in_every_jsonl_adapter(
    jsonl_sources: list[Source], case: str
) -> None:
    line, reasons = HOSTILE[case]
    assert {s.kind for s in jsonl_sources} >= {
        "claude.projects", "codex.sessions", "qwen.projects", "openclaw.agents", "copilot.session_state"
    }
    for source in jsonl_sources:
        path = Path(source.path)
        clean = path.read_bytes()
        if not clean.endswith(b"\n"):
            clean += b"\n"  # a held partial last line is complete now (in both runs)
            path.write_bytes(clean)
        before, q_before = _acquire(source)
        lines = clean.count(b"\n")
        try:
            path.write_bytes(clean + line + b"\n")
            after, q_after = _acquire(source)
        finally:
            path.write_bytes(clean)
        assert {o.observation_id for o in before} <= {o.observation_id for o in after}, source.kind
        new = [q for q in q_after if (q.line or 0) > lines]
        assert len(q_after) == len(q_before) + 1, (source.kind, case, q_after[len(q_before):])
        assert [q.line for q in new] == [lines + 1], source.kind
        # A tagged decoder may stop at the unknown tag before it reaches the bad value, and
        # a decoder that skips the unknown key finds a record without its required fields.
        allowed = reasons if case == "deep_object" else reasons | {"unknown_record_type", "schema_mismatch"}
        assert new[0].reason in allowed, (source.kind, case, new[0].reason)


def test_a_bom_on_the_first_line_is_dropped_in_every_jsonl_adapter(jsonl_sources: list[Source]) -> None:
    for source in jsonl_sources:
        path = Path(source.path)
        clean = path.read_bytes()
        before, q_before = _acquire(source)
        try:
            path.write_bytes(b"\xef\xbb\xbf" + clean)
            after, q_after = _acquire(source)
        finally:
            path.write_bytes(clean)
        # Same events of the same lines (ids may name byte offsets, which the BOM moves).
        assert [_what(o) for o in after] == [_what(o) for o in before], source.kind
        assert [(q.reason, q.line) for q in q_after] == [(q.reason, q.line) for q in q_before], source.kind
        # Offsets still count the BOM's three bytes (the cursor resumes at the right byte).
        for old, new in zip(before, after, strict=True):
            if old.provenance.offset:
                assert new.provenance.offset == old.provenance.offset + 3


def _what(obs: Any) -> tuple[Any, ...]:
    return (obs.provenance.line, obs.family, obs.stage, obs.call_id, obs.text, obs.session_id)


def _claude_line(text: str) -> bytes:
    return json.dumps({"type": "user", "uuid": "u-1", "sessionId": "s-1", "timestamp": "2026-01-01T00:00:00Z",
                       "message": {"role": "user", "content": text}}).encode()


def _codex_lines(text: str) -> bytes:
    meta = {"timestamp": "t", "type": "session_meta", "payload": {"id": "s-1", "cwd": "/w"}}
    item = {"timestamp": "t", "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}
    return json.dumps(meta).encode() + b"\n" + json.dumps(item).encode()


@pytest.mark.parametrize(("kind", "name", "build"), [
    ("claude.projects", ".claude/projects/-w/s-1.jsonl", _claude_line),
    ("codex.sessions", ".codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-s.jsonl", _codex_lines),
])
def test_a_lone_surrogate_is_replaced_and_the_record_kept(tmp_path: Path, kind: str, name: str, build: Any) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True)
    # JSON.stringify writes a lone surrogate as an escape; the marker is swapped for it.
    path.write_bytes(build("before MARK after").replace(b"MARK", b"\\ud800") + b"\n")
    (source,) = discover(DiscoveryOptions(root=str(tmp_path), env={})).sources
    observations, quarantined = _acquire(source)
    assert quarantined == []
    texts = [o.text for o in observations if o.text]
    assert texts == ["before \ufffd after"]


# -- the guards themselves -------------------------------------------------------------------


def test_repair_surrogates_keeps_pairs_and_escaped_backslashes() -> None:
    assert repair_surrogates(b'{"a":"x"}') is None
    assert repair_surrogates(b'"\\ud83d\\ude00"') is None  # a valid pair
    assert repair_surrogates(b'"\\\\ud800"') is None  # an escaped backslash, then text
    assert repair_surrogates(b'"\\ud800"') == b'"\\ufffd"'
    assert repair_surrogates(b'"\\udc00\\ud800x\\ud83d\\ude00"') == b'"\\ufffd\\ufffdx\\ud83d\\ude00"'
    assert repair_surrogates(b'"\\\\\\ud800"') == b'"\\\\\\ufffd"'
    assert repair_surrogates(msgspec.Raw(b'"\\uDBFF"')) == b'"\\ufffd"'


_UNITS = st.lists(st.one_of(st.integers(0xD800, 0xDFFF), st.integers(0x20, 0x7E), st.integers(0x80, 0xD7FF)),
                  max_size=12)


@settings(max_examples=300, deadline=None)
@given(_UNITS)
def test_repaired_text_decodes_to_the_string_with_each_lone_surrogate_replaced(units: list[int]) -> None:
    data = b'"' + b"".join(b"\\u%04x" % u for u in units) + b'"'
    decoded = decode_guarded(msgspec.json.decode, data)
    expected: list[str] = []
    i = 0
    while i < len(units):
        u = units[i]
        if 0xD800 <= u <= 0xDBFF and i + 1 < len(units) and 0xDC00 <= units[i + 1] <= 0xDFFF:
            expected.append(chr(0x10000 + ((u - 0xD800) << 10) + (units[i + 1] - 0xDC00)))
            i += 2
            continue
        expected.append("\ufffd" if 0xD800 <= u <= 0xDFFF else chr(u))
        i += 1
    assert decoded == "".join(expected)


def test_deep_nesting_is_a_decode_error_with_its_own_reason() -> None:
    with pytest.raises(NestingTooDeep) as info:
        decode_guarded(msgspec.json.decode, _DEEP)
    assert isinstance(info.value, msgspec.DecodeError)
    assert failure_reason(_DEEP, info.value) == NESTING_TOO_DEEP
    try:
        msgspec.json.decode(b"[1e999]")
    except msgspec.DecodeError as exc:
        assert failure_reason(b"[1e999]", exc) == "number_out_of_range"


# -- end to end --------------------------------------------------------------------------------


def test_cli_scan_keeps_every_good_line_next_to_hostile_ones(tmp_path: Path) -> None:
    """A transcript with deep nesting, a lone surrogate, a BOM, out-of-range numbers and a
    trailing comma: exit 0, no scanner error, every good turn emitted, the bad lines counted."""
    home = tmp_path / "home"
    clean = write_claude_session(home, "-work-p", "sess-1", 3)
    good = clean.read_bytes()
    hostile = b"\n".join(line for line, _ in HOSTILE.values()) + b"\n"
    clean.write_bytes(b"\xef\xbb\xbf" + good + hostile)
    write_claude_session(home, "-work-p", "sess-1", 2, start=3)  # appended after the bad lines
    out = tmp_path / "out"
    proc = run_cli(["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"),
                    "--state-path", str(out / "s.sqlite"), "--json", "--install-inventory-disabled"], home)
    summary = json.loads(proc.stdout)
    assert summary["scanner_error_count"] == 0
    (source,) = summary["sources"]
    assert source["status"] == "partial"
    assert source["quarantined"] == len(HOSTILE)
    assert source["quarantine_reasons"][NESTING_TOO_DEEP] >= 2
    events = read_events(out / "e.jsonl")
    assert not [e for e in events if e["event"]["action"] == "scanner_error"]
    calls = [e for e in events if e["event"]["action"] == "tool_call"]
    assert len(calls) == 5  # three turns before the bad lines, two after


# -- the fuzzer --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz() -> Iterator[Any]:
    yield _fuzz_module()


def test_fuzzed_real_shaped_lines_never_fail_a_source_or_lose_a_neighbour(fuzz: Any, tmp_path: Path) -> None:
    """Every adapter, SQLite stores included: no internal error, no event of an unmutated
    record lost. The measured run (50,000 lines) is ``python bench/fuzz_records.py``."""
    budget = int(os.environ.get("TELLTALE_FUZZ_LINES", "1200"))
    targets = fuzz.build_targets(tmp_path)
    assert {t.source.kind for t in targets} >= {
        "claude.projects", "codex.sessions", "qwen.projects", "openclaw.agents", "openclaw.sqlite",
        "copilot.session_state", "copilot.process_log", "opencode.sqlite", "crush.sqlite", "goose.sqlite",
    }
    tally = fuzz.fuzz(targets, lines=budget, seed=int(os.environ.get("TELLTALE_FUZZ_SEED", "15")))
    assert tally.mutated >= budget
    assert tally.internal == 0, tally.failures
    assert tally.lost == 0, tally.failures
    assert tally.reasons[NESTING_TOO_DEEP] > 0 and tally.reasons["number_out_of_range"] > 0


def test_an_over_bound_session_header_is_quarantined_alone(tmp_path: Path) -> None:
    """Found by the fuzzer: an OpenClaw header whose id is over the string bound used to be
    adopted, and every record after it was quarantined for carrying it."""
    fixture = FIXTURES / "openclaw" / "agents" / "main" / "sessions"
    name = next(p.name for p in fixture.iterdir() if p.name.startswith("claw-fixture-rotated"))
    path = tmp_path / ".openclaw" / "agents" / "main" / "sessions" / name
    path.parent.mkdir(parents=True)
    clean = (fixture / name).read_bytes()
    path.write_bytes(clean)
    (source,) = discover(DiscoveryOptions(root=str(tmp_path), env={})).sources
    before, _ = _acquire(source)
    path.write_bytes(clean.replace(b'"claw-fixture-rotated"', b'"' + b"x" * 70_000 + b'"', 1))
    after, quarantined = _acquire(source)
    assert [(q.reason, q.line, q.field) for q in quarantined] == [("unbounded_value", 1, "session_id")]
    assert [(o.provenance.line, o.family) for o in after] == [(o.provenance.line, o.family) for o in before][1:]


def test_an_over_bound_copilot_session_start_is_quarantined_alone(tmp_path: Path) -> None:
    """Found by the fuzzer, as for OpenClaw: a Copilot session.start whose sessionId is
    over the string bound is quarantined by itself, not adopted for the records after it."""
    fixture = FIXTURES / "copilot" / "session-state" / "0d1e2f30-0000-4000-8000-f1a7f1a7f1a7.jsonl"
    path = tmp_path / ".copilot" / "session-state" / fixture.name
    path.parent.mkdir(parents=True)
    clean = fixture.read_bytes()
    path.write_bytes(clean)
    (source,) = discover(DiscoveryOptions(root=str(tmp_path), env={})).sources
    before, _ = _acquire(source)
    path.write_bytes(clean.replace(b'"0d1e2f30-0000-4000-8000-f1a7f1a7f1a7"', b'"' + b"x" * 70_000 + b'"', 1))
    after, quarantined = _acquire(source)
    assert [(q.reason, q.line, q.field) for q in quarantined] == [("unbounded_value", 1, "session_id")]
    assert [(o.provenance.line, o.family) for o in after] == [(o.provenance.line, o.family) for o in before][1:]
