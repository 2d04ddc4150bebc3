"""Cursor agent transcripts: ``~/.cursor/projects/<slug>/agent-transcripts/…`` (formats-more §1.1).

Two encodings share the directory (see :mod:`.layout` for where each sits):

* **JSONL** (2026): one ``{"role", "message": {"content": [blocks]}}`` object per line,
  blocks ``text`` and ``tool_use`` (``name``, ``input``), and ``{"type": "turn_ended"}``
  markers. Lines are appended, so every complete line is final when read.
* **Plain text** (older flat ``<id>.txt``): ``user:`` / ``assistant:`` marker lines, each
  followed by its block; inside an assistant block ``[Tool call] <name>`` and
  ``[Tool result]`` headers with indented bodies and ``[Thinking]`` sections.

What the format lacks is reported, not invented: no record id (ids come from the file
and the line), no tool-call id, no model, no tokens, and in JSONL no tool results
(the session observation says so in ``coverage_*`` attributes). The only time is the
``<timestamp>`` block Cursor puts in a user prompt; it dates that prompt, and the turn's
other records carry it as the ``turn_started_at`` attribute. Nothing is dated by the
file's modification time.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, Quarantine, Stage, encode_arguments
from telltale.readers.jsonl import Line
from telltale.readers.records import decode_guarded
from telltale.sources._jsonl_driver import (
    MapsEachLine,
    Out,
    Recorder,
    acquire_lines,
    decode_failure_reason,
    line_quarantine,
)
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.cursor.layout import TRANSCRIPT_KIND, transcript_location
from telltale.sources.cursor.tools import AUTHORED_KEYS, facets
from telltale.sources.spec import Source

CLIENT = "cursor"
KIND = TRANSCRIPT_KIND
#: Cursor writes this literal where an assistant block held reasoning text.
REDACTED = "[REDACTED]"
#: A plain-text block is held this long after the file's last change before its end is
#: taken as final (the writer may still be adding lines to it). Never an event time.
TEXT_SETTLE_SECONDS = 60.0
#: Text kept for one plain-text block; a longer block is quarantined, not truncated.
MAX_TEXT_BLOCK_BYTES = 8 << 20

# -- native shapes ------------------------------------------------------------------------


class _Block(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    name: str | None = None
    input: Any = None
    id: str | None = None


class _Message(msgspec.Struct):
    content: list[_Block] | str | None = None


class _Record(msgspec.Struct):
    role: str | None = None
    type: str | None = None
    status: str | None = None
    message: _Message | None = None


_decoder = msgspec.json.Decoder(_Record)
_KNOWN_BLOCKS = frozenset({"text", "tool_use"})


class _Carry(msgspec.Struct, omit_defaults=True):
    turn: str | None = None  # ISO time of the last prompt's <timestamp>, if any


_carry_decoder = msgspec.json.Decoder(_Carry)

# -- the <timestamp> block ----------------------------------------------------------------

_TIMESTAMP = re.compile(
    r"<timestamp>\s*(?:[A-Za-z]+,\s*)?([A-Za-z]{3,9})\.?\s+(\d{1,2}),\s*(\d{4}),?\s+(\d{1,2}):(\d{2})"
    r"(?::(\d{2}))?\s*([AaPp][Mm])?\s*\(\s*(?:UTC|GMT)\s*(?:([+-])(\d{1,2})(?::?(\d{2}))?)?\s*\)\s*</timestamp>"
)
_MONTHS = {
    name: index
    for index, names in enumerate(
        (("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
         ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
         ("oct", "october"), ("nov", "november"), ("dec", "december")),
        start=1,
    )
    for name in names
}
_USER_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.DOTALL)


def prompt_time(text: str) -> str | None:
    """The ``<timestamp>`` of a prompt (``Tuesday, Sep 1, 2026, 1:20 PM (UTC+8)``) as ISO UTC.

    Only the first 4 KiB are searched (Cursor puts the block first). Anything that is not
    a real calendar time gives ``None``; nothing is guessed.
    """
    match = _TIMESTAMP.search(text, 0, 4096)
    if match is None:
        return None
    month_name, day, year, hour, minute, second, meridiem, sign, off_h, off_m = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        return None
    h = int(hour)
    if meridiem is not None:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if meridiem.lower() == "pm" else 0)
    offset = dt.timedelta(0)
    if sign is not None:
        offset = dt.timedelta(hours=int(off_h), minutes=int(off_m or 0))
        if offset > dt.timedelta(hours=14):
            return None
        if sign == "-":
            offset = -offset
    try:
        moment = dt.datetime(int(year), month, int(day), h, int(minute), int(second or 0),
                             tzinfo=dt.timezone(offset))
    except ValueError:
        return None
    moment = moment.astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def prompt_text(text: str) -> str:
    """What the user typed: the ``<user_query>`` body when Cursor wrapped it, else the text."""
    match = _USER_QUERY.search(text)
    return match.group(1) if match else text


def assistant_text(text: str) -> str | None:
    """Assistant text without the ``[REDACTED]`` placeholder of its reasoning."""
    cleaned = text.replace(REDACTED, "").strip()
    return cleaned or None


# -- shared per-file context --------------------------------------------------------------


class _File:
    """Identity of one transcript file: session, parent, project slug, coordinates."""

    def __init__(self, source: Source) -> None:
        self.source = source
        relative = os.path.relpath(source.path, source.store_root).replace(os.sep, "/")
        location = transcript_location(tuple(relative.split("/")))
        if location is None:  # an explicitly named file outside the usual layout
            stem = os.path.basename(source.path).rsplit(".", 1)[0]
            location = ("", stem, None)
        self.slug, self.session_id, self.parent = location
        self.subagent = self.parent is not None
        self.identity = f"{CLIENT}:transcript:{relative}"

    def common(self, line: Line, occurred_at: str | None, turn: str | None) -> dict[str, Any]:
        attributes: dict[str, str] = {}
        if turn is not None and occurred_at is None:
            attributes["turn_started_at"] = turn
        return {
            "client": CLIENT,
            "session_id": self.session_id,
            "sequence": line.number,
            "occurred_at": occurred_at,
            "parent_session_id": self.parent,
            "provenance": Provenance(source_kind=KIND, path=self.source.path, line=line.number, offset=line.offset),
            "attributes": attributes,
        }

    def session(self, rec: Recorder, line: Line, occurred_at: str | None, *, results: bool) -> None:
        """The session observation, from the file's first line (its coordinate never moves)."""
        attributes = {
            "transcript_format": "text" if self.source.path.endswith(".txt") else "jsonl",
            "coverage_tool_call_ids": "absent",
            "coverage_model": "absent",
            "coverage_usage": "absent",
        }
        if not results:
            attributes["coverage_tool_results"] = "absent"
        if self.slug:
            attributes["project_slug"] = self.slug
        common = self.common(line, occurred_at, None)
        common["attributes"] = attributes
        rec.add(source_identity=self.identity, coordinate="session", family=Family.SESSION, **common)

    def quarantine(self, line: Line, reason: str, err: BoundExceeded | None = None) -> Quarantine:
        return line_quarantine(KIND, self.source, line, reason, session_id=self.session_id, err=err)


