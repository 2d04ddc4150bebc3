"""Property: a Gemini CLI session log acquired in arbitrary appended pieces gives exactly
what one acquisition of the whole file gives: every observation once, the same ids and
the same content. Pieces are cut at arbitrary byte positions (inside lines and UTF-8
sequences), so records re-appended with new statuses and tokens, checkpoints and rewinds
land on either side of a scan."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telltale.sources.base import AcquireContext
from telltale.sources.gemini import GeminiChatsAdapter
from telltale.sources.spec import RootType, Source

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("user"), texts),
        st.tuples(st.just("gemini"), st.tuples(texts, st.integers(0, 2), st.booleans(), st.booleans())),
        st.tuples(st.just("set"), st.just("")),
        st.tuples(st.just("checkpoint"), st.just("")),
        st.tuples(st.just("rewind"), st.integers(0, 5)),
    ),
    min_size=1,
    max_size=10,
)


def build(plan: list[tuple[str, Any]]) -> bytes:
    lines = [{"sessionId": "5f0e7c1a-3b2d-4c8e-9a61-0d2b4e6f8a10", "projectHash": "0" * 64, "kind": "main",
              "startTime": "2026-11-20T10:00:00.000Z", "lastUpdated": "2026-11-20T10:00:00.000Z"}]
    live: list[dict[str, Any]] = []
    for n, (op, arg) in enumerate(plan):
        if op == "user":
            msg = {"id": f"u{n}", "type": "user", "timestamp": "2026-11-20T10:00:01.000Z", "content": [{"text": arg}]}
            live.append(msg)
            lines.append(msg)
        elif op == "gemini":
            text, n_calls, finish, tokens = arg
            calls = [{"id": f"c{n}-{i}", "name": "run_shell_command", "args": {"command": f"echo {text}"},
                      "status": "executing", "timestamp": "2026-11-20T10:00:02.000Z"} for i in range(n_calls)]
            msg = {"id": f"g{n}", "type": "gemini", "timestamp": "2026-11-20T10:00:02.000Z", "content": text,
                   "model": "m", "toolCalls": calls}
            live.append(msg)
            lines.append(json.loads(json.dumps(msg)))
            if finish:
                for call in calls:
                    call["status"] = "success"
                    call["result"] = [{"functionResponse": {"id": call["id"], "response": {"output": text}}}]
                lines.append(json.loads(json.dumps(msg)))
            if tokens:
                msg["tokens"] = {"input": n + 1, "output": 2, "cached": 0, "thoughts": 1, "tool": 0, "total": n + 4}
                lines.append(json.loads(json.dumps(msg)))
        elif op == "set":
            lines.append({"$set": {"lastUpdated": "2026-11-20T10:00:03.000Z"}})
        elif op == "checkpoint":
            summary = {"id": f"s{n}", "type": "user", "timestamp": "2026-11-20T10:00:04.000Z", "content": "summary"}
            live = [summary, *live]
            lines.append({"$set": {"messages": json.loads(json.dumps(live))}})
        elif live:
            target = live[min(arg, len(live) - 1)]
            live = live[: live.index(target)]
            lines.append({"$rewindTo": target["id"]})
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def run(path: Path, cursor: bytes | None) -> tuple[list[Any], bytes | None]:
    source = Source(client="gemini", kind="gemini.chats", path=str(path), root_type=RootType.HOME,
                    store_root=str(path.parent.parent.parent), found_by="home")
    out = []
    for batch in GeminiChatsAdapter().acquire(source, cursor, AcquireContext()):
        out.extend(batch.observations)
        if batch.cursor is not None:
            cursor = batch.cursor
    return out, cursor


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=steps, cuts=st.lists(st.floats(0, 1), max_size=5))
def test_split_appends_equal_one_acquisition(tmp_path: Path, plan: list[tuple[str, Any]], cuts: list[float]) -> None:
    data = build(plan)
    chats = tmp_path / "tmp" / "p" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    whole = chats / "session-whole.jsonl"
    whole.write_bytes(data)
    expected, _ = run(whole, None)
    ids = Counter(o.observation_id for o in expected)
    assert all(n == 1 for n in ids.values())

    split = chats / "session-whole.jsonl"
    split.unlink()
    positions = sorted({int(c * len(data)) for c in cuts} | {len(data)})
    got: list[Any] = []
    cursor = None
    written = 0
    for end in positions:
        with split.open("ab") as fh:
            fh.write(data[written:end])
        written = end
        out, cursor = run(split, cursor)
        got.extend(out)
    assert Counter(o.observation_id for o in got) == ids
    assert sorted(got, key=lambda o: o.observation_id) == sorted(expected, key=lambda o: o.observation_id)
