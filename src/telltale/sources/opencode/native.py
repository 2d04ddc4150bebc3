"""OpenCode native records (typed decoding) and their mapping to canonical observations.

This module is the only place that knows OpenCode's JSON field names. It maps one native
row at a time; which rows are read, and when, is :mod:`telltale.sources.opencode.adapter`'s
job. Rules worth knowing (docs/sources/opencode.md has the full list):

* A legacy tool part carries both the call and its result. A ``running``, ``completed``
  or ``error`` part gives a ``requested`` observation; ``completed``/``error`` also give a
  ``result`` (``is_error`` for ``error``). A ``pending`` part has no final input yet and is
  left for a later scan (its ``time_updated`` moves when it runs).
* Each ``text`` part is one message observation (a message's parts can arrive in different
  scans). A text part still streaming (``time.start`` without ``time.end``) is left for
  later. ``reasoning`` parts are dropped.
* Usage comes from ``step-finish`` parts (one per model call); an assistant message's own
  ``tokens`` are used only when the message has no ``step-finish`` part at all.
* Model attribution is per message: user ``model{modelID, providerID}``, assistant scalar
  ``modelID``/``providerID``. Values that disagree make the field ambiguous (left empty);
  a wrong JSON type quarantines the message and its parts (``schema_mismatch``, field
  ``model``): one hostile row never blinds the sensor to the whole store (issue 15).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from telltale.model import (
    BoundExceeded,
    Family,
    Observation,
    Provenance,
    Quarantine,
    Stage,
    TokenUsage,
    encode_arguments,
    iso_time,
    make_observation,
    observation_id,
)
from telltale.readers.records import decode_guarded, failure_reason

KIND = "opencode.sqlite"
CLIENT = "opencode"
AGENT = "opencode"


class Brand(msgspec.Struct, frozen=True):
    """Which product wrote an OpenCode-schema store: the source kind, client and agent its
    observations carry (Kilo Code's 2026 rebuild writes the same schema to ``kilo.db``)."""

    kind: str
    client: str
    agent: str


OPENCODE = Brand(KIND, CLIENT, AGENT)

Number = int | float


# -- typed native shapes ----------------------------------------------------------------
class _Cache(msgspec.Struct):
    read: Number | None = None
    write: Number | None = None


class Tokens(msgspec.Struct):
    input: Number | None = None
    output: Number | None = None
    reasoning: Number | None = None
    total: Number | None = None
    cache: _Cache | None = None


class _Span(msgspec.Struct):
    created: Number | None = None
    completed: Number | None = None
    ran: Number | None = None
    start: Number | None = None
    end: Number | None = None


class _Path(msgspec.Struct):
    cwd: str | None = None


class LegacyMessage(msgspec.Struct):
    """``message.data`` (the legacy importer strips ``id``/``sessionID`` from it).

    Model fields stay untyped here: their type errors must fail the source, not the row.
    """

    role: str | None = None
    time: _Span | None = None
    model: Any = None
    modelID: Any = None
    providerID: Any = None
    tokens: Tokens | None = None
    path: _Path | None = None
    agent: str | None = None
    mode: str | None = None
    sessionID: Any = None


class _ToolMeta(msgspec.Struct):
    exit: int | None = None


class ToolState(msgspec.Struct):
    status: str
    input: Any = None
    output: str | None = None
    error: str | None = None
    metadata: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    time: _Span | None = None


class LegacyPart(msgspec.Struct):
    """``part.data``: only the fields Telltale maps; the rest is skipped while decoding."""

    type: str
    text: str | None = None
    synthetic: bool | None = None
    ignored: bool | None = None
    time: _Span | None = None
    tool: str | None = None
    callID: str | None = None
    state: ToolState | None = None
    tokens: Tokens | None = None
    sessionID: Any = None


class _V2ToolContent(msgspec.Struct):
    type: str
    text: str | None = None


class _V2ToolState(msgspec.Struct):
    status: str
    input: Any = None
    content: list[_V2ToolContent] | None = None
    result: Any = None
    error: Any = None


class _V2Content(msgspec.Struct):
    type: str
    id: str | None = None
    text: str | None = None
    ignored: bool | None = None
    synthetic: bool | None = None
    name: str | None = None
    state: _V2ToolState | None = None
    time: _Span | None = None


class V2Message(msgspec.Struct):
    """``session_message.data``; the row's ``type`` column says which variant it is."""

    text: str | None = None
    sessionID: Any = None
    callID: str | None = None
    command: str | None = None
    output: str | None = None
    agent: str | None = None
    model: Any = None
    modelID: Any = None
    providerID: Any = None
    content: list[_V2Content] | None = None
    tokens: Tokens | None = None
    finish: str | None = None
    time: _Span | None = None


_legacy_message = msgspec.json.Decoder(LegacyMessage)
_legacy_part = msgspec.json.Decoder(LegacyPart)
_v2_message = msgspec.json.Decoder(V2Message)
_tool_meta = msgspec.json.Decoder(_ToolMeta)

#: ``session_message.type`` values that are state changes, not conversation.
V2_BOOKKEEPING = frozenset({"agent-switched", "model-switched", "compaction"})
V2_TYPES = frozenset({"user", "synthetic", "system", "shell", "assistant"}) | V2_BOOKKEEPING


class Malformed(Exception):
    """A native row that cannot be decoded; it is quarantined under ``reason``."""

    def __init__(self, reason: str, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


def _decode(decoder: msgspec.json.Decoder[Any], data: object, field: str) -> Any:
    if isinstance(data, bytes):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Malformed("invalid_utf8", field) from exc
    elif not isinstance(data, str):
        raise Malformed("schema_mismatch", field)
    try:
        raw = data if isinstance(data, bytes) else data.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Malformed("invalid_utf8", field) from exc
    try:
        return decode_guarded(decoder.decode, raw)
    except msgspec.DecodeError as exc:
        # schema_mismatch, number_out_of_range, nesting_too_deep, invalid_utf8, malformed_json
        raise Malformed(failure_reason(raw, exc), field) from exc


def decode_legacy_message(data: object) -> LegacyMessage:
    return _decode(_legacy_message, data, "message.data")  # type: ignore[no-any-return]


def decode_legacy_part(data: object) -> LegacyPart:
    return _decode(_legacy_part, data, "part.data")  # type: ignore[no-any-return]


def decode_v2_message(data: object) -> V2Message:
    return _decode(_v2_message, data, "session_message.data")  # type: ignore[no-any-return]


# -- per-message context ----------------------------------------------------------------
def _model_string(value: object, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise Malformed("schema_mismatch", what)
    return value or None


def _pick(values: list[str | None], name: str, ambiguous: list[str]) -> str | None:
    present = {v for v in values if v is not None}
    if len(present) > 1:
        ambiguous.append(name)
        return None
    return next(iter(present), None)


def attribution(model: object, model_id: object, provider_id: object) -> Attribution:
    """Per-message model attribution from the nested and the scalar shapes.

    ``model`` is the user shape ``{modelID, providerID}`` (v2: ``{id, providerID}``);
    ``model_id``/``provider_id`` the assistant scalars. A wrong type anywhere raises
    ``Malformed``; disagreeing values leave the field empty and name
    it in ``ambiguous``. (``Malformed`` for a wrong type: the message is quarantined.)
    """
    nested_model: list[str | None] = []
    nested_provider: str | None = None
    if model is not None:
        if not isinstance(model, Mapping):
            raise Malformed("schema_mismatch", "model")
        nested_model.append(_model_string(model.get("modelID"), "model.modelID"))
        nested_model.append(_model_string(model.get("id"), "model.id"))
        nested_provider = _model_string(model.get("providerID"), "model.providerID")
    scalar_model = _model_string(model_id, "modelID")
    scalar_provider = _model_string(provider_id, "providerID")
    ambiguous: list[str] = []
    chosen_model = _pick([*nested_model, scalar_model], "model", ambiguous)
    chosen_provider = _pick([nested_provider, scalar_provider], "provider", ambiguous)
    return Attribution(chosen_model, chosen_provider, tuple(ambiguous))


def _int(value: Number | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, float):
        if not value.is_integer():
            raise Malformed("schema_mismatch", "tokens")
        return int(value)
    return value


def token_usage(tokens: Tokens) -> TokenUsage | None:
    """OpenCode tokens in OpenTelemetry meaning.

    OpenCode's ``input`` excludes the cache, so OTel input = input + cache.read +
    cache.write; its ``output`` excludes reasoning, so OTel output = output + reasoning.
    """
    inp, out, reasoning, total = (_int(tokens.input), _int(tokens.output),
                                  _int(tokens.reasoning), _int(tokens.total))
    read = _int(tokens.cache.read) if tokens.cache else None
    write = _int(tokens.cache.write) if tokens.cache else None
    if all(v is None for v in (inp, out, reasoning, total, read, write)):
        return None
    input_all = None if inp is None and read is None and write is None else (inp or 0) + (read or 0) + (write or 0)
    output_all = None if out is None and reasoning is None else (out or 0) + (reasoning or 0)
    if total is None and (input_all is not None or output_all is not None):
        total = (input_all or 0) + (output_all or 0)
    return TokenUsage(
        input_tokens=input_all,
        output_tokens=output_all,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=write,
        reasoning_output_tokens=reasoning,
        total_tokens=total,
    )


# -- tools ------------------------------------------------------------------------------
#: Argument keys whose values are authored text (commands, written content, edits, prompts).
AUTHORED_KEYS: dict[str, tuple[str, ...]] = {
    "bash": ("command",),
    "write": ("content",),
    "edit": ("oldString", "newString"),
    "multiedit": ("oldString", "newString"),
    "patch": ("patchText",),
    "apply_patch": ("patchText",),
    "task": ("prompt",),
    "shell": ("command",),
}
_FILE_TOOLS = frozenset({"read", "write", "edit", "multiedit", "patch", "list"})
_WRITE_TOOLS = frozenset({"write", "edit", "multiedit", "patch"})
_URL_TOOLS = frozenset({"webfetch"})
_SHELL_TOOLS = frozenset({"bash", "shell"})


def tool_facets(tool: str | None, args: object) -> dict[str, str]:
    """Canonical facets of a tool call: command, file_path, url."""
    if not isinstance(args, Mapping) or tool is None:
        return {}
    facets: dict[str, str] = {}
    name = tool.lower()
    if name in _SHELL_TOOLS and isinstance(args.get("command"), str):
        facets["command"] = args["command"]
    if name in _FILE_TOOLS:
        path = args.get("filePath", args.get("path"))
        if isinstance(path, str):
            facets["file_path"] = path
            facets["file_access"] = "write" if name in _WRITE_TOOLS else "read"
    if name in _URL_TOOLS and isinstance(args.get("url"), str):
        facets["url"] = args["url"]
    return facets


def tool_exit_code(metadata: msgspec.Raw) -> int | None:
    if not metadata:
        return None
    try:
        return _tool_meta.decode(metadata).exit
    except (msgspec.DecodeError, RecursionError):
        return None


# -- observation building ---------------------------------------------------------------
class Attribution(msgspec.Struct, frozen=True):
    """Model and provider of one message, with the fields whose native values conflicted."""

    model: str | None = None
    provider: str | None = None
    ambiguous: tuple[str, ...] = ()


class Context(msgspec.Struct, frozen=True, kw_only=True):
    """What every observation of one native row shares.

    ``tu`` is the row's selection time (``time_updated``; a session's ``time_created``):
    the cursor's edge set remembers what was built from rows a later overlap re-selects.
    """

    path: str
    session_id: str
    row: str  # provenance row, e.g. "part:prt_1"
    record_id: str
    tu: int
    cwd: str | None = None
    attribution: Attribution = Attribution()
    session_ambiguous: bool = False
    mode: str | None = None

    def identity(self, brand: Brand = OPENCODE) -> str:
        # Session ids survive a relocated database (OPENCODE_DB), the path does not.
        return f"{brand.client}:{self.session_id}"


Item = Observation | Quarantine


def quarantine_key(row: str, tu: int, reason: str, field: str | None, kind: str = KIND) -> str:
    """Deterministic key of a quarantine, so an overlap re-read does not repeat it."""
    return observation_id(kind, "quarantine", f"{row}:{tu}:{reason}:{field or ''}")


class Emitter:
    """Builds observations and quarantines for one acquisition, in emission order.

    ``items`` holds ``(tu, key, item)``: the key is the observation id (or a quarantine
    key), so the adapter can drop what an earlier scan already emitted.
    """

    def __init__(self, path: str, brand: Brand = OPENCODE) -> None:
        self.path = path
        self.brand = brand
        self.items: list[tuple[int, str, Item]] = []
        self.sequence = 0

    def emit(self, ctx: Context, coordinate: str, **fields: Any) -> bool:
        ambiguous = list(ctx.attribution.ambiguous)
        if ctx.session_ambiguous:
            ambiguous.append("session_id")
        fields.setdefault("model", ctx.attribution.model)
        fields.setdefault("provider", ctx.attribution.provider)
        attributes = dict(fields.pop("attributes", None) or {})
        if ctx.mode:
            attributes["agent_mode"] = ctx.mode
        self.sequence += 1
        try:
            obs = make_observation(
                adapter=self.brand.kind,
                source_identity=ctx.identity(self.brand),
                coordinate=coordinate,
                client=self.brand.client,
                sequence=self.sequence,
                provenance=Provenance(source_kind=self.brand.kind, path=ctx.path, row=ctx.row,
                                      record_id=ctx.record_id),
                session_id=ctx.session_id,
                agent=self.brand.agent,
                cwd=ctx.cwd,
                ambiguous=tuple(ambiguous),
                attributes=attributes,
                **fields,
            )
        except BoundExceeded as exc:
            self.quarantine(ctx, "unbounded_value", exc.field, exc.bound)
            return False
        self.items.append((ctx.tu, obs.observation_id, obs))
        return True

    def quarantine(self, ctx: Context, reason: str, field: str | None = None, bound: int | None = None) -> None:
        self.quarantine_row(ctx.session_id, ctx.record_id, ctx.row, ctx.tu, reason, field, bound)

    def quarantine_row(
        self,
        session_id: str | None,
        record_id: str | None,
        row: str,
        tu: int,
        reason: str,
        field: str | None = None,
        bound: int | None = None,
    ) -> None:
        item = Quarantine(
            source_kind=self.brand.kind,
            path=self.path,
            reason=reason,
            session_id=session_id,
            record_id=record_id,
            sequence=self.sequence,
            row=row,
            field=field,
            bound=bound,
        )
        self.items.append((tu, quarantine_key(row, tu, reason, field, self.brand.kind), item))

    # -- shared shapes --------------------------------------------------------------------
    def session(self, ctx: Context, created: object, parent: str | None) -> None:
        self.emit(ctx, f"session:{ctx.session_id}", family=Family.SESSION,
                  occurred_at=iso_time(created), parent_session_id=parent)

    def text(self, ctx: Context, coordinate: str, role: str | None, text: str,
             when: object, injected: bool, ignored: bool = False) -> None:
        attributes = {"ignored": "true"} if ignored else {}
        self.emit(ctx, coordinate, family=Family.MESSAGE, role=role, text=text,
                  injected=injected, occurred_at=iso_time(when), attributes=attributes)

    def tool_requested(self, ctx: Context, coordinate: str, tool: str | None,
                       call_id: str | None, args: object, when: object) -> None:
        try:
            arguments = encode_arguments(_arguments(args), AUTHORED_KEYS.get((tool or "").lower(), ()))
        except BoundExceeded as exc:
            self.quarantine(ctx, "unbounded_value", exc.field, exc.bound)
            return
        self.emit(ctx, coordinate, family=Family.TOOL, stage=Stage.REQUESTED, tool_name=tool,
                  call_id=call_id, arguments=arguments, occurred_at=iso_time(when),
                  **tool_facets(tool, args))

    def tool_result(self, ctx: Context, coordinate: str, tool: str | None, call_id: str | None,
                    result: str | None, is_error: bool, exit_code: int | None, when: object) -> None:
        self.emit(ctx, coordinate, family=Family.TOOL, stage=Stage.RESULT, tool_name=tool,
                  call_id=call_id, result=result, is_error=is_error, exit_code=exit_code,
                  occurred_at=iso_time(when))

    def usage(self, ctx: Context, coordinate: str, tokens: Tokens | None, when: object) -> bool:
        if tokens is None:
            return False
        try:
            usage = token_usage(tokens)
        except Malformed as exc:
            self.quarantine(ctx, exc.reason, exc.field)
            return False
        if usage is None:
            return False
        return self.emit(ctx, coordinate, family=Family.USAGE, usage=usage, occurred_at=iso_time(when))


def _arguments(args: object) -> Mapping[str, Any] | list[Any] | str | None:
    if args is None or isinstance(args, Mapping | list | str):
        return args
    return {"value": args}


def span_start(span: _Span | None) -> Number | None:
    return None if span is None else (span.start if span.start is not None else span.created)


def span_end(span: _Span | None) -> Number | None:
    return None if span is None else (span.end if span.end is not None else span.completed)


# -- legacy message/part ----------------------------------------------------------------
def map_legacy_part(em: Emitter, ctx: Context, part_id: str, created: object,
                    part: LegacyPart, message: LegacyMessage) -> bool:
    """Map one legacy part; returns False when it was read but not projected."""
    msg_created = message.time.created if message.time else None
    if part.type == "text":
        if part.text is None:
            em.quarantine(ctx, "schema_mismatch", "text")
            return False
        if part.time is not None and part.time.start is not None and part.time.end is None:
            return False  # still streaming: its time_updated moves when it completes
        em.text(ctx, f"part:{part_id}:text", message.role, part.text,
                _first(span_start(part.time), msg_created), bool(part.synthetic), bool(part.ignored))
        return True
    if part.type == "tool":
        state = part.state
        if state is None or state.status == "pending":
            return False  # no final input yet
        if state.status not in ("running", "completed", "error"):
            em.quarantine(ctx, "schema_mismatch", "state.status")
            return False
        em.tool_requested(ctx, f"part:{part_id}:requested", part.tool, part.callID, state.input,
                          _first(span_start(state.time), msg_created))
        if state.status in ("completed", "error"):
            is_error = state.status == "error"
            em.tool_result(ctx, f"part:{part_id}:result", part.tool, part.callID,
                           state.error if is_error else state.output, is_error,
                           tool_exit_code(state.metadata), span_end(state.time))
        return True
    if part.type == "step-finish":
        return em.usage(ctx, f"part:{part_id}:usage", part.tokens, _first(created, span_end(message.time)))
    return False  # reasoning, step-start, file, snapshot, patch, ...: not projected


def legacy_message_usage(em: Emitter, ctx: Context, message_id: str, message: LegacyMessage) -> bool:
    """Usage from an assistant message's own tokens (only when it has no step-finish part)."""
    if message.role != "assistant" or message.time is None or message.time.completed is None:
        return False
    return em.usage(ctx, f"message:{message_id}:usage", message.tokens, message.time.completed)


def _first(*values: object) -> object:
    return next((v for v in values if v is not None), None)


# -- v2 session_message -----------------------------------------------------------------
def _v2_tool_output(state: _V2ToolState) -> tuple[str | None, bool]:
    texts = [c.text for c in state.content or () if c.type == "text" and c.text is not None]
    if state.status == "error":
        err = state.error
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            message: str | None = err["message"]
        elif isinstance(err, str):
            message = err
        else:
            message = "\n".join(texts) if texts else None
        return message, True
    if texts:
        return "\n".join(texts), False
    return (state.result if isinstance(state.result, str) else None), False


def map_v2_row(em: Emitter, ctx: Context, row_id: str, row_type: str, msg: V2Message) -> bool:
    """Map one ``session_message`` row; returns False when it was read but not projected."""
    created = msg.time.created if msg.time else None
    if row_type in ("user", "synthetic", "system"):
        if msg.text is None:
            em.quarantine(ctx, "schema_mismatch", "text")
            return False
        role = "system" if row_type == "system" else "user"
        em.text(ctx, f"message:{row_id}:text", role, msg.text, created, row_type != "user")
        return True
    if row_type == "shell":
        args = {"command": msg.command} if msg.command is not None else None
        call = msg.callID or row_id
        em.tool_requested(ctx, f"message:{row_id}:requested", "shell", call, args, created)
        if msg.time is not None and msg.time.completed is not None:
            em.tool_result(ctx, f"message:{row_id}:result", "shell", call, msg.output, False, None,
                           msg.time.completed)
        return True
    if row_type != "assistant":
        return False  # bookkeeping: agent/model switches, compaction summaries
    completed = msg.time.completed if msg.time else None
    projected = False
    for index, item in enumerate(msg.content or ()):
        key = item.id or str(index)
        if item.type == "text":
            if completed is None or item.text is None:
                continue  # streaming: the row's time_updated moves when it completes
            em.text(ctx, f"message:{row_id}:content:{key}:text", "assistant", item.text,
                    created, bool(item.synthetic), bool(item.ignored))
            projected = True
        elif item.type == "tool":
            state = item.state
            if state is None or state.status == "pending":
                continue
            if state.status not in ("running", "completed", "error"):
                em.quarantine(ctx, "schema_mismatch", "content.state.status")
                continue
            started = _first(item.time.ran, item.time.created) if item.time else created
            em.tool_requested(ctx, f"message:{row_id}:content:{key}:requested", item.name, item.id,
                              state.input, started)
            if state.status in ("completed", "error"):
                result, is_error = _v2_tool_output(state)
                ended = item.time.completed if item.time else None
                em.tool_result(ctx, f"message:{row_id}:content:{key}:result", item.name, item.id,
                               result, is_error, None, ended)
            projected = True
        elif item.type != "reasoning":
            em.quarantine(ctx, "unknown_content_block", "content.type")
    if completed is not None and em.usage(ctx, f"message:{row_id}:usage", msg.tokens, completed):
        projected = True
    return projected
