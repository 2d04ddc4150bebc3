"""Copilot process logs (``logs/copilot/process-*.log``): the ``Accumulated output items`` format.

A log is a sequence of entries: a header line (``<RFC 3339> [LEVEL] message``) followed
by continuation lines without a timestamp. Two control messages drive attribution:

* ``Workspace initialized: <id> (checkpoints: N)`` starts (or reactivates) session
  ``<id>``; only a *trusted* control counts: the message starts the line, bare or after a
  ``<token> [LEVEL]`` prefix, and contains no ``[``, ``]``, ``{`` or ``}``, so text inside
  JSON or tool output cannot forge a boundary.
* ``Session completed.`` (the whole message) clears the active session.

``Accumulated output items (N): [...]`` carries a JSON array of response items; a line
that itself starts with a JSON array counts too. Items are numbered per session (every
item counts, reasoning included; a reactivated session continues its counter) and that
ordinal is the ``sequence``. ``call_id`` is a correlation, never the identity.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.errors import SourceError
from telltale.model import BoundExceeded, Family, Provenance, Quarantine, Stage, encode_arguments, iso_time
from telltale.readers.jsonl import Line
from telltale.sources._jsonl_driver import Out, Recorder, acquire_lines, json_text
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.copilot._tools import CLIENT, PROVIDER, facets
from telltale.sources.spec import Source

KIND = "copilot.process_log"

MARKER = "Accumulated output items"
INIT = "Workspace initialized:"
COMPLETED = "Session completed."
#: Text kept for one entry that carries an array (continuations included).
MAX_ENTRY_BYTES = 32 << 20
#: Sessions whose item counters are carried between scans.
MAX_SESSIONS = 1_024

_PREFIXED = re.compile(r"^(\S+) \[([A-Z]+)\] ?(.*)$", re.DOTALL)
_LEVEL_ONLY = re.compile(r"^\[([A-Z]+)\] ?(.*)$", re.DOTALL)
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_BARE_ARRAY = re.compile(r"^\[\s*(\{|\])")
_FORGERY = re.compile(r"[\[\]{}]")


class _Carry(msgspec.Struct, omit_defaults=True):
    active: str | None = None
    ordinals: dict[str, int] = {}


_carry_decoder = msgspec.json.Decoder(_Carry)
_any_decoder = msgspec.json.Decoder()


def _timestamp(token: str) -> str | None:
    """The line's time when its first token is RFC 3339, else nothing (never invented)."""
    return iso_time(token) if _RFC3339.match(token) else None


class _Entry:
    """One log entry being collected: header line plus its continuation lines."""

    __slots__ = ("collect", "line", "message", "offset", "size", "too_big", "trusted", "ts")

    def __init__(self, line: Line, ts: str | None, message: str, trusted: bool) -> None:
        self.line = line.number
        self.offset = line.offset
        self.ts = ts
        self.trusted = trusted
        # Continuations matter only to an entry carrying an array.
        self.collect = MARKER in message or bool(_BARE_ARRAY.match(message))
        self.message = [message]
        self.size = len(message)
        self.too_big = False

    def extend(self, text: str) -> None:
        if not self.collect or self.too_big:
            return
        self.size += len(text) + 1
        if self.size > MAX_ENTRY_BYTES:
            self.too_big = True
            self.message = self.message[:1]
            return
        self.message.append(text)


def split_header(text: str) -> tuple[bool, str | None, str, bool]:
    """``(is_header, timestamp, message, trusted_position)`` of one physical line."""
    match = _PREFIXED.match(text)
    if match:
        return True, _timestamp(match.group(1)), match.group(3), True
    match = _LEVEL_ONLY.match(text)
    if match:
        return True, None, match.group(2), False
    first, _, rest = text.partition(" ")
    ts = _timestamp(first)
    if ts is not None:
        return True, ts, rest.strip(), False
    if text.startswith((INIT, COMPLETED)) or _BARE_ARRAY.match(text):
        return True, None, text, True
    return False, None, text, False