# -- JSONL --------------------------------------------------------------------------------


class _JsonlHandler(MapsEachLine):
    def __init__(self, source: Source, carry: bytes | None) -> None:
        self.file = _File(source)
        self.turn: str | None = None
        if carry:
            try:
                self.turn = _carry_decoder.decode(carry).turn
            except msgspec.DecodeError:
                self.turn = None

    def carry(self) -> bytes:
        return msgspec.json.encode(_Carry(turn=self.turn))

    def handle(self, line: Line, out: Out) -> None:
        data = line.data
        if data is None:
            out.records_read += 1
            out.quarantined.append(self.file.quarantine(line, "oversized_line"))
            return
        if not data.strip():
            return
        out.records_read += 1
        try:
            record = decode_guarded(_decoder.decode, data)
        except msgspec.DecodeError as exc:
            out.quarantined.append(self.file.quarantine(line, decode_failure_reason(data, exc)))
            return
        rec = Recorder(KIND)
        try:
            if line.number == 1:
                first = _first_text(record) if record.role == "user" else None
                self.file.session(rec, line, prompt_time(first) if first else None, results=False)
            if record.role in ("user", "assistant") and record.message is not None:
                self._message(record, line, rec, out)
            elif record.type == "turn_ended" or (record.role is None and record.type is not None
                                                  and record.message is None and record.status is not None):
                out.other_records += 1
            else:
                out.quarantined.append(self.file.quarantine(line, "unknown_record_type"))
        except BoundExceeded as err:
            rec.take()
            out.quarantined.append(self.file.quarantine(line, "unbounded_value", err))
            return
        out.observations.extend(rec.take())

    def _message(self, record: _Record, line: Line, rec: Recorder, out: Out) -> None:
        assert record.message is not None
        content = record.message.content
        blocks = [_Block(type="text", text=content)] if isinstance(content, str) else (content or [])
        user = record.role == "user"
        texts: list[str] = []
        occurred: str | None = None
        for block in blocks:
            if block.type == "text" and isinstance(block.text, str):
                texts.append(block.text)
            elif block.type not in _KNOWN_BLOCKS:
                out.quarantined.append(self.file.quarantine(line, "unknown_content_block"))
        if user:
            joined = "\n".join(texts)
            occurred = prompt_time(joined) if joined else None
            self.turn = occurred  # a prompt starts a turn, dated or not
            text = prompt_text(joined).strip() if joined else ""
            if text:
                rec.add(
                    source_identity=self.file.identity, coordinate=f"line:{line.number}:text",
                    family=Family.MESSAGE, role="user", text=text,
                    injected=self.file.subagent,  # a subagent's prompt is written by its parent agent
                    **self.file.common(line, occurred, self.turn),
                )
            return
        common = self.file.common(line, None, self.turn)
        answer = assistant_text("\n".join(texts))
        if answer:
            rec.add(
                source_identity=self.file.identity, coordinate=f"line:{line.number}:text",
                family=Family.MESSAGE, role="assistant", text=answer, **common,
            )
        for index, block in enumerate(blocks):
            if block.type != "tool_use":
                continue
            name = block.name if isinstance(block.name, str) else None
            args = block.input if isinstance(block.input, dict | list | str) else None
            rec.add(
                source_identity=self.file.identity, coordinate=f"line:{line.number}:block:{index}",
                family=Family.TOOL, stage=Stage.REQUESTED, tool_name=name, call_id=block.id,
                arguments=encode_arguments(args, AUTHORED_KEYS),
                **facets(name, args), **common,
            )


