"""Codex rollout adapter: one JSONL rollout file in, canonical observations out.

A rollout is read as a stream of complete lines (``JsonlReader``), each decoded with the
typed shapes in :mod:`.wire`. The state that must survive between scans (session
header, current model, pending tool calls, the last cumulative token totals) lives in
the cursor's ``carry`` so that an append read in a later scan maps exactly as if the
whole file had been read at once. See docs/sources/codex.md for every mapping rule and
the ambiguities it resolves.
"""

from __future__ import annotations

import io
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import msgspec
import zstandard

from telltale.errors import SourceError
from telltale.model import (
    AUTHORED_TEXT_BOUND,
    STRING_BOUND,
    BoundExceeded,
    Family,
    Observation,
    ObservationTemplate,
    Provenance,
    Quarantine,
    Stage,
    TokenUsage,
    check_attributes,
    check_bound,
    encode_arguments,
    field_error,
    iso_time,
    make_observation,
    template_observation_id,
)
from telltale.readers.jsonl import MAX_LINE_BYTES, JsonlCursor, JsonlReader, Line, decode_cursor, encode_cursor
from telltale.readers.records import NESTING_TOO_DEEP, decode_guarded, failure_reason
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.codex import facets, wire
from telltale.sources.spec import Source

CLIENT = "codex"
#: Input bytes per batch: a long rollout is committed in windows of about this size.
BATCH_BYTES = 4 << 20
#: Carry bounds: unanswered calls remembered, answered call ids remembered (duplicate
#: results are dropped), and the longest call id tracked at all.
MAX_PENDING = 256
MAX_ANSWERED = 512
MAX_TRACKED_ID = 256
#: Separator of joined text parts (message content, tool-output content arrays).
PART_SEPARATOR = "\n"

#: Top-level argument keys whose string values are authored text (commands, patches,
#: typed input, prompts): they get the authored-text budget.
AUTHORED_KEYS = (
    "command",
    "cmd",
    "chars",
    "input",
    "patch",
    "script",
    "code",
    "prompt",
    "message",
    "content",
    "text",
)
#: Function tools whose arguments carry a shell command line.
SHELL_TOOLS = frozenset({"shell", "shell_command", "exec_command", "container.exec", "local_shell", "unified_exec"})
#: Openings of user-role messages that the harness injected (context, not the user's words).
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
    "<collaboration_mode>",
    "<model_switch>",
    "<subagent_notification>",
    "<skill>",
    "<hook_prompt",
)
_INJECTED_ROLES = frozenset({"developer", "system"})
_TEXT_PARTS = frozenset({"input_text", "output_text"})
_IMAGE_PARTS = frozenset({"input_image"})
_ERROR_STATUSES = frozenset({"failed", "declined"})

_args_encoder = msgspec.json.Encoder(order="deterministic")
_any_decoder = msgspec.json.Decoder()
_envelope_decode = wire.envelope_decoder.decode
_record_decode = wire.record_decoder.decode
_ITEM_CLASSES = wire.ITEM_CLASSES
_EVENT_CLASSES = wire.EVENT_CLASSES
_BOOKKEEPING_CLASSES = wire.BOOKKEEPING_CLASSES
# Decoded payloads are of these exact classes: dispatch compares types, not ``isinstance``.
_Message, _FunctionCall, _CustomToolCall = wire.Message, wire.FunctionCall, wire.CustomToolCall
_TokenCount = wire.TokenCount
_TOOL_OUTPUTS = (wire.FunctionCallOutput, wire.CustomToolCallOutput)
_exit_code_from_text = facets.exit_code_from_text
_shell_command = facets.shell_command
_is_string_list = facets.is_string_list
#: The attributes of every observation that has none: shared, never mutated (as a session's
#: attributes are shared by its observations), so that no empty dict is kept per observation.
_NO_ATTRIBUTES: dict[str, str] = {}
_astuple = msgspec.structs.astuple

#: Strings of at most this many characters are within the ordinary / the authored-text bound.
_SHORT = STRING_BOUND // 4
_SHORT_TEXT = AUTHORED_TEXT_BOUND // 4
_replace = msgspec.structs.replace
# Enum members looked up once: a class attribute lookup on an Enum costs more than a replace field.
_MESSAGE, _TOOL, _USAGE = Family.MESSAGE, Family.TOOL, Family.USAGE
_REQUESTED, _RESULT = Stage.REQUESTED, Stage.RESULT


_oid = template_observation_id
_over = field_error


def _attributes_over(attributes: dict[str, str]) -> BoundExceeded | None:
    try:
        check_attributes(attributes)
    except BoundExceeded as exc:
        return exc
    return None


class _Carry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """State carried between scans in the cursor (bounded by the MAX_* limits)."""

    v: int = 1
    meta: bool = False
    sid: str | None = None
    cwd: str | None = None
    agent: str | None = None
    provider: str | None = None
    model: str | None = None
    parent: str | None = None
    forked_from: str | None = None
    base: int = 0
    last_ordinal: int | None = None
    total: tuple[int | None, int | None, int | None, int | None, int | None, int | None] | None = None
    pending: list[tuple[str, str | None]] = []
    answered: list[str] = []


_carry_decoder = msgspec.json.Decoder(_Carry)
_carry_encoder = msgspec.json.Encoder()

_Totals = tuple[int | None, int | None, int | None, int | None, int | None, int | None]


_CANONICAL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
#: Minutes (``YYYY-MM-DDTHH:MM``) of canonical G2 timestamps that ``iso_time`` returned
#: unchanged: another timestamp of such a minute with a valid ``:SS`` and a ``.mmmZ`` tail
#: needs no parsing (lines are written many per minute). Bounded.
_valid_minutes: dict[str, None] = {}
#: ``:00`` to ``:59``; ``.000Z`` to ``.999Z``.
_SECONDS = frozenset(f":{s:02d}" for s in range(60))
_MILLIS = frozenset(f".{ms:03d}Z" for ms in range(1000))


#: The last timestamp text and its value: consecutive lines often carry the same time.
_last_time: str = ""
_last_value: str | None = None