class _ProcessLogHandler:
    def __init__(self, source: Source, carry: bytes | None) -> None:
        self.source = source
        self.log_name = os.path.basename(source.path)
        state = _Carry()
        if carry:
            try:
                state = _carry_decoder.decode(carry)
            except msgspec.DecodeError:
                state = _Carry()
        self.active = state.active
        self.ordinals: dict[str, int] = dict(list(state.ordinals.items())[-MAX_SESSIONS:])
        self.pending: _Entry | None = None

    # LineHandler protocol
    def resume_point(self) -> tuple[int, int] | None:
        if self.pending is None:
            return None
        return self.pending.offset, self.pending.line - 1

    def carry(self) -> bytes:
        return msgspec.json.encode(_Carry(active=self.active, ordinals=self.ordinals))

    def finish(self, out: Out) -> None:
        entry = self.pending
        if entry is not None and entry.collect and not entry.too_big and not isinstance(
            _decode_array(_array_text("\n".join(entry.message))), list
        ):
            # The last entry's array is not complete yet (the writer may still be adding
            # continuation lines): hold it, resume at its first line next time.
            return
        self._flush(out)

    def handle(self, line: Line, out: Out) -> None:
        if line.data is None:
            # A line over the reader's bound: an array on it cannot be verified.
            self._flush(out)
            out.records_read += 1
            out.quarantined.append(self._quarantine("oversized_line", line.number, line.offset, line.number))
            return
        text = line.data.decode("utf-8", "replace").strip()
        if not text:
            return
        is_header, ts, message, trusted = split_header(text)
        if not is_header:
            if self.pending is not None:
                self.pending.extend(text)
            return
        self._flush(out)
        self.pending = _Entry(line, ts, message, trusted)

    # -- entries -------------------------------------------------------------------------
    def _flush(self, out: Out) -> None:
        entry, self.pending = self.pending, None
        if entry is None:
            return
        out.records_read += 1
        message = "\n".join(entry.message)
        marker = message.find(MARKER)
        control = (message[:marker] if marker >= 0 else entry.message[0]).strip()
        text = _array_text(message)
        if entry.trusted and control.startswith(INIT) and not _FORGERY.search(control):
            session = control[len(INIT) :].split()
            if session:
                self.active = session[0]
                self.ordinals.setdefault(self.active, 0)
                while len(self.ordinals) > MAX_SESSIONS:
                    del self.ordinals[next(iter(self.ordinals))]
        if text is None:
            out.other_records += 1
        else:
            self._items(entry, text, out)
        if control == COMPLETED:
            self.active = None

    def _items(self, entry: _Entry, text: str, out: Out) -> None:
        items = None if entry.too_big else _decode_array(text)
        if not isinstance(items, list):
            reason = "malformed_structured_output" if self.active else "replay_unverifiable"
            out.quarantined.append(self._quarantine(reason, entry.line, entry.offset, entry.line))
            return
        if any(not isinstance(item, dict) for item in items):
            raise SourceError("schema", f"non-object accumulated output item at line {entry.line}")
        session = self.active
        if session is None:
            # Items with no active workspace cannot be attributed to a session.
            out.quarantined.append(self._quarantine("replay_unverifiable", entry.line, entry.offset, entry.line))
            return
        for item in items:
            ordinal = self.ordinals.get(session, 0)
            self.ordinals[session] = ordinal + 1
            rec = Recorder(KIND)
            try:
                self._item(session, ordinal, item, entry, rec)
            except BoundExceeded as err:
                rec.take()
                item_id = item.get("id")
                out.quarantined.append(
                    self._quarantine(
                        "unbounded_value", ordinal, entry.offset, entry.line, session=session,
                        record_id=item_id if isinstance(item_id, str) else None, err=err,
                    )
                )
                continue
            out.observations.extend(rec.take())

    def _item(self, session: str, ordinal: int, item: dict[str, Any], entry: _Entry, rec: Recorder) -> None:
        kind = item.get("type")
        item_id = item.get("id") if isinstance(item.get("id"), str) else None
        identity = f"{CLIENT}:{session}"
        base = f"process:{self.log_name}:item:{ordinal}"
        common: dict[str, Any] = {
            "client": CLIENT,
            "session_id": session,
            "sequence": ordinal,
            "occurred_at": entry.ts,
            "provenance": Provenance(
                source_kind=KIND, path=self.source.path, line=entry.line, offset=entry.offset, record_id=item_id
            ),
        }
        if kind == "function_call":
            name = item.get("name") if isinstance(item.get("name"), str) else "unknown"
            raw_args = item.get("arguments")
            args_text = json_text(raw_args)
            parsed: Any = raw_args
            if isinstance(raw_args, str):
                try:
                    parsed = _any_decoder.decode(raw_args.encode("utf-8"))
                except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):
                    parsed = None
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            provider = item.get("provider") if isinstance(item.get("provider"), str) else PROVIDER
            model = item.get("model") if isinstance(item.get("model"), str) else None
            rec.add(
                source_identity=identity,
                coordinate=base,
                family=Family.TOOL,
                stage=Stage.REQUESTED,
                tool_name=name,
                call_id=call_id,
                arguments=encode_arguments(args_text, ("*",)),
                provider=provider,
                model=model,
                **facets(name, parsed),
                **common,
            )
            result = item.get("message")
            if isinstance(result, str):
                rec.add(
                    source_identity=identity,
                    coordinate=f"{base}:result",
                    family=Family.TOOL,
                    stage=Stage.RESULT,
                    tool_name=name,
                    call_id=call_id,
                    result=result,
                    provider=provider,
                    model=model,
                    **common,
                )
        elif kind == "message":
            if item.get("role") != "assistant":
                return
            text = _message_text(item.get("content"))
            if text:
                rec.add(
                    source_identity=identity,
                    coordinate=base,
                    family=Family.MESSAGE,
                    role="assistant",
                    text=text,
                    provider=PROVIDER,
                    **common,
                )
        elif kind == "reasoning" or not kind:
            return
        else:
            # A new item kind: recorded as present, nothing of its payload is copied.
            rec.add(
                source_identity=identity,
                coordinate=base,
                family=Family.OTHER,
                attributes={"item": "unknown_output_item"},
                **common,
            )

    def _quarantine(
        self,
        reason: str,
        sequence: int,
        offset: int,
        line: int,
        *,
        session: str | None = None,
        record_id: str | None = None,
        err: BoundExceeded | None = None,
    ) -> Quarantine:
        return Quarantine(
            source_kind=KIND,
            path=self.source.path,
            reason=reason,
            session_id=session or self.active,
            record_id=record_id if record_id is not None and len(record_id) <= 256 else None,
            sequence=sequence,
            line=line,
            offset=offset,
            field=err.field if err is not None else None,
            bound=err.bound if err is not None else None,
        )


def _array_text(message: str) -> str | None:
    """The JSON array text of an entry: after the marker, or the entry itself; else ``None``."""
    marker = message.find(MARKER)
    if marker >= 0:
        start = message.find("[", marker + len(MARKER))
        return message[start:] if start >= 0 else ""
    if _BARE_ARRAY.match(message):
        return message
    return None


def _decode_array(text: str | None) -> Any:
    if not text:
        return None
    try:
        return _any_decoder.decode(text.strip().encode("utf-8"))
    except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):
        return None


def _message_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str) and block["text"]
        ]
        return "\n".join(texts) if texts else None
    return None


class CopilotProcessLogAdapter:
    """Copilot CLI process logs in the ``Accumulated output items`` format."""

    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_lines(source, cursor, ctx, lambda carry: _ProcessLogHandler(source, carry))
