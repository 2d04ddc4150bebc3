"""Whole-file rewrite acquisition (sources/_document.py) through the Cline-family adapter."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extension_fixtures import native_era_api, ui_messages, write_task, xml_era_api
from scan_helpers import read_events, run_cli
from telltale.errors import SourceError
from telltale.model import Family, Stage
from telltale.sources import _document as document
from telltale.sources._document import UNPARSEABLE_SCANS, entry_keys, order_changes
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.cline import ClineTaskAdapter
from telltale.sources.spec import RootType, Source


def _source(path: Path) -> Source:
    return Source(client="cline", kind="cline.tasks", path=str(path), root_type=RootType.EDITOR_USER,
                  store_root=str(path.parent.parent), found_by="fixture")


def _scan(path: Path, cursor: bytes | None, history: HistoryMode = HistoryMode.INCREMENTAL) -> Batch:
    (batch,) = ClineTaskAdapter().acquire(_source(path), cursor, AcquireContext(history=history))
    return batch


def _grow_api(turns: int) -> list[dict[str, Any]]:
    """A native-era task of ``turns`` request/result rounds (ids and ts unique per round)."""
    out: list[dict[str, Any]] = [{"role": "user", "ts": 1, "content": [{"type": "text", "text": "<task>t</task>"}]}]
    for t in range(turns):
        ts = 10 * (t + 1)
        calls = [{"type": "tool_use", "id": f"c{t}_{k}", "name": "execute_command",
                  "input": {"command": f"echo {t} {k}"}} for k in range(1 + t % 3)]
        out.append({"role": "assistant", "ts": ts, "content": [{"type": "text", "text": f"turn {t}"}, *calls]})
        out.append({"role": "user", "ts": ts + 1, "content": [
            {"type": "text", "text": f"[execute_command for 'echo {t} {k}'] Result:\n{t}.{k}"}
            for k in range(len(calls))
        ]})
    out.append({"role": "assistant", "ts": 10_000, "content": [{"type": "text", "text": "done"}]})
    return out


def _grow_ui(requests: int, ended: bool) -> list[dict[str, Any]]:
    ui = ui_messages(requests=requests)
    if not ended and requests:
        last = next(m for m in reversed(ui) if m.get("say") == "api_req_started")
        req = json.loads(last["text"])
        del req["cost"]
        last["text"] = json.dumps(req)
        ui.append({"ts": 99_999_999_999_999, "type": "say", "say": "text", "text": "stream", "partial": True})
    return ui


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    turns=st.lists(st.integers(min_value=0, max_value=12), min_size=5, max_size=5).map(sorted),
    torn=st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_task_rewritten_five_times_while_growing_emits_each_record_once(
    tmp_path_factory: Any, turns: list[int], torn: list[bool]
) -> None:
    """Five growing rewrites (some first caught mid-write) emit exactly the final task's records."""
    tasks = tmp_path_factory.mktemp("tasks")
    final_turns = turns[-1] + 1
    task = write_task(tasks, "42", api=_grow_api(final_turns), ui=_grow_ui(final_turns, True))
    api_path, ui_path = task / "api_conversation_history.json", task / "ui_messages.json"
    expected = {o.observation_id for p in (api_path, ui_path) for o in _scan(p, None).observations}

    emitted: list[str] = []
    cursors: dict[Path, bytes | None] = {api_path: None, ui_path: None}
    versions = [(n, False) for n in turns] + [(final_turns, True)]
    for step, (n, ended) in enumerate(versions):
        api, ui = _grow_api(n)[:-1] if not ended else _grow_api(n), _grow_ui(n, ended)
        for path, doc in ((api_path, api), (ui_path, ui)):
            text = json.dumps(doc)
            if step < len(torn) and torn[step]:
                path.write_text(text[: len(text) // 2], encoding="utf-8")  # caught mid-rewrite
                batch = _scan(path, cursors[path])
                assert batch.revisit and batch.observations == [] and batch.quarantined == []
                cursors[path] = batch.cursor
            path.write_text(text, encoding="utf-8")
            batch = _scan(path, cursors[path])
            assert batch.quarantined == [] and batch.health == []
            emitted += [o.observation_id for o in batch.observations]
            cursors[path] = batch.cursor
    assert len(emitted) == len(set(emitted)), "an entry was emitted twice"
    assert set(emitted) == expected
    for path in (api_path, ui_path):
        again = _scan(path, cursors[path])
        assert again.observations == []


def test_rescan_of_unchanged_and_touched_documents_emits_nothing(tmp_path: Path) -> None:
    task = write_task(tmp_path, "1", api=xml_era_api())
    path = task / "api_conversation_history.json"
    first = _scan(path, None)
    assert first.observations
    assert _scan(path, first.cursor).observations == []
    path.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")  # same bytes, new mtime
    assert _scan(path, first.cursor).observations == []
    # Re-serialised with other whitespace: same entries, nothing new.
    path.write_text(json.dumps(xml_era_api(), indent=2), encoding="utf-8")
    again = _scan(path, first.cursor)
    assert again.observations == [] and again.health == []


def test_shrink_and_reorder_raise_source_reordered_never_reemit(tmp_path: Path) -> None:
    api = native_era_api()
    task = write_task(tmp_path, "1", api=api)
    path = task / "api_conversation_history.json"
    first = _scan(path, None)
    # Checkpoint restore: the last three messages vanish.
    write_task(tmp_path, "1", api=api[:3])
    shrunk = _scan(path, first.cursor)
    assert shrunk.observations == []
    (health,) = shrunk.health
    assert health.reason == "source_reordered"
    assert health.fields["vanished"] == 3 and health.fields["entries_now"] == 3
    # Regrown with a different continuation: only the new entries are emitted.
    new_tail = [{"role": "assistant", "ts": 5_000, "content": [{"type": "text", "text": "other path"}]}]
    write_task(tmp_path, "1", api=api[:3] + new_tail)
    regrown = _scan(path, shrunk.cursor)
    assert [o.text for o in regrown.observations] == ["other path"]
    assert regrown.health == []
    # Two entries swapped: moved, nothing emitted.
    swapped = api[:3] + new_tail
    swapped[1], swapped[2] = swapped[2], swapped[1]
    write_task(tmp_path, "1", api=swapped)
    moved = _scan(path, regrown.cursor)
    assert moved.observations == []
    assert [(h.reason, h.fields["moved"], h.fields["vanished"]) for h in moved.health] == [("source_reordered", 1, 0)]


def test_entry_changed_in_place_is_not_reemitted(tmp_path: Path) -> None:
    ui = ui_messages(requests=2)
    task = write_task(tmp_path, "1", ui=ui)
    path = task / "ui_messages.json"
    first = _scan(path, None)
    ui[1]["lastCheckpointHash"] = "abc"  # the extension annotates an old message
    write_task(tmp_path, "1", ui=ui)
    again = _scan(path, first.cursor)
    assert again.observations == [] and again.health == []


def test_invalid_document_is_retried_and_reported_after_three_stable_scans(tmp_path: Path) -> None:
    task = write_task(tmp_path, "1", api=xml_era_api())
    path = task / "api_conversation_history.json"
    first = _scan(path, None)
    path.write_text('[{"role": "user", "content": "x"}, {"rol', encoding="utf-8")
    cursor = first.cursor
    reasons: list[list[str]] = []
    for _ in range(UNPARSEABLE_SCANS + 1):
        batch = _scan(path, cursor)
        assert batch.revisit and batch.partial and batch.observations == [] and batch.quarantined == []
        reasons.append([h.reason for h in batch.health])
        cursor = batch.cursor
    assert reasons == [[], [], ["source_unparseable"], []], "raised once, on the third stable scan"
    # A new mtime restarts the streak; the file still parses into nothing new once fixed.
    path.write_text(json.dumps(xml_era_api()), encoding="utf-8")
    fixed = _scan(path, cursor)
    assert fixed.observations == [] and not fixed.revisit


def test_streak_restarts_when_the_file_keeps_changing(tmp_path: Path) -> None:
    task = write_task(tmp_path, "1", api=[])
    path = task / "api_conversation_history.json"
    cursor = None
    for i in range(5):
        path.write_text("[" * (i + 1), encoding="utf-8")
        os.utime(path, ns=(10**18 + i, 10**18 + i))
        batch = _scan(path, cursor)
        assert batch.health == []
        cursor = batch.cursor


def test_undecodable_entry_is_quarantined_once_and_the_rest_goes_through(tmp_path: Path) -> None:
    api: list[Any] = native_era_api()
    api.insert(1, {"role": 5, "content": "bad role"})
    task = write_task(tmp_path, "1", api=api)
    path = task / "api_conversation_history.json"
    first = _scan(path, None)
    assert [(q.reason, q.row) for q in first.quarantined] == [("schema_mismatch", "entry:1")]
    assert len([o for o in first.observations if o.family is Family.TOOL and o.stage is Stage.REQUESTED]) == 3
    assert _scan(path, first.cursor).quarantined == []


def test_history_all_ignores_the_cursor(tmp_path: Path) -> None:
    task = write_task(tmp_path, "1", api=xml_era_api())
    path = task / "api_conversation_history.json"
    first = _scan(path, None)
    again = _scan(path, first.cursor, HistoryMode.ALL)
    assert [o.observation_id for o in again.observations] == [o.observation_id for o in first.observations]


def test_keys_and_order_changes() -> None:
    raws = [b'{"a":1}', b'{"a":1}', b'{"b":2}']
    keys = entry_keys(raws, [None, None, "x"])  # type: ignore[arg-type]
    assert keys[0] != keys[1] and keys[0].startswith("#") and keys[2] == "=x"
    assert order_changes(["a", "b", "c"], ["a", "c", "b"]) == (0, 1)
    assert order_changes(["a", "b", "c"], ["a", "b"]) == (1, 0)
    assert order_changes(["a", "b"], ["a", "b", "c"]) == (0, 0)


def test_oversized_entry_is_quarantined_once_and_oversized_document_fails_the_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = native_era_api()
    api[2]["content"].append({"type": "text", "text": "x" * 5_000})
    task = write_task(tmp_path, "1", api=api)
    path = task / "api_conversation_history.json"
    monkeypatch.setattr(document, "MAX_ENTRY_BYTES", 4_096)
    first = _scan(path, None)
    assert [(q.reason, q.row) for q in first.quarantined] == [("oversized_entry", "entry:2")]
    assert len([o for o in first.observations if o.stage is Stage.REQUESTED]) == 3
    assert _scan(path, first.cursor).quarantined == []
    monkeypatch.setattr(document, "MAX_DOCUMENT_BYTES", 1_024)
    with pytest.raises(SourceError) as err:
        _scan(path, first.cursor)
    assert err.value.reason == "over_budget"


def test_unparseable_document_through_the_cli_is_reported_once_and_retried(tmp_path: Path) -> None:
    home = tmp_path / "home"
    tasks = home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    task = write_task(tasks, "1", api=xml_era_api())
    out = tmp_path / "out"
    args = ["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"),
            "--state-path", str(out / "s.sqlite"), "--client", "cline"]
    run_cli(args, home)
    path = task / "api_conversation_history.json"
    path.write_text('[{"role": "user", "content": "x"}, {"rol', encoding="utf-8")  # caught mid-rewrite
    for _ in range(4):
        run_cli(args, home)
    events = read_events(out / "e.jsonl")
    assert [e["event"]["action"] for e in events].count("source_unparseable") == 1
    summaries = [e["telltale"]["scan"] for e in events if e["event"]["action"] == "scan_summary"]
    # Re-read on every scan although its size and mtime never changed (never "unchanged").
    assert all(s["sources_scanned"] == 1 for s in summaries[1:])
    more = [*xml_era_api(), {"role": "user", "content": "more"}, {"role": "assistant", "content": "ok"}]
    path.write_text(json.dumps(more), encoding="utf-8")
    run_cli(args, home)
    texts = [e for e in read_events(out / "e.jsonl")[len(events):] if e["event"]["action"] == "message"]
    assert len(texts) == 2
