"""Pipeline-level incremental properties: appends split anywhere give the same events."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scan_helpers import activity, read_events, write_claude_session
from telltale.discovery import DiscoveryOptions, discover
from telltale.pipeline import Scanner, ScanOptions


def _scan(home: Path, out: Path) -> None:
    result = discover(DiscoveryOptions(root=str(home), env={}))
    scanner = Scanner(ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"), window_bytes=4096))
    try:
        scanner.scan(result.sources)
    finally:
        scanner.close()


def _event_ids(out: Path) -> list[str]:
    return [e["event"]["id"] for e in activity(read_events(out / "e.jsonl"))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=5))
def test_property_appends_split_at_any_byte_give_the_same_events(cuts: list[float]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source_home = root / "src"
        full = write_claude_session(source_home, "-w", "sess", 6)
        payload = full.read_bytes()

        # one scan over the whole file
        one_home = root / "one"
        target = one_home / ".claude" / "projects" / "-w" / "sess.jsonl"
        target.parent.mkdir(parents=True)
        target.write_bytes(payload)
        _scan(one_home, root / "out-one")
        expected = _event_ids(root / "out-one")

        # the same bytes appended in pieces, a scan after each piece
        split_home = root / "split"
        target = split_home / ".claude" / "projects" / "-w" / "sess.jsonl"
        target.parent.mkdir(parents=True)
        target.write_bytes(b"")
        written = 0
        for pos in sorted({int(c * len(payload)) for c in cuts} | {len(payload)}):
            with target.open("ab") as fh:
                fh.write(payload[written:pos])
            written = pos
            _scan(split_home, root / "out-split")
        got = _event_ids(root / "out-split")
    assert len(got) == len(set(got)), "an event was emitted twice"
    assert sorted(got) == sorted(expected)


def test_a_source_that_vanished_after_discovery_is_a_bounded_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_claude_session(home, "-w", "sess-a", 1)
    gone = write_claude_session(home, "-w", "sess-b", 1)
    sources = discover(DiscoveryOptions(root=str(home), env={})).sources
    gone.unlink()
    out = tmp_path / "out"
    scanner = Scanner(ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite")))
    try:
        result = scanner.scan(sources)
    finally:
        scanner.close()
    status = {Path(r.path).name: (r.status, r.error) for r in result.sources}
    assert status["sess-b.jsonl"] == ("error", "vanished")
    assert status["sess-a.jsonl"][0] == "ok"
    assert result.scanner_error_count == 1
    assert any(e["event"]["action"] == "tool_call" for e in activity(read_events(out / "e.jsonl")))