def _first_text(record: _Record) -> str | None:
    if record.message is None:
        return None
    content = record.message.content
    if isinstance(content, str):
        return content
    for block in content or []:
        if block.type == "text" and isinstance(block.text, str):
            return block.text
    return None


# -- plain text (older flat layout) -------------------------------------------------------

_ROLE_MARKERS = {"user:": "user", "assistant:": "assistant"}
_TOOL_CALL = "[Tool call]"
_TOOL_RESULT = "[Tool result]"
_THINKING = "[Thinking]"


class _TextBlock:
    """One ``user:`` / ``assistant:`` block being collected (marker line and body)."""

    __slots__ = ("line", "lines", "offset", "role", "size", "too_big")

    def __init__(self, line: Line, role: str) -> None:
        self.line = line
        self.offset = line.offset
        self.role = role
        self.lines: list[str] = []
        self.size = 0
        self.too_big = False

    def extend(self, text: str) -> None:
        if self.too_big:
            return
        self.size += len(text) + 1
        if self.size > MAX_TEXT_BLOCK_BYTES:
            self.too_big = True
            self.lines = []
            return
        self.lines.append(text)


class _TextHandler:
    """Maps a block once the next marker shows it ended (or the file has settled)."""

    def __init__(self, source: Source, carry: bytes | None, settled: bool) -> None:
        self.file = _File(source)
        self.settled = settled
        self.pending: _TextBlock | None = None
        self.held = False
        self.turn: str | None = None
        if carry:
            try:
                self.turn = _carry_decoder.decode(carry).turn
            except msgspec.DecodeError:
                self.turn = None

    def resume_point(self) -> tuple[int, int] | None:
        if self.pending is None:
            return None
        return self.pending.offset, self.pending.line.number - 1

    def carry(self) -> bytes:
        return msgspec.json.encode(_Carry(turn=self.turn))

    def finish(self, out: Out) -> None:
        if self.pending is None:
            return
        if self.settled:
            self._map(self.pending, out)
            self.pending = None
        else:
            self.held = True  # the writer may still extend it: read it again later

    def handle(self, line: Line, out: Out) -> None:
        data = line.data
        if data is None:
            out.records_read += 1
            out.quarantined.append(self.file.quarantine(line, "oversized_line"))
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            out.records_read += 1
            out.quarantined.append(self.file.quarantine(line, "invalid_utf8"))
            return
        role = _ROLE_MARKERS.get(text.strip())
        if role is not None:
            if self.pending is not None:
                self._map(self.pending, out)
            self.pending = _TextBlock(line, role)
            return
        if self.pending is not None:
            self.pending.extend(text)
        elif text.strip():
            out.records_read += 1
            out.quarantined.append(self.file.quarantine(line, "unknown_record_type"))

    def _map(self, block: _TextBlock, out: Out) -> None:
        out.records_read += 1
        line = block.line
        if block.too_big:
            out.quarantined.append(self.file.quarantine(
                line, "unbounded_value", BoundExceeded("block", MAX_TEXT_BLOCK_BYTES, block.size)))
            return
        rec = Recorder(KIND)
        try:
            if line.number == 1:
                first = "\n".join(block.lines) if block.role == "user" else ""
                self.file.session(rec, line, prompt_time(first) if first else None, results=True)
            if block.role == "user":
                self._user(block, rec)
            else:
                self._assistant(block, rec)
        except BoundExceeded as err:
            rec.take()
            out.quarantined.append(self.file.quarantine(line, "unbounded_value", err))
            return
        out.observations.extend(rec.take())

    def _user(self, block: _TextBlock, rec: Recorder) -> None:
        joined = "\n".join(block.lines)
        occurred = prompt_time(joined)
        self.turn = occurred  # a prompt starts a turn, dated or not
        text = prompt_text(joined).strip()
        if text:
            rec.add(
                source_identity=self.file.identity, coordinate=f"line:{block.line.number}:text",
                family=Family.MESSAGE, role="user", text=text, injected=self.file.subagent,
                **self.file.common(block.line, occurred, self.turn),
            )

    def _assistant(self, block: _TextBlock, rec: Recorder) -> None:
        common = self.file.common(block.line, None, self.turn)
        texts: list[str] = []
        last_tool: str | None = None
        lines = block.lines
        index = 0
        part = 0
        while index < len(lines):
            stripped = lines[index].strip()
            header = next((h for h in (_TOOL_CALL, _TOOL_RESULT, _THINKING) if stripped.startswith(h)), None)
            if header is None:
                texts.append(lines[index])
                index += 1
                continue
            rest = stripped[len(header):].strip()
            body_start = index = index + 1
            while index < len(lines) and not _body_end(lines[index]):
                index += 1
            body = _dedent(lines[body_start:index])
            part += 1
            if header == _TOOL_CALL:
                last_tool = rest or None
                args = _text_arguments(rest, body)
                rec.add(
                    source_identity=self.file.identity, coordinate=f"line:{block.line.number}:part:{part}",
                    family=Family.TOOL, stage=Stage.REQUESTED, tool_name=last_tool,
                    arguments=encode_arguments(args, AUTHORED_KEYS), **facets(last_tool, args), **common,
                )
            elif header == _TOOL_RESULT:
                rec.add(
                    source_identity=self.file.identity, coordinate=f"line:{block.line.number}:part:{part}",
                    family=Family.TOOL, stage=Stage.RESULT, tool_name=rest or last_tool,
                    result="\n".join(body).strip(), **common,
                )
        text = assistant_text("\n".join(texts))
        if text:
            rec.add(
                source_identity=self.file.identity, coordinate=f"line:{block.line.number}:text",
                family=Family.MESSAGE, role="assistant", text=text, **common,
            )


