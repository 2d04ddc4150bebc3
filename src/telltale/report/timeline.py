"""Sessions' log lines as compact timeline rows for the report.

The lines are read from the spans the index recorded (never the whole log) through a
narrow msgspec view, each event once by ``event.id``, in the order ``telltale show``
uses. A row is a short list whose first item says what it is, so 100,000 events stay a
few megabytes of JSON:

====  ===========================================================================
kind  items after ``[kind, ms since the session's start]``
====  ===========================================================================
m     role, length, text or null, injected (0/1)
c     tool, what kind (cmd/path/url/args or ""), what or null, [subagent session indexes]
r     tool, outcome, exit code or null, length, text or null
u     model, input, output, cache read, cache creation
d     detection index
o     action
====  ===========================================================================
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from telltale.index.documents import Usage

#: Text shown per message at most (the log holds up to 8 KiB).
TEXT_LIMIT = 4_096
#: Text shown per tool result at most (results are collapsed; ``show`` has them whole).
RESULT_LIMIT = 1_024
#: Command, path, URL or arguments shown per tool call at most.
WHAT_LIMIT = 1_024
#: Rows of one session's timeline at most; the rest is counted, not shown.
SESSION_ROWS = 20_000

CONTENT_LEVELS = ("none", "redacted", "log", "full")


class _Id(msgspec.Struct, gc=False):
    id: str | None = None


class _Tool(msgspec.Struct, gc=False):
    name: str | None = None
    call: _Id | None = None


class _Model(msgspec.Struct, gc=False):
    model: str | None = None


class _GenAI(msgspec.Struct, gc=False):
    tool: _Tool | None = None
    request: _Model | None = None
    usage: Usage | None = None


class _Event(msgspec.Struct, gc=False):
    id: str = ""
    dataset: str = ""
    action: str = ""
    outcome: str | None = None


class _Source(msgspec.Struct, gc=False):
    path_hash: str | None = None


class _Message(msgspec.Struct, gc=False):
    role: str | None = None
    injected: bool | None = None
    length: int | None = None
    hash: str | None = None
    text: str | None = None


class _ToolInfo(msgspec.Struct, gc=False):
    arguments: str | None = None
    result: str | None = None
    result_length: int | None = None
    result_hash: str | None = None
    interrupted: bool | None = None


class _Telltale(msgspec.Struct, gc=False):
    sequence: int | None = None
    source: _Source | None = None
    message: _Message | None = None
    tool: _ToolInfo | None = None


class _Process(msgspec.Struct, gc=False):
    command_line: str | None = None
    exit_code: int | None = None


class _File(msgspec.Struct, gc=False):
    path: str | None = None


class _Url(msgspec.Struct, gc=False):
    full: str | None = None


class Line(msgspec.Struct, gc=False, rename={"timestamp": "@timestamp"}):
    """The fields of a log line the timeline shows."""

    timestamp: str = ""
    event: _Event = msgspec.field(default_factory=_Event)
    telltale: _Telltale = msgspec.field(default_factory=_Telltale)
    gen_ai: _GenAI | None = None
    process: _Process | None = None
    file: _File | None = None
    url: _Url | None = None


_decode_line = msgspec.json.Decoder(Line).decode
DETECTION = "telltale.detection"


@dataclass
class SessionLines:
    """One session's events, each once, in order; detection lines kept whole."""

    lines: list[Line] = field(default_factory=list)
    detections: dict[str, bytes] = field(default_factory=dict)  # event id -> the line
    missing_spans: int = 0


def read_sessions(conn: sqlite3.Connection, rowids: Iterable[int], files: dict[int, str]) -> dict[int, SessionLines]:
    """The events of the given sessions, read span by span from each log file once."""
    import json

    wanted = list(rowids)
    out: dict[int, SessionLines] = {r: SessionLines() for r in wanted}
    seen: dict[int, set[str]] = {r: set() for r in wanted}
    spans: dict[int, list[tuple[int, int, int]]] = {}
    for session, file_id, start, end in conn.execute(
        "SELECT session, file, start, end FROM ix_spans WHERE session IN (SELECT value FROM json_each(?))",
        (json.dumps(wanted),),
    ):
        if file_id not in files:
            out[session].missing_spans += 1
            continue
        spans.setdefault(file_id, []).append((start, end, session))
    for file_id, ranges in spans.items():
        ranges.sort()
        try:
            fh = open(files[file_id], "rb")  # noqa: SIM115 - closed below, read while open
        except OSError:
            for _, _, session in ranges:
                out[session].missing_spans += 1
            continue
        with fh:
            fd = fh.fileno()
            for start, end, session in ranges:
                _take(os.pread(fd, max(0, end - start), start), out[session], seen[session])
    for lines in out.values():
        lines.lines.sort(key=_order)
    return out


