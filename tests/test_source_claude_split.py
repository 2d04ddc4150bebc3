"""Property: acquiring a Claude transcript in arbitrary appended pieces equals one acquisition.

The file is written in pieces cut at arbitrary byte positions (inside lines, inside UTF-8
sequences); after each piece the adapter runs with the cursor of the previous run. The
union of what the runs produce must equal what one run over the whole file produces:

* exactly (ids and content, provenance included) when no cut falls between two lines of
  one API response;
* otherwise, for a response cut in two, the rest is still exact, the response's usage is
  emitted once with the same id and token counts, and its text comes out as a first
  message plus a continuation whose texts, joined, are the one-run text (see
  ``docs/sources/claude.md``, "One response, several lines").
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from telltale.model import Family, Observation
from telltale.sources.base import AcquireContext
from telltale.sources.claude import TEXT_JOIN, ClaudeAdapter
from telltale.sources.spec import RootType, Source

SID = "3c1e2f4a-5b6d-4e7f-8091-a2b3c4d5e6f7"

texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip() != "")
line_kinds = st.sampled_from(["text", "text", "thinking", "tool", "tool", "progress", "result"])
responses = st.lists(st.tuples(line_kinds, texts), min_size=1, max_size=6)
turns = st.lists(st.tuples(texts, st.lists(responses, min_size=1, max_size=3)), min_size=1, max_size=4)


def build(turn_list: list[tuple[str, list[list[tuple[str, str]]]]]) -> tuple[bytes, list[tuple[int, int]]]:
    """A transcript and, per response, the byte span (end of first line, end of last line)."""
    out: list[bytes] = []
    spans: list[tuple[int, int]] = []
    size = 0
    n = 0

    def emit(rec: dict[str, Any]) -> int:
        nonlocal size, n
        n += 1
        rec.update(
            {
                "sessionId": SID,
                "cwd": "/w",
                "version": "2.1.39",
                "uuid": f"u{n:05d}",
                "timestamp": f"2026-03-02T11:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
            }
        )
        data = json.dumps(rec, ensure_ascii=False).encode() + b"\n"
        out.append(data)
        size += len(data)
        return size

    call = 0
    for t, (prompt, resps) in enumerate(turn_list):
        emit({"type": "user", "message": {"role": "user", "content": prompt}})
        if t % 2:
            emit({"type": "queue-operation", "operation": "enqueue", "content": prompt})
        for r, lines in enumerate(resps):
            mid = f"msg_{t}_{r}"
            usage = {"input_tokens": t + 1, "cache_read_input_tokens": 10 * r, "output_tokens": len(lines)}
            first_end = last_end = 0
            open_calls: list[str] = []
            for kind, value in lines:
                if kind in ("progress", "result"):
                    if kind == "progress":
                        emit({"type": "progress", "data": {"type": "hook_progress"}, "parentToolUseID": "x"})
                    elif open_calls:
                        cid = open_calls.pop(0)
                        emit(
                            {
                                "type": "user",
                                "message": {
                                    "role": "user",
                                    "content": [{"type": "tool_result", "tool_use_id": cid, "content": value}],
                                },
                            }
                        )
                    continue
                if kind == "text":
                    block: dict[str, Any] = {"type": "text", "text": value}
                elif kind == "thinking":
                    block = {"type": "thinking", "thinking": value}
                else:
                    call += 1
                    cid = f"toolu_{call}"
                    open_calls.append(cid)
                    block = {"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": value}}
                end = emit(
                    {
                        "type": "assistant",
                        "requestId": f"req_{mid}",
                        "message": {
                            "id": mid,
                            "model": "claude-opus-4-6",
                            "role": "assistant",
                            "content": [block],
                            "usage": usage,
                        },
                    }
                )
                first_end = first_end or end
                last_end = end
            if first_end:
                spans.append((first_end, last_end))
            for cid in open_calls:
                emit(
                    {
                        "type": "user",
                        "message": {
                            "role": "user",
                            "content": [{"type": "tool_result", "tool_use_id": cid, "content": "done"}],
                        },
                    }
                )
    return b"".join(out), spans


def run(path: Path, cursor: bytes | None) -> tuple[list[Observation], bytes | None]:
    src = Source(
        client="claude",
        kind="claude.projects",
        path=str(path),
        root_type=RootType.HOME,
        store_root=str(path.parent),
        found_by="fixture",
    )
    batches = list(ClaudeAdapter().acquire(src, cursor, AcquireContext()))
    return [o for b in batches for o in b.observations], batches[-1].cursor


def full(obs: Observation) -> str:
    """Everything but the file path (the two runs read files at different paths)."""
    data = msgspec.to_builtins(obs)
    data["provenance"].pop("path")
    return json.dumps(data, sort_keys=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turn_list=turns, cut_fractions=st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=5))
def test_split_appends_yield_the_same_observations(
    tmp_path_factory: Any, turn_list: list[tuple[str, list[list[tuple[str, str]]]]], cut_fractions: list[float]
) -> None:
    data, spans = build(turn_list)
    base = tmp_path_factory.mktemp("split")
    whole_path = base / "whole" / f"{SID}.jsonl"
    whole_path.parent.mkdir()
    whole_path.write_bytes(data)
    whole, _ = run(whole_path, None)

    cuts = sorted({int(f * len(data)) for f in cut_fractions} | {len(data)})
    path = base / "pieces" / f"{SID}.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"")
    pieces: list[Observation] = []
    cursor: bytes | None = None
    done = 0
    for cut in cuts:
        with path.open("ab") as fh:
            fh.write(data[done:cut])
        done = cut
        got, cursor = run(path, cursor)
        pieces.extend(got)

    ids = [o.observation_id for o in pieces]
    assert len(ids) == len(set(ids)), "nothing is emitted twice across scans"

    split_groups = any(first <= cut < last for cut in cuts[:-1] for first, last in spans)
    event("a cut inside a response" if split_groups else "cuts between responses only")
    if not split_groups:
        assert sorted(map(full, pieces)) == sorted(map(full, whole))
        return

    def exact(obs: list[Observation]) -> list[str]:
        return sorted(full(o) for o in obs if o.family not in (Family.USAGE, Family.MESSAGE) or o.role == "user")

    assert exact(pieces) == exact(whole)

    def usage(obs: list[Observation]) -> list[tuple[str, str]]:
        return sorted(
            (o.observation_id, msgspec.json.encode(o.usage).decode()) for o in obs if o.family is Family.USAGE
        )

    assert usage(pieces) == usage(whole)

    mid_of = {}
    for raw in data.splitlines():
        rec = json.loads(raw)
        if rec["type"] == "assistant":
            mid_of[rec["uuid"]] = rec["message"]["id"]
    fragments: dict[str, list[Observation]] = defaultdict(list)
    for o in pieces:
        if o.family is Family.MESSAGE and o.role == "assistant":
            fragments[mid_of[o.provenance.record_id or ""]].append(o)
    merged = {
        mid_of[o.provenance.record_id or ""]: o for o in whole if o.family is Family.MESSAGE and o.role == "assistant"
    }
    assert set(fragments) == set(merged)
    for mid, parts in fragments.items():
        parts.sort(key=lambda o: o.sequence)
        assert TEXT_JOIN.join(p.text or "" for p in parts) == merged[mid].text
        assert parts[0].observation_id == merged[mid].observation_id