def _body_end(line: str) -> bool:
    """A structured body is indented or blank; a header or a flush-left line ends it."""
    stripped = line.strip()
    if stripped.startswith((_TOOL_CALL, _TOOL_RESULT, _THINKING)):
        return True
    return bool(stripped) and line[:1] not in (" ", "\t")


def _dedent(lines: list[str]) -> list[str]:
    indents = [len(line) - len(line.lstrip(" \t")) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return [line[cut:] for line in lines]


_args_decoder = msgspec.json.Decoder()


def _text_arguments(tool: str, body: list[str]) -> dict[str, Any] | str | None:
    """A plain-text tool call's arguments: a JSON body, ``key=value`` lines, or the raw text."""
    raw = "\n".join(body).strip()
    if not raw:
        return None
    try:
        value = _args_decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        value = None
    if isinstance(value, dict):
        return value
    pairs: dict[str, Any] = {}
    for item in body:
        if not item.strip():
            continue
        key, sep, val = item.strip().partition("=")
        if not sep or not key.strip():
            return {"patch": raw} if tool.lower() == "applypatch" else raw
        pairs[key.strip()] = val.strip()
    return pairs


# -- adapter ------------------------------------------------------------------------------


def _settled(path: str, now: float) -> bool:
    """Whether a plain-text transcript has been left alone long enough to end its last block."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return now > 0 and st.st_mtime <= now - TEXT_SETTLE_SECONDS


class CursorTranscriptAdapter:
    """Cursor agent transcripts (JSONL and the older plain text)."""

    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        if source.path.endswith(".txt"):
            handler: list[_TextHandler] = []
            settled = _settled(source.path, ctx.now)

            def text_factory(carry: bytes | None) -> _TextHandler:
                handler.append(_TextHandler(source, carry, settled))
                return handler[0]

            def revisit() -> bool:
                return bool(handler) and handler[0].held

            return acquire_lines(source, cursor, ctx, text_factory, revisit=revisit)
        return acquire_lines(source, cursor, ctx, lambda carry: _JsonlHandler(source, carry))