def _take(chunk: bytes, into: SessionLines, seen: set[str]) -> None:
    for raw in chunk.split(b"\n"):
        if not raw:
            continue
        try:
            line = _decode_line(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        event_id = line.event.id
        if not event_id or event_id in seen:
            continue
        seen.add(event_id)
        into.lines.append(line)
        if line.event.dataset == DETECTION:
            into.detections[event_id] = raw


def _order(line: Line) -> tuple[str, int, int]:
    return (line.timestamp, 1 if line.event.dataset == DETECTION else 0, line.telltale.sequence or 0)


_MINUTES: dict[str, int] = {}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS = dt.timedelta(milliseconds=1)


def epoch_ms(text: str | None) -> int | None:
    """Milliseconds since the epoch of an index or event time (``None`` when not a time).

    The log's own form (``YYYY-MM-DDTHH:MM:SS.mmmZ``) is read by slicing, its minute
    memoised: a report reads one per event."""
    if not text:
        return None
    if len(text) == 24 and text[23] == "Z" and text[19] == ".":
        minute = _MINUTES.get(text[:16])
        if minute is None:
            parsed = _parse(text[:16] + ":00+00:00")
            if parsed is None:
                return None
            minute = _MINUTES[text[:16]] = parsed
        try:
            return minute + int(text[17:19] + text[20:23])  # seconds and milliseconds at once
        except ValueError:
            return None
    return _parse(text)


def _parse(text: str) -> int | None:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - _EPOCH) // _MS  # exact: a float timestamp times 1000 can land a millisecond short


@dataclass
class Rows:
    """What :func:`rows` made of one session."""

    rows: list[list[Any]]
    omitted: int = 0


def rows(
    lines: list[Line],
    *,
    base_ms: int,
    content: str,
    redact: Callable[[str], str],
    redact_arguments: Callable[[str], str],
    detection_index: dict[str, int],
    children_by_call: dict[str, list[int]],
    store_texts: dict[str, str],
    text_limit: int = TEXT_LIMIT,
    result_limit: int = RESULT_LIMIT,
) -> Rows:
    """The rows of one session at a content level (see the module's table)."""
    show_what = content != "none"
    show_text = content in ("log", "full")
    out: list[list[Any]] = []
    omitted = 0
    parse = epoch_ms
    last_stamp = ""
    last_ms = base_ms
    call_names: dict[str, str] = {}  # call id -> tool name (a result may not carry it)
    names: dict[str, str] = {}  # tool, role and model names, redacted once per session

    def name(value: str) -> str:
        shown = names.get(value)
        if shown is None:
            shown = names[value] = redact(value)
        return shown

    for line in lines:
        if len(out) >= SESSION_ROWS:
            omitted += 1
            continue
        if line.timestamp != last_stamp:
            last_stamp = line.timestamp
            last_ms = parse(line.timestamp) or last_ms
        t = last_ms - base_ms
        event = line.event
        action = event.action
        tt = line.telltale
        gen_ai = line.gen_ai
        tool = gen_ai.tool if gen_ai is not None else None
        tool_name = name(tool.name) if tool is not None and tool.name else ""
        if event.dataset == DETECTION:
            index = detection_index.get(event.id)
            if index is not None:
                out.append(["d", t, index])
            continue
        if action == "message":
            m = tt.message or _Message()
            text = None
            if show_text:
                text = m.text if m.text is not None else store_texts.get(event.id)
                text = redact(_cut(text, text_limit)) if text else None
            out.append(["m", t, name(m.role or "unknown"), m.length or 0, text, 1 if m.injected else 0])
        elif action == "tool_call":
            kind, what = "", None
            if show_what:
                kind, what = _what(line, redact, redact_arguments)
            call_id = tool.call.id if tool is not None and tool.call is not None else None
            if call_id and tool_name:
                call_names[call_id] = tool_name
            subs = children_by_call.pop(call_id, []) if call_id else []
            out.append(["c", t, tool_name, kind, what, subs])
        elif action == "tool_result":
            info = tt.tool or _ToolInfo()
            text = None
            if show_text:
                text = info.result if info.result is not None else store_texts.get(event.id)
                text = redact(_cut(text, result_limit)) if text else None
            outcome = "interrupted" if info.interrupted else (event.outcome or "")
            code = line.process.exit_code if line.process is not None else None
            if not tool_name and tool is not None and tool.call is not None and tool.call.id:
                tool_name = call_names.get(tool.call.id, "")
            out.append(["r", t, tool_name, outcome, code, info.result_length or 0, text])
        elif action == "usage":
            u = gen_ai.usage if gen_ai is not None else None
            model = gen_ai.request.model if gen_ai is not None and gen_ai.request is not None else None
            if u is None:
                continue
            cache_read = u.cache_read.input_tokens if u.cache_read is not None else 0
            cache_creation = u.cache_creation.input_tokens if u.cache_creation is not None else 0
            out.append(["u", t, name(model or ""), u.input_tokens or 0, u.output_tokens or 0, cache_read or 0,
                        cache_creation or 0])  # fmt: skip
        elif action == "session":
            continue  # the session's header says it
        else:
            out.append(["o", t, redact(action or "?")])
    return Rows(out, omitted)