def _occurred_at(raw: object) -> str | None:
    """``iso_time`` with fast paths for timestamps already in canonical form."""
    global _last_time, _last_value
    if type(raw) is not str:
        return iso_time(raw)
    if raw == _last_time:
        return _last_value
    if len(raw) == 24 and raw[:16] in _valid_minutes and raw[16:19] in _SECONDS and raw[19:] in _MILLIS:
        value: str | None = raw
    elif len(raw) == 24 and _CANONICAL_TIME.fullmatch(raw):
        value = iso_time(raw)
        if value == raw and raw[16:19] in _SECONDS:
            if len(_valid_minutes) >= 4096:
                _valid_minutes.clear()
            _valid_minutes[raw[:16]] = None
    else:
        value = iso_time(raw)
    _last_time, _last_value = raw, value
    return value


def _text(value: object) -> str | None:
    """A header value of the expected type (string), else nothing."""
    return value if isinstance(value, str) else None


def _bounded(value: object) -> str | None:
    """A context string kept in state only when it fits the ordinary bound."""
    if isinstance(value, str) and value and len(value.encode("utf-8", "surrogatepass")) <= STRING_BOUND:
        return value
    return None


def _totals(usage: wire.TokenUsage) -> _Totals:
    # The Struct's fields, in this order (input, cached, cache write, output, reasoning, total).
    return _astuple(usage)


def _usage(t: _Totals) -> TokenUsage:
    """Codex counts in OpenTelemetry meaning: input includes cached, output includes reasoning."""
    return TokenUsage(
        input_tokens=t[0],
        cache_read_input_tokens=t[1],
        cache_creation_input_tokens=t[2],
        output_tokens=t[3],
        reasoning_output_tokens=t[4],
        total_tokens=t[5],
    )


def _difference(now: _Totals, before: _Totals) -> _Totals | None:
    """Per-response usage from two cumulative totals; ``None`` when a total went down."""
    out: list[int | None] = []
    for a, b in zip(now, before, strict=True):
        if a is None or b is None:
            out.append(None if a is None else a)
        elif a < b:
            return None
        else:
            out.append(a - b)
    return (out[0], out[1], out[2], out[3], out[4], out[5])


def _error_field(exc: msgspec.DecodeError) -> str | None:
    """The schema path of a validation error as a quarantine field (``timestamp``), if any."""
    if not isinstance(exc, msgspec.ValidationError):
        return None
    path = _error_path(exc)
    return path[2:] or None if path and path.startswith("$.") else None


def _error_path(exc: msgspec.ValidationError) -> str | None:
    """The schema path of a validation error (``$.content[0].text``), never a value."""
    message = str(exc)
    marker = message.rfind(" - at `")
    if marker < 0:
        return None
    path = message[marker + 7 : -1]
    if len(path) > 128 or not all(c.isalnum() or c in "$._[]" for c in path):
        return None
    return path


class _ZstdStream(io.BufferedReader):
    """A buffered, decompressing reader whose ``fileno`` names the compressed file."""

    def __init__(self, compressed: BinaryIO) -> None:
        reader = zstandard.ZstdDecompressor().stream_reader(compressed, read_across_frames=True, closefd=True)
        super().__init__(reader, buffer_size=1 << 20)
        self._compressed = compressed

    def fileno(self) -> int:
        return self._compressed.fileno()


def open_zstd(path: str) -> BinaryIO:
    """Open a ``.jsonl.zst`` rollout read-only, without following a symlink, decompressing."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    compressed = os.fdopen(os.open(path, flags), "rb", buffering=0)
    return _ZstdStream(compressed)


class _At(msgspec.Struct, gc=False):
    """The native position of the line being mapped."""

    line: int
    offset: int
    sequence: int
    timestamp: Any = None


class _Rollout:
    """Maps the lines of one rollout, keeping the state that crosses lines and scans."""

    def __init__(self, source: Source, carry: _Carry) -> None:
        self.kind = source.kind
        self.path = source.path
        self.meta = carry.meta
        self.sid = carry.sid
        self.cwd = carry.cwd
        self.agent = carry.agent
        self.provider = carry.provider
        self.model = carry.model
        self.parent = carry.parent
        self.forked_from = carry.forked_from
        self.base = carry.base
        self.last_ordinal = carry.last_ordinal
        self.total = carry.total
        # Ordered: the oldest entry goes first when a bound is reached (``popitem(last=False)``).
        self.pending: OrderedDict[str, str | None] = OrderedDict(carry.pending)
        self.answered: OrderedDict[str, None] = OrderedDict.fromkeys(carry.answered)
        self.observations: list[Observation] = []
        self.quarantined: list[Quarantine] = []
        self.records = 0
        self.other = 0
        #: The observation context as a template; ``None`` after a change to it (``_shared``).
        self._template: ObservationTemplate | None = None

    # -- state ----------------------------------------------------------------------
    @property
    def identity(self) -> str:
        # A session id survives a move into archived_sessions; the path does not.
        return f"{CLIENT}:{self.sid}" if self.sid else self.path

    def carry(self) -> bytes:
        return _carry_encoder.encode(
            _Carry(
                meta=self.meta,
                sid=self.sid,
                cwd=self.cwd,
                agent=self.agent,
                provider=self.provider,
                model=self.model,
                parent=self.parent,
                forked_from=self.forked_from,
                base=self.base,
                last_ordinal=self.last_ordinal,
                total=self.total,
                pending=list(self.pending.items()),
                answered=list(self.answered),
            )
        )

    def take(self, cursor: JsonlCursor, window: int, partial: bool) -> Batch:
        batch = Batch(
            observations=self.observations,
            quarantined=self.quarantined,
            cursor=encode_cursor(cursor),
            records_read=self.records,
            other_records=self.other,
            bytes_read=window,
            partial=partial or bool(self.quarantined),
        )
        self.observations, self.quarantined = [], []
        self.records = self.other = 0
        return batch

    # -- output ---------------------------------------------------------------------
    def _quarantine(
        self,
        reason: str,
        at: _At,
        record_id: str | None = None,
        field: str | None = None,
        bound: int | None = None,
    ) -> None:
        self.quarantined.append(
            Quarantine(
                source_kind=self.kind,
                path=self.path,
                reason=reason,
                session_id=self.sid,
                record_id=_bounded(record_id),
                sequence=at.sequence,
                line=at.line,
                offset=at.offset,
                field=field,
                bound=bound,
            )
        )

    def _emit(self, family: Family, coordinate: str, at: _At, record_id: str | None, **fields: Any) -> bool:
        # Context from the session header and the current turn; only the session
        # observation passes its own agent, provider and cwd.
        fields["session_id"] = self.sid
        fields["model"] = self.model
        fields["occurred_at"] = _occurred_at(at.timestamp)
        if "cwd" not in fields:
            fields["agent"] = self.agent
            fields["provider"] = self.provider
            fields["cwd"] = self.cwd
        if record_id is not None and len(record_id) > MAX_TRACKED_ID:
            record_id = _bounded(record_id)
        try:
            observation = make_observation(
                adapter=CLIENT,
                source_identity=self.identity,
                coordinate=coordinate,
                family=family,
                client=CLIENT,
                source_kind=self.kind,
                sequence=at.sequence,
                provenance=Provenance(
                    source_kind=self.kind, path=self.path, line=at.line, offset=at.offset, record_id=record_id
                ),
                **fields,
            )
        except BoundExceeded as exc:
            self._quarantine("unbounded_value", at, record_id, exc.field, exc.bound)
            return False
        self.observations.append(observation)
        return True

    # The frequent observations are the current context's template with the line's and the
    # fact's own fields set (``msgspec.structs.replace``): far cheaper than passing every field
    # to ``make_observation``, with the same ids and the same bound errors in the same order
    # (the fact's own strings, then the context's fields, then the attributes; see ``_emit``
    # for the keyword order they reproduce and ``ObservationTemplate``).
    def _shared(self) -> ObservationTemplate:
        """The session header's and the current turn's fields (``_template`` is reset to
        ``None`` wherever ``sid``, ``model``, ``agent``, ``provider`` or ``cwd`` change)."""
        template = self._template
        if template is None:
            template = self._template = ObservationTemplate(
                CLIENT,
                self.identity,
                client=CLIENT,
                source_kind=self.kind,
                session_id=self.sid,
                model=self.model,
                agent=self.agent,
                provider=self.provider,
                cwd=self.cwd,
            )
        return template

    def _emit_message(
        self,
        coordinate: str,
        at: _At,
        record_id: str | None,
        role: str,
        text: str | None,
        injected: bool,
        attributes: dict[str, str],
    ) -> None:
        t = self._template or self._shared()
        err = _over("role", role) if len(role) > _SHORT else None
        if err is None and text is not None and len(text) > _SHORT_TEXT:
            err = _over("text", text)
        if err is None:
            err = t.error
        if err is None and attributes:
            err = _attributes_over(attributes)
        if record_id is not None and len(record_id) > MAX_TRACKED_ID:
            record_id = _bounded(record_id)
        if err is not None:
            self._quarantine("unbounded_value", at, record_id, err.field, err.bound)
            return
        self.observations.append(
            _replace(
                t.observation,
                observation_id=_oid(t, coordinate),
                family=_MESSAGE,
                sequence=at.sequence,
                provenance=Provenance(
                    source_kind=self.kind, path=self.path, line=at.line, offset=at.offset, record_id=record_id
                ),
                occurred_at=_occurred_at(at.timestamp),
                role=role,
                text=text,
                injected=injected,
                attributes=attributes or _NO_ATTRIBUTES,
            )
        )

    def _emit_usage(self, coordinate: str, at: _At, usage: TokenUsage) -> None:
        t = self._template or self._shared()
        if t.error is not None:
            self._quarantine("unbounded_value", at, None, t.error.field, t.error.bound)
            return
        self.observations.append(
            _replace(
                t.observation,
                observation_id=_oid(t, coordinate),
                family=_USAGE,
                sequence=at.sequence,
                provenance=Provenance(source_kind=self.kind, path=self.path, line=at.line, offset=at.offset),
                occurred_at=_occurred_at(at.timestamp),
                usage=usage,
            )
        )

    def _emit_tool(
        self,
        coordinate: str,
        at: _At,
        record_id: str | None,
        requested: bool,
        name: str | None,
        call_id: str | None,
        text: str | None,
        attributes: dict[str, str],
        command: str | None = None,
        file_path: str | None = None,
        url: str | None = None,
        exit_code: int | None = None,
        is_error: bool | None = None,
        interrupted: bool = False,
    ) -> None:
        """A requested call (``text`` is its arguments) or a result (``text`` is the result)."""
        t = self._template or self._shared()
        err = None
        if (
            (name is not None and len(name) > _SHORT)
            or (call_id is not None and len(call_id) > _SHORT)
            or (text is not None and len(text) > _SHORT_TEXT)
            or (command is not None and len(command) > _SHORT_TEXT)
            or (file_path is not None and len(file_path) > _SHORT)
            or (url is not None and len(url) > _SHORT)
        ):
            # make_observation's keyword order: the first field over its bound is named.
            for field, value in (
                ("tool_name", name),
                ("call_id", call_id),
                ("arguments" if requested else "result", text),
                ("command", command),
                ("file_path", file_path),
                ("url", url),
            ):
                if value is not None and (err := _over(field, value)) is not None:
                    break
        if err is None:
            err = t.error
        if err is None and attributes:
            err = _attributes_over(attributes)
        if record_id is not None and len(record_id) > MAX_TRACKED_ID:
            record_id = _bounded(record_id)
        if err is not None:
            self._quarantine("unbounded_value", at, record_id, err.field, err.bound)
            return
        base = t.observation
        oid = _oid(t, coordinate)
        provenance = Provenance(
            source_kind=self.kind, path=self.path, line=at.line, offset=at.offset, record_id=record_id
        )
        occurred_at = _occurred_at(at.timestamp)
        if requested:
            observation = _replace(
                base,
                observation_id=oid,
                family=_TOOL,
                sequence=at.sequence,
                provenance=provenance,
                occurred_at=occurred_at,
                stage=_REQUESTED,
                tool_name=name,
                call_id=call_id,
                arguments=text,
                attributes=attributes or _NO_ATTRIBUTES,
                command=command,
                file_path=file_path,
                url=url,
            )
        else:
            observation = _replace(
                base,
                observation_id=oid,
                family=_TOOL,
                sequence=at.sequence,
                provenance=provenance,
                occurred_at=occurred_at,
                stage=_RESULT,
                tool_name=name,
                call_id=call_id,
                result=text,
                exit_code=exit_code,
                is_error=is_error,
                interrupted=interrupted,
                attributes=attributes or _NO_ATTRIBUTES,
                file_path=file_path,
            )
        self.observations.append(observation)

    # -- lines ----------------------------------------------------------------------
    def handle(self, line: Line) -> None:
        data = line.data
        if data is not None:
            # The frequent G2 records in one decoding pass (see ``wire.RecordLine``); any
            # other line, or a failure, takes the two-step path below.
            try:
                rec = _record_decode(data)
            except (msgspec.DecodeError, RecursionError):
                rec = None  # the two-step path below tells what is wrong with the line
            if rec is not None:
                kind = rec.type
                payload = rec.payload
                cls = type(payload)
                if kind == "response_item":
                    fast = cls in _ITEM_CLASSES
                elif kind == "event_msg":
                    fast = cls in _EVENT_CLASSES
                else:
                    fast = False
                if fast:
                    self.records += 1
                    if rec.ordinal is None and (
                        cls in _BOOKKEEPING_CLASSES or (cls is _TokenCount and self._token_repeat(payload))
                    ):
                        self.other += 1  # all that a bookkeeping payload or a repeated total does
                        return
                    at = _At(line.number, line.offset, self.base + line.number - 1)
                    if rec.ordinal is not None:
                        self._explicit_ordinal(rec.ordinal, at)
                    at.timestamp = rec.timestamp
                    if kind == "response_item":
                        self._item(payload, at, rec.metadata or None)
                    else:
                        self._event_of(payload, at)
                    return
        if data is None:
            self.records += 1
            self._quarantine("oversized_line", _At(line.number, line.offset, self.base + line.number - 1))
            return
        try:
            env = decode_guarded(_envelope_decode, data)
        except msgspec.DecodeError as exc:
            if not data or data.isspace():
                return  # a blank line is not a record (and never decodes)
            # One line that is not a rollout record object (an array, a string, a number
            # out of range, nesting too deep, not JSON) is that line's problem only.
            self.records += 1
            at = _At(line.number, line.offset, self.base + line.number - 1)
            self._quarantine(failure_reason(data, exc), at, field=_error_field(exc))
            return
        self.records += 1
        at = _At(line.number, line.offset, self.base + line.number - 1)
        if env.ordinal is not None:
            self._explicit_ordinal(env.ordinal, at)
        if env.payload:
            at.timestamp = env.timestamp
            self._g2(env, at, line)
        else:
            self._g1(env, data, at, line)

    def too_deep(self, line: Line) -> None:
        self._quarantine(NESTING_TOO_DEEP, _At(line.number, line.offset, self.base + line.number - 1))

    def _explicit_ordinal(self, ordinal: object, at: _At) -> None:
        if type(ordinal) is not int or ordinal < 0:
            raise SourceError("coordinate", f"line {at.line}: ordinal is not a non-negative integer")
        if self.last_ordinal is not None and ordinal <= self.last_ordinal:
            raise SourceError("coordinate", f"line {at.line}: ordinal does not increase")
        self.last_ordinal = ordinal
        at.sequence = ordinal

    def _g2(self, env: wire.Envelope, at: _At, line: Line) -> None:
        kind = env.type
        payload = env.payload
        if kind == "response_item":
            self._response_item(payload, at, env.metadata or None)
        elif kind == "event_msg":
            self._event(payload, at)
        elif kind == "turn_context":
            self._turn_context(payload, at)
        elif kind == "session_meta":
            self._session_meta(payload, at, line, env.ordinal is not None)
        elif kind in wire.BOOKKEEPING_RECORDS:
            self.other += 1
        elif kind is None:
            self._quarantine("unknown_record_type", at, field="type")
        else:
            self._quarantine("unknown_record_type", at, field="type")

    def _g1(self, env: wire.Envelope, data: bytes, at: _At, line: Line) -> None:
        """Legacy bare JSONL: a header line, bare response items, ``record_type`` markers."""
        if env.record_type is not None:
            if env.record_type == "state":
                self.other += 1
            else:
                self._quarantine("unknown_record_type", at, field="record_type")
        elif env.type is not None:
            self._response_item(data, at, None)
        elif env.id is not None:
            self._session_meta(data, at, line, False)
        else:
            self._quarantine("unknown_record_type", at, field="type")

    def _classify(self, raw: bytes, exc: msgspec.ValidationError, known: frozenset[str], at: _At, field: str) -> None:
        """A payload that did not decode: an unknown tag, or a known record that is malformed."""
        try:
            head = decode_guarded(wire.kind_decoder.decode, raw)
        except msgspec.DecodeError as inner:
            self._undecodable(inner, raw, at, field)
            return
        record_id = head.id if isinstance(head.id, str) else None
        if not isinstance(head.type, str) or head.type not in known:
            self._quarantine("unknown_record_type", at, record_id, field=field)
        else:
            path = _error_path(exc)
            self._quarantine("schema_mismatch", at, record_id, field=f"{field}{path[1:] if path else ''}")

    def _undecodable(self, exc: msgspec.DecodeError, raw: bytes, at: _At, field: str | None = None) -> None:
        """A payload that is not an object, not JSON or not UTF-8: the line is quarantined,
        never echoed."""
        if isinstance(exc, msgspec.ValidationError) and failure_reason(raw, exc) == "schema_mismatch":
            self._quarantine("schema_mismatch", at, field=field)
            return
        self._quarantine(failure_reason(raw, exc), at, field=field)

    def _malformed(self, raw: bytes, exc: msgspec.ValidationError, at: _At, field: str) -> None:
        """A known record whose payload does not have the documented shape."""
        try:
            decode_guarded(wire.kind_decoder.decode, raw)
        except msgspec.DecodeError as inner:
            self._undecodable(inner, raw, at, field)
            return
        path = _error_path(exc)
        self._quarantine("schema_mismatch", at, field=f"{field}{path[1:] if path else ''}")

    # -- session_meta / turn_context -----------------------------------------------
    def _session_meta(self, raw: bytes, at: _At, line: Line, explicit_ordinal: bool) -> None:
        try:
            meta = decode_guarded(wire.meta_decoder.decode, raw)
        except msgspec.DecodeError as exc:
            if self.meta:
                # The rollout's identity is already known: a later malformed header is one
                # bad line, not a reason to doubt the rest.
                self._undecodable(exc, raw, at, "session_meta")
                return
            raise SourceError("wrapper", f"line {at.line}: session_meta is malformed") from exc
        sid = meta.id if isinstance(meta.id, str) and meta.id else None
        if meta.subagent_history_start_ordinal is not None:
            # The rollout starts with a copy of the parent's history; which records are
            # the subagent's own cannot be told apart safely here (CODEX-6).
            raise SourceError("ownership", "subagent_history_start_ordinal is not supported")
        if self.meta:
            if sid is None or sid == self.sid or sid == self.forked_from:
                # A repeated header, or the parent header a pre-history_base fork copies.
                self.other += 1
                return
            raise SourceError("ownership", f"line {at.line}: a second session_meta names another session")
        self.meta = True
        self._history_base(meta.history_base, at, line, explicit_ordinal)
        self._template = None
        self.sid = _bounded(sid)
        self.cwd = _bounded(meta.cwd)
        self.provider = _bounded(meta.model_provider)
        self.model = _bounded(meta.model) or self.model
        self.forked_from = _bounded(meta.forked_from_id)
        nickname, role, spawn_parent = _text(meta.agent_nickname), _text(meta.agent_role), None
        source_label: str | None = meta.source if isinstance(meta.source, str) else None
        if isinstance(meta.source, dict) and "subagent" in meta.source:
            source_label = "subagent"
            spawn = meta.source["subagent"]
            spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
            if isinstance(spawn, dict):
                nickname = nickname or _text(spawn.get("agent_nickname"))
                role = role or _text(spawn.get("agent_role"))
                spawn_parent = spawn.get("parent_thread_id")
        self.agent = _bounded(nickname) or ("codex-headless" if source_label == "exec" else "codex")
        self.parent = _bounded(meta.parent_thread_id) or _bounded(spawn_parent) or self.forked_from
        attributes = {
            k: v
            for k, v in (
                ("originator", meta.originator),
                ("cli_version", meta.cli_version),
                ("source", source_label),
                ("thread_source", meta.thread_source),
                ("agent_role", role),
                ("forked_from_id", self.forked_from),
            )
            if isinstance(v, str) and v
        }
        if meta.history_base is not None:
            attributes["history_base_thread_id"] = meta.history_base["thread_id"]
            attributes["history_base_end_ordinal"] = str(self.base)
        if at.timestamp is None:
            at.timestamp = meta.timestamp
        self._emit(
            Family.SESSION,
            f"off:{at.offset}:session",
            at,
            self.sid,
            cwd=_text(meta.cwd),
            agent=self.agent,
            provider=_text(meta.model_provider),
            parent_session_id=self.parent,
            attributes=attributes,
        )

    def _history_base(self, base: object, at: _At, line: Line, explicit_ordinal: bool) -> None:
        """A fork's ordinals continue from its parent's ``end_ordinal_exclusive`` (CODEX-4)."""
        if base is None:
            return
        if not isinstance(base, dict):
            raise SourceError("coordinate", "history_base is malformed")
        thread = base.get("thread_id")
        end = base.get("end_ordinal_exclusive")
        offset = base.get("end_byte_offset")
        if (
            not isinstance(thread, str)
            or not thread
            or len(thread) > MAX_TRACKED_ID
            or type(end) is not int
            or end < 1
            or type(offset) is not int
            or offset < 0
        ):
            raise SourceError("coordinate", "history_base is malformed")
        if line.number != 1:
            raise SourceError("coordinate", "history_base outside the first line")
        self.base = end
        if not explicit_ordinal:
            at.sequence = end + line.number - 1

    def _turn_context(self, raw: bytes, at: _At) -> None:
        """Bookkeeping, but its model applies to the observations that follow."""
        try:
            context = decode_guarded(wire.turn_context_decoder.decode, raw)
        except msgspec.ValidationError as exc:
            self._malformed(raw, exc, at, "turn_context")
            return
        except msgspec.DecodeError as exc:
            self._undecodable(exc, raw, at)
            return
        self.other += 1
        model = _bounded(context.model) or self.model
        cwd = _bounded(context.cwd) or self.cwd
        provider = _bounded(context.model_provider) or self.provider
        if model != self.model or cwd != self.cwd or provider != self.provider:
            self._template = None
            self.model, self.cwd, self.provider = model, cwd, provider

    # -- response items --------------------------------------------------------------
    def _response_item(self, raw: bytes, at: _At, metadata: msgspec.Raw | None) -> None:
        try:
            item = decode_guarded(wire.item_decoder.decode, raw)
        except msgspec.ValidationError as exc:
            self._classify(raw, exc, wire.KNOWN_ITEM_TAGS, at, "response_item")
            return
        except msgspec.DecodeError as exc:
            self._undecodable(exc, raw, at)
            return
        self._item(item, at, metadata)

    def _item(self, item: Any, at: _At, metadata: msgspec.Raw | None) -> None:
        cls = type(item)
        if cls in _TOOL_OUTPUTS:
            self._tool_output(item.call_id, item.output, at)
        elif cls is _FunctionCall:
            self._function_call(item, at)
        elif cls is _Message:
            self._message(item, at, metadata)
        elif cls in _BOOKKEEPING_CLASSES:
            self.other += 1
        elif cls is _CustomToolCall:
            self._custom_tool_call(item, at)
        elif isinstance(item, wire.LocalShellCall):
            self._local_shell_call(item, at)
        elif isinstance(item, wire.WebSearchCall):
            self._web_search_call(item, at)
        elif isinstance(item, wire.ToolSearchCall):
            self._requested(
                at,
                "tool_search",
                item.call_id,
                item.id,
                lambda: encode_arguments(item.arguments, AUTHORED_KEYS),
                {"execution": item.execution} if item.execution else {},
            )
        elif isinstance(item, wire.ToolSearchOutput):
            self._result(
                at,
                item.call_id,
                lambda: _args_encoder.encode(item.tools).decode("utf-8") if item.tools is not None else None,
            )
        elif isinstance(item, wire.ImageGenerationCall):
            self._requested(
                at,
                "image_generation",
                None,
                item.id,
                lambda: (
                    encode_arguments({"revised_prompt": item.revised_prompt}, ["revised_prompt"])
                    if item.revised_prompt is not None
                    else None
                ),
                {},
            )
        else:
            self.other += 1

    def _message(self, item: wire.Message, at: _At, metadata: msgspec.Raw | None) -> None:
        texts: list[str] = []
        images = 0
        for part in item.content or ():
            if part.type in _TEXT_PARTS:
                if part.text:
                    texts.append(part.text)
            elif part.type in _IMAGE_PARTS:
                images += 1
            else:
                self._quarantine("unknown_content_block", at, item.id, field="content[].type")
                return
        text = PART_SEPARATOR.join(texts) if texts else None
        role = item.role
        injected = role in _INJECTED_ROLES or (
            role == "user" and text is not None and text.lstrip().startswith(INJECTED_PREFIXES)
        )
        attributes: dict[str, str] = {}
        if metadata is not None:
            try:
                harness = wire.harness_decoder.decode(metadata)
            except (msgspec.DecodeError, RecursionError):
                harness = wire.HarnessMetadata()
            if harness.inherited_user_message:
                injected = True
                attributes["inherited"] = "true"
            if harness.compaction_output:
                injected = True
                attributes["compaction_output"] = "true"
        if item.phase:
            attributes["phase"] = item.phase
        if images:
            attributes["images"] = str(images)
        coordinate = f"item:{item.id}" if item.id else f"off:{at.offset}:message"
        self._emit_message(coordinate, at, item.id, role, text, injected, attributes)

    # -- tool calls ------------------------------------------------------------------
    def _track(self, call_id: str | None, name: str | None) -> None:
        if call_id and len(call_id) <= MAX_TRACKED_ID and call_id not in self.answered:
            # The carry stays small: an absurdly long tool name is not remembered.
            self.pending[call_id] = name if name is None or len(name) <= MAX_TRACKED_ID else None
            if len(self.pending) > MAX_PENDING:
                self.pending.popitem(last=False)

    def _requested(
        self,
        at: _At,
        name: str,
        call_id: str | None,
        item_id: str | None,
        arguments: Any,
        attributes: dict[str, str],
        command: str | None = None,
        file_path: str | None = None,
        url: str | None = None,
    ) -> None:
        """One requested tool call. ``arguments`` is called here so bound errors quarantine."""
        self._track(call_id, name)
        if call_id:
            coordinate = f"call:{call_id}:requested"
        elif item_id:
            coordinate = f"item:{item_id}:requested"
        else:
            coordinate = f"off:{at.offset}:requested"
        try:
            encoded = arguments()
        except BoundExceeded as exc:
            self._quarantine("unbounded_value", at, call_id or item_id, exc.field, exc.bound)
            return
        self._emit_tool(
            coordinate, at, call_id or item_id, True, name, call_id, encoded, attributes, command, file_path, url
        )

    def _function_call(self, item: wire.FunctionCall, at: _At) -> None:
        raw = item.arguments
        parsed: Any = raw
        attributes: dict[str, str] = {}
        if item.namespace:
            attributes["namespace"] = item.namespace
        if isinstance(raw, str):
            try:
                parsed = _any_decoder.decode(raw)
            except (msgspec.DecodeError, RecursionError):
                parsed = None
                attributes["arguments_format"] = "text"
        command = file_path = url = None
        encode: Callable[[], str | None]
        if isinstance(parsed, dict):
            command, file_path, url = self._facets(item.name, parsed, attributes)
            encode = lambda: _encode_dict(parsed)  # noqa: E731
        elif isinstance(raw, str):
            # Free text, or JSON that is not an object: kept verbatim as authored input.
            encode = lambda: encode_arguments(raw, ["*"])  # noqa: E731
        else:
            encode = lambda: encode_arguments(raw, AUTHORED_KEYS)  # noqa: E731
        self._requested(at, item.name, item.call_id, item.id, encode, attributes, command, file_path, url)

    def _facets(
        self, name: str, args: dict[str, Any], attributes: dict[str, str]
    ) -> tuple[str | None, str | None, str | None]:
        """The command line, file path and URL of a function call's decoded arguments."""
        command = file_path = None
        if name in SHELL_TOOLS:
            command = _shell_command(args)
            argv = args.get("command")
            if _is_string_list(argv) and len(argv) == 2 and argv[0] == "apply_patch":
                file_path = self._patch_facets(argv[1], attributes)
        elif name == "apply_patch":
            patch = args.get("input", args.get("patch"))
            if isinstance(patch, str):
                file_path = self._patch_facets(patch, attributes)
        if file_path is None:
            path = args.get("path", args.get("file_path"))
            if isinstance(path, str):
                file_path = path
        url = args.get("url")
        return command, file_path, url if isinstance(url, str) else None

    @staticmethod
    def _patch_facets(patch: str, attributes: dict[str, str]) -> str | None:
        """The first path a patch touches (its file path facet); the count and list go in attributes."""
        paths = facets.patch_paths(patch)
        if not paths:
            return None
        attributes["path_count"] = str(len(paths))
        listed = facets.listed_paths(paths, STRING_BOUND)
        if listed is not None:
            attributes["paths"] = listed
        return paths[0]

    def _custom_tool_call(self, item: wire.CustomToolCall, at: _At) -> None:
        """Freeform tools (apply_patch, code-mode exec): the input is authored text (CODEX-9)."""
        attributes: dict[str, str] = {"input_format": "freeform"}
        text = item.input
        file_path = self._patch_facets(text, attributes) if item.name == "apply_patch" and text else None
        self._requested(
            at,
            item.name,
            item.call_id,
            item.id,
            lambda: encode_arguments(text, ["*"]),
            attributes,
            file_path=file_path,
        )

    def _local_shell_call(self, item: wire.LocalShellCall, at: _At) -> None:
        action = item.action
        args: dict[str, Any] = {}
        command = None
        if action is not None:
            args = {
                k: v
                for k, v in (
                    ("type", action.type),
                    ("command", action.command),
                    ("working_directory", action.working_directory),
                    ("timeout_ms", action.timeout_ms),
                )
                if v is not None
            }
            if action.command:
                command = facets.command_line(action.command)
        call_id = item.call_id or item.id
        self._requested(
            at,
            "local_shell",
            call_id,
            item.id,
            lambda: _encode_dict(args) if args else None,
            {},
            command=command,
        )

    def _web_search_call(self, item: wire.WebSearchCall, at: _At) -> None:
        action = item.action
        args: dict[str, Any] = {}
        attributes: dict[str, str] = {}
        url = None
        if action is not None:
            args = {
                k: v
                for k, v in (
                    ("type", action.type),
                    ("query", action.query),
                    ("queries", action.queries),
                    ("url", action.url),
                    ("pattern", action.pattern),
                )
                if v is not None
            }
            url = action.url
            if action.type:
                attributes["action"] = action.type
            if action.query:
                attributes["query"] = action.query
            if action.pattern:
                attributes["pattern"] = action.pattern
        self._requested(
            at,
            "web_search",
            None,
            item.id,
            lambda: encode_arguments(args) if args else None,
            attributes,
            url=url,
        )

    # -- tool results ----------------------------------------------------------------
    def _result(
        self,
        at: _At,
        call_id: str | None,
        result: Any,
        *,
        exit_code: int | None = None,
        is_error: bool | None = None,
        interrupted: bool = False,
        default_name: str | None = None,
        attributes: dict[str, str] | None = None,
        file_path: str | None = None,
    ) -> None:
        """One tool result, joined to its call's tool name; a second result for a call is dropped."""
        if call_id and call_id in self.answered:
            self.other += 1
            return
        name = self.pending.pop(call_id, None) if call_id else None
        if call_id and len(call_id) <= MAX_TRACKED_ID:
            self.answered[call_id] = None
            if len(self.answered) > MAX_ANSWERED:
                self.answered.popitem(last=False)
        coordinate = f"call:{call_id}:result" if call_id else f"off:{at.offset}:result"
        try:
            text = result() if callable(result) else result
        except BoundExceeded as exc:
            self._quarantine("unbounded_value", at, call_id, exc.field, exc.bound)
            return
        self._emit_tool(
            coordinate,
            at,
            call_id,
            False,
            name or default_name,
            call_id,
            text,
            attributes or {},
            file_path=file_path,
            exit_code=exit_code,
            is_error=is_error,
            interrupted=interrupted,
        )

    def _tool_output(self, call_id: str | None, output: wire.Output, at: _At) -> None:
        """``function_call_output`` / ``custom_tool_call_output``: text, parts, or G1 JSON text."""
        exit_code: int | None = None
        is_error: bool | None = None
        attributes: dict[str, str] = {}
        result: str | None
        if isinstance(output, str):
            result = output
            if output.startswith('{"output"'):
                try:
                    shaped = wire.exec_output_decoder.decode(output)
                except (msgspec.DecodeError, RecursionError):
                    shaped = None
                if shaped is not None:
                    result = shaped.output
                    exit_code = shaped.metadata.exit_code if shaped.metadata else None
            else:
                exit_code = _exit_code_from_text(output)
        elif isinstance(output, list):
            texts: list[str] = []
            images = 0
            for part in output:
                if part.type in _TEXT_PARTS:
                    if part.text:
                        texts.append(part.text)
                elif part.type in _IMAGE_PARTS:
                    images += 1
                else:
                    self._quarantine("unknown_content_block", at, call_id, field="output[].type")
                    return
            # An all-text array is one direct result (CODEX-10); images are only counted.
            result = PART_SEPARATOR.join(texts) if texts else None
            if images:
                attributes["images"] = str(images)
        elif isinstance(output, wire.OutputObject):
            result = output.content
            if output.success is False:
                is_error = True
        else:
            result = None
        self._result(at, call_id, result, exit_code=exit_code, is_error=is_error, attributes=attributes)

    # -- event_msg -------------------------------------------------------------------
    def _event(self, raw: bytes, at: _At) -> None:
        try:
            event = decode_guarded(wire.event_decoder.decode, raw)
        except msgspec.ValidationError as exc:
            self._classify(raw, exc, wire.KNOWN_EVENT_TAGS, at, "event_msg")
            return
        except msgspec.DecodeError as exc:
            self._undecodable(exc, raw, at)
            return
        self._event_of(event, at)

    def _event_of(self, event: Any, at: _At) -> None:
        if type(event) is _TokenCount:
            self._token_count(event, at)
        elif isinstance(event, wire.BookkeepingEvent):
            self.other += 1
        elif isinstance(event, wire.TurnAborted):
            self.other += 1
            self._interrupt(event, at)
        elif isinstance(event, wire.ItemCompleted):
            self._item_completed(event, at)
        elif isinstance(event, wire.ExecCommandEnd):
            self._result(
                at,
                event.call_id,
                event.aggregated_output,
                exit_code=event.exit_code,
            )
        else:
            self.other += 1

    def _token_repeat(self, event: wire.TokenCount) -> bool:
        """The cases where ``_token_count`` only counts the record (no total, or the same one)."""
        info = event.info
        if info is None:
            return True
        total = info.total_token_usage
        if total is None:
            return info.last_token_usage is None
        return self.total is not None and _totals(total) == self.total

    def _token_count(self, event: wire.TokenCount, at: _At) -> None:
        """One usage observation per model response; cumulative repeats emit nothing."""
        info = event.info
        if info is None or (info.total_token_usage is None and info.last_token_usage is None):
            self.other += 1
            return
        total = _totals(info.total_token_usage) if info.total_token_usage is not None else None
        if total is not None and total == self.total:
            self.other += 1
            return
        usage: _Totals | None = None
        if info.last_token_usage is not None:
            usage = _totals(info.last_token_usage)
        elif total is not None and self.total is not None:
            usage = _difference(total, self.total)
        elif total is not None and self.base == 0:
            usage = total
        if total is not None:
            self.total = total
        if usage is None or usage.count(None) == len(usage):
            self.other += 1
            return
        self._emit_usage(f"off:{at.offset}:usage", at, _usage(usage))

    def _interrupt(self, event: wire.TurnAborted, at: _At) -> None:
        """Every call still waiting for its result was interrupted with the turn."""
        attributes = {"abort_reason": event.reason} if isinstance(event.reason, str) and event.reason else {}
        for call_id in list(self.pending):
            self._result(at, call_id, None, interrupted=True, attributes=dict(attributes))

    def _item_completed(self, event: wire.ItemCompleted, at: _At) -> None:
        if event.thread_id is not None and self.sid is not None and event.thread_id != self.sid:
            # A parent rollout's copy of a subagent's item: the subagent's own rollout has it.
            head = _item_head(event.item)
            self._quarantine("foreign_thread_item", at, head, field="thread_id")
            return
        try:
            item = decode_guarded(wire.turn_decoder.decode, event.item)
        except msgspec.ValidationError as exc:
            self._classify(bytes(event.item), exc, wire.KNOWN_TURN_TAGS, at, "item")
            return
        except msgspec.DecodeError as exc:
            self._undecodable(exc, bytes(event.item), at, "item")
            return
        if isinstance(item, wire.CommandExecution):
            output = item.aggregated_output if item.aggregated_output is not None else item.aggregated_output_camel
            exit_code = item.exit_code if item.exit_code is not None else item.exit_code_camel
            self._result(
                at,
                item.id,
                output,
                exit_code=exit_code,
                is_error=True if item.status in _ERROR_STATUSES else None,
            )
        elif isinstance(item, wire.FileChange):
            self._file_change(item, at)
        elif isinstance(item, wire.UnsupportedTurn):
            self._quarantine("unsupported_completed_item", at, item.id, field="item.type")
        else:
            self.other += 1

    def _file_change(self, item: wire.FileChange, at: _At) -> None:
        """One result with field-labelled patch evidence; it claims nothing about file state."""
        entries: list[tuple[str, str, str | None, str | None, str | None]] = []
        changes = item.changes
        if isinstance(changes, dict):
            for path, change in changes.items():
                entries.append((path, change.type or "update", change.move_path, change.unified_diff, change.content))
        elif isinstance(changes, list):
            for entry in changes:
                kind = entry.kind
                kind_type = kind.get("type") if isinstance(kind, dict) else kind
                move = kind.get("move_path") if isinstance(kind, dict) else None
                entries.append(
                    (entry.path, str(kind_type or "update"), move if isinstance(move, str) else None, entry.diff, None)
                )
        blocks: list[str] = []
        for path, kind, move, diff, content in entries:
            block = [f"path: {path}", f"kind: {kind}"]
            if move:
                block.append(f"move_path: {move}")
            if diff is not None:
                block.append(f"diff:\n{diff}")
            if content is not None:
                block.append(f"content:\n{content}")
            blocks.append("\n".join(block))
        paths = [e[0] for e in entries]
        attributes: dict[str, str] = {"change_count": str(len(entries))}
        kinds = ",".join(dict.fromkeys(e[1] for e in entries))
        if kinds:
            attributes["kinds"] = kinds
        if item.status:
            attributes["status"] = item.status
        listed = facets.listed_paths(paths, STRING_BOUND)
        if listed is not None:
            attributes["paths"] = listed
        self._result(
            at,
            item.id,
            "\n\n".join(blocks) if blocks else None,
            is_error=True if item.status in _ERROR_STATUSES else None,
            default_name="apply_patch",
            attributes=attributes,
            file_path=paths[0] if paths else None,
        )