def _what(line: Line, redact: Callable[[str], str], redact_arguments: Callable[[str], str]) -> tuple[str, str | None]:
    if line.process is not None and line.process.command_line:
        return "cmd", redact(_cut(line.process.command_line, WHAT_LIMIT))
    if line.file is not None and line.file.path:
        return "path", redact(_cut(line.file.path, WHAT_LIMIT))
    if line.url is not None and line.url.full:
        return "url", redact(_cut(line.url.full, WHAT_LIMIT))
    info = line.telltale.tool
    if info is not None and info.arguments:
        return "args", _cut(redact_arguments(info.arguments), WHAT_LIMIT)
    return "", None


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_sizes(lines: Iterable[Line], store_texts: dict[str, str]) -> tuple[list[int], list[int]]:
    """Lengths of the message texts and result texts the rows would carry uncut."""
    messages: list[int] = []
    results: list[int] = []
    for line in lines:
        tt = line.telltale
        if tt.message is not None:
            text = tt.message.text if tt.message.text is not None else store_texts.get(line.event.id)
            if text:
                messages.append(len(text))
        elif tt.tool is not None:
            text = tt.tool.result if tt.tool.result is not None else store_texts.get(line.event.id)
            if text:
                results.append(len(text))
    return messages, results


def fair_cut(lengths: list[int], budget: int, ceiling: int) -> int:
    """The largest per-item cut (at most ``ceiling``) under which all items together keep
    within ``budget`` characters: short texts stay whole, long ones share what is left."""
    if sum(min(n, ceiling) for n in lengths) <= budget:
        return ceiling
    left = budget
    ordered = sorted(lengths)
    count = len(ordered)
    for i, n in enumerate(ordered):
        if n * (count - i) > left:
            return min(ceiling, left // (count - i))
        left -= n
    return ceiling


def wanted_store_texts(lines: Iterable[Line]) -> list[dict[str, Any]]:
    """Minimal documents for :func:`telltale.index.storetext.texts`: the events whose text
    the log holds only as a length and hash."""
    docs: list[dict[str, Any]] = []
    for line in lines:
        tt = line.telltale
        source = tt.source.path_hash if tt.source is not None else None
        if not source:
            continue
        if tt.message is not None and tt.message.hash and tt.message.text is None:
            docs.append({"event": {"id": line.event.id}, "telltale": {
                "source": {"path_hash": source}, "message": {"hash": tt.message.hash}}})  # fmt: skip
        elif tt.tool is not None and tt.tool.result_hash and tt.tool.result is None:
            docs.append({"event": {"id": line.event.id}, "telltale": {
                "source": {"path_hash": source}, "tool": {"result_hash": tt.tool.result_hash}}})  # fmt: skip
    return docs