def _item_head(raw: msgspec.Raw) -> str | None:
    try:
        head = wire.kind_decoder.decode(raw)
    except msgspec.DecodeError:
        return None
    return head.id if isinstance(head.id, str) else None


def _encode_dict(args: dict[str, Any]) -> str | None:
    """Arguments JSON with authored budgets; an argv ``command`` array counts as authored."""
    command = args.get("command")
    if _is_string_list(command):
        for part in command:
            check_bound("arguments.command[]", part, AUTHORED_TEXT_BOUND)
        encode_arguments({k: v for k, v in args.items() if k != "command"}, AUTHORED_KEYS)
        return _args_encoder.encode(args).decode("utf-8")
    return encode_arguments(args, AUTHORED_KEYS)


def _prior_state(cursor: bytes | None, ctx: AcquireContext) -> tuple[JsonlCursor | None, _Carry]:
    """The committed cursor and its carry; a cursor whose carry is unreadable is dropped."""
    prior = decode_cursor(cursor) if ctx.history is HistoryMode.INCREMENTAL else None
    if prior is None or prior.offset == 0:
        return prior, _Carry()
    if prior.carry is None:
        return None, _Carry()
    try:
        return prior, _carry_decoder.decode(bytes(prior.carry))
    except msgspec.DecodeError:
        return None, _Carry()


class CodexAdapter:
    """Source-owned extractor for Codex rollouts; one instance serves one source kind."""

    kind = CLIENT
    #: Lines longer than this are quarantined unread (``oversized_line``).
    max_line_bytes = MAX_LINE_BYTES

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior, carry = _prior_state(cursor, ctx)
        compressed = source.path.endswith(".zst")
        reader = JsonlReader(
            source.path,
            prior,
            opener=open_zstd if compressed else None,
            seekable=not compressed,
            max_line_bytes=self.max_line_bytes,
        )
        try:
            with reader:
                if reader.start_offset == 0:
                    carry = _Carry()  # read from the start: nothing carried applies
                rollout = _Rollout(source, carry)
                start = end_offset = reader.start_offset
                end_line = reader.start_line
                batch_bytes = BATCH_BYTES
                # Lines are contiguous: the window is the bytes from ``start`` to a line's end,
                # and a line that ends at or past ``limit`` fills it.
                limit = start + batch_bytes - 1
                last: Line | None = None
                for line in reader.lines():
                    try:
                        rollout.handle(line)
                    except RecursionError:
                        # JSON nested too deep inside a value decoded later (an arguments
                        # string): this line only.
                        rollout.too_deep(line)
                    last = line
                    if line.offset + line.length >= limit:
                        end_offset, end_line = line.offset + line.length + 1, line.number
                        cur = reader.cursor(end_offset, end_line, carry=rollout.carry())
                        batch = rollout.take(cur, end_offset - start, partial=False)
                        batch.reset = reader.take_restart()
                        yield batch
                        start = end_offset
                        limit = start + batch_bytes - 1
                if last is not None:
                    end_offset, end_line = last.offset + last.length + 1, last.number
                cur = reader.cursor(end_offset, end_line, carry=rollout.carry())
                batch = rollout.take(cur, end_offset - start, partial=reader.partial_tail)
                batch.reset = reader.take_restart()
                yield batch
        except zstandard.ZstdError as exc:
            raise SourceError("unreadable", "compressed rollout is not a valid zstd stream") from exc
        except OSError as exc:
            raise SourceError("unreadable", f"{type(exc).__name__} errno={exc.errno}") from exc
