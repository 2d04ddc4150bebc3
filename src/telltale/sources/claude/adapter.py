"""Claude Code: ``~/.claude/projects/<slug>/<session>.jsonl`` and subagent transcripts.

One source is one transcript file: a main session (``<slug>/<session>.jsonl``) or a
subagent ("sidechain") transcript, in the old layout (``<slug>/agent-<id>.jsonl``) or the
new one (``<slug>/<session>/subagents/agent-<id>.jsonl``). Every vendor field name of
Claude Code lives in this module. The mapping and its choices are documented in
``docs/sources/claude.md``; the seed rules are CHECKLIST CLAUDE-1..13.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

import msgspec

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
    check_bound,
    encode_arguments,
    field_error,
    iso_time,
    template_observation_id,
    utf8_len,
)
from telltale.readers.jsonl import JsonlReader, Line, decode_cursor, encode_cursor
from telltale.readers.records import NESTING_TOO_DEEP, decode_guarded, failure_reason, retry_repaired
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.spec import Source

KIND = "claude.projects"
CLIENT = "claude"
#: ``gen_ai`` agent names of main sessions and of subagent (sidechain) sessions.
AGENT = "claude-code"
SUBAGENT = "claude-code/subagent"
#: Input bytes per batch; a cut waits for the open response group to close (see ``_Scan``).
BATCH_BYTES = 4 << 20
#: Hard limit: past this a batch is cut even inside an open response group.
MAX_BATCH_BYTES = 16 << 20
#: Separator of the text blocks of one response and of an all-text tool-result array
#: (CLAUDE-11 leaves it open).
TEXT_JOIN = "\n"

#: CLAUDE-6: counted as other native records, never projected (CLAUDE-7: the API request
#: replays among them are opaque; nothing nested in them is read).
BOOKKEEPING = frozenset(
    {
        "attachment",
        "queue-operation",
        "last-prompt",
        "custom-title",
        "ai-title",
        "agent-name",
        "atis-latch",
        "file-history-snapshot",
        "file-history-delta",
        "summary",
        "system",
        "progress",
        "mode",
        "permission-mode",
        "relocated",
        "worktree-state",
        "cost-state",
        "api-request",
        "api-request-blob",
        "api-request-shape",
        "pr-link",
        "artifact-autoreact-ledger",
        "artifact-comment-monitor",
        "continued-in",
    }
)
#: CLAUDE-8: dropped from messages; reasoning text is never kept.
DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking", "image", "document"})
#: CLAUDE-10: top-level input keys with the authored-text budget, per tool.
AUTHORED_KEYS: Mapping[str, tuple[str, ...]] = {
    "Bash": ("command",),
    "PowerShell": ("command",),
    "Write": ("content",),
    "Edit": ("old_string", "new_string"),
    "NotebookEdit": ("new_source",),
    "Task": ("prompt",),
    "Agent": ("prompt",),
}
#: MultiEdit carries its edit strings one level down, in ``edits[]``.
MULTIEDIT_AUTHORED = ("old_string", "new_string")
COMMAND_TOOLS = frozenset({"Bash", "PowerShell"})
#: Tools of PATH_FIELD that write their path (the others read it): the ``file_access`` facet.
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
PATH_FIELD: Mapping[str, str] = {
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "Glob": "path",
    "Grep": "path",
    "LS": "path",
}
URL_FIELD: Mapping[str, str] = {"WebFetch": "url"}
#: Tools whose top-level ``toolUseResult`` is worth decoding (interrupt flag, agent id).
RESULT_DETAIL_TOOLS = frozenset({"Bash", "PowerShell", "Task", "Agent"})
#: Leading markup of text Claude Code writes into user records itself (not the user's words).
INJECTED_PREFIXES = (
    "<system-reminder>",
    "<local-command-caveat>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<ide_opened_file>",
    "<ide_selection>",
    "<ide_diagnostics>",
    "<user-prompt-submit-hook>",
    "<task-notification>",
    "[Request interrupted by user",
)
#: Model name Claude Code writes on assistant records it made up itself (API errors...).
SYNTHETIC_MODEL = "<synthetic>"
#: Agent id prefix of the context-compaction helper's transcript (``agent-acompact-<hex>``).
COMPACT_AGENT_PREFIX = "acompact"

# Carry bounds: the cursor's state stays small whatever the transcript holds.
MAX_PENDING_CALLS = 256
MAX_DONE_GROUPS = 64
MAX_LINKED = 256
MAX_STARTED = 32
MAX_ID = 256
#: Session templates cached per scan (distinct session/agent/cwd/version/branch envelopes).
MAX_SESSIONS = 256
#: Strings of at most this many characters are within every canonical bound.
_SHORT = STRING_BOUND // 4
#: The same for authored text (``text``, ``result``, ``command``; ``arguments`` has more room).
_SHORT_TEXT = AUTHORED_TEXT_BOUND // 4
_replace = msgspec.structs.replace
# Enum members looked up once: a class attribute lookup on an Enum costs more than a replace field.
_SESSION, _MESSAGE, _USAGE, _TOOL = Family.SESSION, Family.MESSAGE, Family.USAGE, Family.TOOL
_REQUESTED, _RESULT = Stage.REQUESTED, Stage.RESULT
_ARGUMENT_TYPES = (dict, list, str)
#: Shared, never mutated: the unknown parts of a result that has none.
_NO_UNKNOWN: list[int] = []

_NO_RAW = msgspec.Raw(b"")
_fromisoformat = datetime.fromisoformat


# -- native records (typed, permissive: unknown fields are ignored) --------------------------


class _Part(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None


class _Block(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    tool_use_id: str | None = None
    content: str | list[_Part] | None = None
    is_error: bool | None = None


class _Usage(msgspec.Struct, gc=False):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class _Message(msgspec.Struct, gc=False):
    role: str | None = None
    model: str | None = None
    id: str | None = None
    content: str | list[_Block] | None = None
    usage: _Usage | None = None


class _ProgressData(msgspec.Struct, gc=False):
    type: str | None = None
    agent_id: str | None = msgspec.field(default=None, name="agentId")


class _Record(msgspec.Struct, gc=False):
    """One line, decoded in one pass; only the outer ``type`` decides what it means (CLAUDE-2).

    A record whose fields do not have these types is looked at again through ``_Head``, so
    bookkeeping with an unexpected payload shape stays opaque instead of being set aside.
    """

    type: str | None = None
    uuid: str | None = None
    session_id: str | None = msgspec.field(default=None, name="sessionId")
    session_id_alias: str | None = msgspec.field(default=None, name="session_id")
    agent_id: str | None = msgspec.field(default=None, name="agentId")
    is_sidechain: bool | None = msgspec.field(default=None, name="isSidechain")
    is_meta: bool | None = msgspec.field(default=None, name="isMeta")
    is_compact_summary: bool | None = msgspec.field(default=None, name="isCompactSummary")
    cwd: str | None = None
    version: str | None = None
    git_branch: str | None = msgspec.field(default=None, name="gitBranch")
    timestamp: str | int | float | None = None
    parent_tool_use_id: str | None = msgspec.field(default=None, name="parentToolUseID")
    request_id: str | None = msgspec.field(default=None, name="requestId")
    message: _Message | None = None
    data: _ProgressData | None = None
    # Read only for the few tools whose structured result we use; skipped, not built, otherwise.
    tool_use_result: msgspec.Raw = msgspec.field(default=_NO_RAW, name="toolUseResult")


class _Head(msgspec.Struct, gc=False):
    """Fallback view of a line whose fields did not match ``_Record``'s types."""

    type: Any = None
    uuid: Any = None
    session_id: Any = msgspec.field(default=None, name="sessionId")
    session_id_alias: Any = msgspec.field(default=None, name="session_id")


class _ToolUseResult(msgspec.Struct, gc=False):
    interrupted: bool | None = None
    agent_id: str | None = msgspec.field(default=None, name="agentId")


class _Carry(msgspec.Struct, omit_defaults=True):
    """State that must survive between scans of one file (the cursor's ``carry``)."""

    cur: str | None = None  # current session identity
    via: list[str] = []  # alias names that established it
    calls: list[tuple[str, str]] = []  # call id -> tool name, for results still to come
    done: list[tuple[str, bool]] = []  # response groups already emitted -> usage emitted
    linked: list[str] = []  # subagent ids whose link was emitted
    started: list[str] = []  # session ids whose start was emitted


_record_decoder = msgspec.json.Decoder(_Record)
_head_decoder = msgspec.json.Decoder(_Head)
_tool_use_result_decoder = msgspec.json.Decoder(_ToolUseResult)
_carry_decoder = msgspec.json.Decoder(_Carry)
_carry_encoder = msgspec.json.Encoder()
_args_encoder = msgspec.json.Encoder(order="deterministic")


# -- helpers ---------------------------------------------------------------------------------


def provider_of(model: str | None) -> str:
    """OpenTelemetry provider name, told from the model id's shape (Bedrock/Vertex ids differ)."""
    if model:
        known = _providers.get(model)
        if known is not None:
            return known
        if len(_providers) < 64:
            _providers[model] = known = _provider_of(model)
            return known
    return _provider_of(model)


_providers: dict[str, str] = {}


def _provider_of(model: str | None) -> str:
    if model:
        if model.startswith("arn:aws:bedrock") or model.startswith("anthropic.") or ".anthropic." in model:
            return "aws.bedrock"
        if "@" in model:
            return "gcp.vertex_ai"
    return "anthropic"


def canonical_time(value: object) -> str | None:
    """``iso_time``, skipping the reformat when the value already is canonical (Claude's own form)."""
    if (
        type(value) is str
        and len(value) == 24
        and value[23] == "Z"
        and value[19] == "."
        and value[10] == "T"
        and value[4] == value[7] == "-"
        and value[13] == value[16] == ":"
        and value.isascii()
    ):
        try:
            _fromisoformat(value[:23])
        except ValueError:
            return None
        if value[16:19] in _SECONDS and value[19:] in _MILLIS:
            if len(_valid_minutes) >= 4096:
                _valid_minutes.clear()
            _valid_minutes[value[:16]] = None
        return value
    return iso_time(value)


#: Canonical second parts, ``:00`` to ``:59``, and millisecond tails, ``.000Z`` to ``.999Z``.
_SECONDS = frozenset(f":{s:02d}" for s in range(60))
_MILLIS = frozenset(f".{ms:03d}Z" for ms in range(1000))
#: ``YYYY-MM-DDTHH:MM`` heads of canonical timestamps already parsed as a valid time
#: (bounded). A 24-character timestamp with such a head, a ``:SS`` part and a ``.dddZ`` tail
#: passes ``canonical_time``'s test unchanged; ``_Scan.context`` checks that before calling
#: it (records come many per minute, and the call and the parse cost more than the rest of
#: the record's context).
_valid_minutes: dict[str, None] = {}


def looks_injected(text: str) -> bool:
    """True for user-record text that Claude Code wrote itself (reminders, caveats, IDE context)."""
    return text.lstrip().startswith(INJECTED_PREFIXES)


def _short(value: str | None) -> str | None:
    # Ids come from untrusted input; an absurd one is not reported or carried.
    if value is None or len(value) > MAX_ID:
        return None
    return value


def _result_text(content: str | list[_Part] | None) -> tuple[str | None, list[int]]:
    """Direct result text (CLAUDE-11) and the indexes of parts of an unknown type."""
    if content is None or isinstance(content, str):
        return content, []
    texts: list[str] = []
    unknown: list[int] = []
    for j, part in enumerate(content):
        if part.type == "text":
            if part.text is not None:
                texts.append(part.text)
        elif part.type not in DROPPED_BLOCKS:
            unknown.append(j)
    return (TEXT_JOIN.join(texts) if texts else None), unknown


def _multiedit_arguments(value: Any) -> str | None:
    """MultiEdit's ``edits[].old_string/new_string`` get the authored budget (CLAUDE-10 spirit)."""
    if not isinstance(value, dict) or not isinstance(value.get("edits"), list):
        return encode_arguments(value if isinstance(value, dict | list | str) else None)
    stripped_edits: list[Any] = []
    for i, edit in enumerate(value["edits"]):
        if isinstance(edit, dict):
            for key in MULTIEDIT_AUTHORED:
                item = edit.get(key)
                if isinstance(item, str):
                    check_bound(f"arguments.edits[{i}].{key}", item, AUTHORED_TEXT_BOUND)
            stripped_edits.append({k: v for k, v in edit.items() if k not in MULTIEDIT_AUTHORED})
        else:
            stripped_edits.append(edit)
    # Every other leaf still gets the ordinary bound.
    encode_arguments({**value, "edits": stripped_edits})
    return _args_encoder.encode(value).decode("utf-8")


_oid = template_observation_id
_over = field_error


def _template(
    sid: str,
    agent: str,
    cwd: str | None,
    attributes: dict[str, str],
    parent: str | None,
    identity_sid: str | None = None,
) -> ObservationTemplate:
    """Shared fields of a session's observations, in ``make_observation``'s former keyword order."""
    return ObservationTemplate(
        KIND,
        f"claude:{sid if identity_sid is None else identity_sid}",
        client=CLIENT,
        session_id=sid,
        agent=agent,
        attributes=attributes,
        cwd=cwd,
        parent_session_id=parent,
    )


#: ``ambiguous`` of a merged response by (model conflict, role conflict).
_AMBIGUOUS: dict[tuple[bool, bool], tuple[str, ...]] = {
    (False, False): (),
    (True, False): ("model",),
    (False, True): ("role",),
    (True, True): ("model", "role"),
}

#: Envelope fields that decide a record's session template, as decoded (see ``_Scan.context``):
#: session base, agentId, isSidechain, version, gitBranch, cwd.
_SessionKey = tuple[str, str | None, bool | None, str | None, str | None, str | None]
#: A session's template, session id, attributes and cwd.
_Session = tuple[ObservationTemplate, str, dict[str, str], str | None]


class _Ctx(msgspec.Struct, gc=False):
    """What every observation of one native record shares.

    ``t`` holds the fields of the record's session (checked against their bounds once per
    session); the record's own sequence, provenance and time are set on each observation.
    ``coord`` is the native position of its blocks: by record uuid, else by the line's
    offset. (A Struct, not a class: built once per record, its constructor runs in C.)
    """

    t: ObservationTemplate
    sid: str
    cwd: str | None
    attributes: dict[str, str]
    occurred_at: str | None
    uuid: str | None
    line: Line
    prov: Provenance
    coord: str

    def coordinate(self, index: int) -> str:
        """Native position of block ``index``."""
        return self.coord + str(index)


class _Group:
    """The lines of one API response (same ``message.id``), merged into one message and usage."""

    __slots__ = (
        "ctx",
        "injected",
        "key",
        "model",
        "model_conflict",
        "overflow",
        "role_conflict",
        "text_coord",
        "text_ctx",
        "text_size",
        "texts",
        "usage",
        "usage_ctx",
        "usage_done",
        "usage_request",
    )

    def __init__(self, key: str | None, ctx: _Ctx, usage_done: bool) -> None:
        self.key = key
        self.ctx = ctx
        self.texts: list[str] = []
        self.text_size = 0
        self.text_coord: str | None = None
        self.text_ctx: _Ctx | None = None
        self.overflow = False
        self.model: str | None = None
        self.model_conflict = False
        self.usage: _Usage | None = None
        self.usage_ctx: _Ctx | None = None
        self.usage_request: str | None = None
        self.usage_done = usage_done
        self.injected = False
        self.role_conflict = False


class _Scan:
    """Maps the lines of one acquisition; owns the output window and the carried state."""

    def __init__(self, source: Source, carry: bytes | None) -> None:
        self.source = source
        self.path = source.path
        state = _Carry()
        if carry:
            try:
                state = _carry_decoder.decode(carry)
            except msgspec.DecodeError:
                state = _Carry()  # unreadable state: start over (ids are deterministic)
        self.cur = state.cur
        self.via = frozenset(state.via)
        self.camel = "sessionId" in self.via  # fast path of check_identity
        self.calls: OrderedDict[str, str] = OrderedDict(state.calls)
        self.done: OrderedDict[str, bool] = OrderedDict(state.done)
        self.linked: OrderedDict[str, None] = OrderedDict.fromkeys(state.linked)
        self.started: OrderedDict[str, None] = OrderedDict.fromkeys(state.started)
        name = os.path.basename(self.path)
        stem = name[:-6] if name.endswith(".jsonl") else name
        parent_dir = os.path.basename(os.path.dirname(self.path))
        #: Subagent id named by the file (``agent-<id>.jsonl``), checked against the records.
        self.file_agent = stem[6:] if stem.startswith("agent-") else None
        if parent_dir == "subagents":
            self.fallback_sid = os.path.basename(os.path.dirname(os.path.dirname(self.path)))
        else:
            self.fallback_sid = stem
        self.group: _Group | None = None
        self.sessions: dict[_SessionKey, _Session] = {}
        self.last: tuple[_SessionKey, _Session] | None = None
        # Output window.
        self.observations: list[Observation] = []
        self.quarantined: list[Quarantine] = []
        self.records = 0
        self.other = 0
        self.cut_wanted = False
        self.ready: tuple[Batch, int, int, bytes] | None = None

    # -- output --------------------------------------------------------------------------
    # Each observation is the record's session template with the record's and the fact's
    # own fields set (``msgspec.structs.replace``): far cheaper than passing every field to
    # ``make_observation``, with the same ids and the same bound errors in the same order
    # (the session's fields, then the fact's own strings, then the attributes; see
    # ``ObservationTemplate``).
    def bad(self, ctx: _Ctx, err: BoundExceeded) -> None:
        self.quarantine(ctx.line, "unbounded_value", sid=ctx.sid, uuid=ctx.uuid, err=err)

    def emit_session(self, ctx: _Ctx, coordinate: str, parent_call_id: str | None = None) -> None:
        t = ctx.t
        err = t.error
        if err is None and parent_call_id is not None and len(parent_call_id) > _SHORT:
            err = _over("parent_call_id", parent_call_id)
        if err is None and (err := t.attribute_error) is None:
            self.observations.append(
                _replace(
                    t.observation,
                    observation_id=_oid(t, coordinate),
                    family=_SESSION,
                    sequence=ctx.line.number,
                    provenance=ctx.prov,
                    occurred_at=ctx.occurred_at,
                    parent_call_id=parent_call_id,
                )
            )
        else:
            self.bad(ctx, err)

    def emit_message(
        self,
        ctx: _Ctx,
        coordinate: str,
        role: str,
        text: str,
        injected: bool,
        ambiguous: tuple[str, ...],
        model: str | None = None,
        provider: str | None = None,
    ) -> None:
        t = ctx.t
        err = t.error
        if err is None and len(text) > _SHORT_TEXT:
            err = _over("text", text)
        if err is None and model is not None and len(model) > _SHORT:
            err = _over("model", model)
        if err is None and (err := t.attribute_error) is None:
            self.observations.append(
                _replace(
                    t.observation,
                    observation_id=_oid(t, coordinate),
                    family=_MESSAGE,
                    sequence=ctx.line.number,
                    provenance=ctx.prov,
                    occurred_at=ctx.occurred_at,
                    role=role,
                    text=text,
                    injected=injected,
                    model=model,
                    provider=provider,
                    ambiguous=ambiguous,
                )
            )
        else:
            self.bad(ctx, err)

    def emit_usage(
        self,
        ctx: _Ctx,
        coordinate: str,
        usage: TokenUsage,
        model: str | None,
        provider: str | None,
        ambiguous: tuple[str, ...],
        response_id: str | None = None,
    ) -> None:
        t = ctx.t
        err = t.error
        if err is None and model is not None and len(model) > _SHORT:
            err = _over("model", model)
        if err is None and (err := t.attribute_error) is None:
            self.observations.append(
                _replace(
                    t.observation,
                    observation_id=_oid(t, coordinate),
                    family=_USAGE,
                    sequence=ctx.line.number,
                    provenance=ctx.prov,
                    occurred_at=ctx.occurred_at,
                    usage=usage,
                    model=model,
                    provider=provider,
                    ambiguous=ambiguous,
                    response_id=response_id,
                )
            )
        else:
            self.bad(ctx, err)

    def emit_requested(
        self,
        ctx: _Ctx,
        coordinate: str,
        name: str | None,
        call_id: str | None,
        arguments: str | None,
        command: str | None,
        file_path: str | None,
        url: str | None,
        model: str | None,
        file_access: str | None = None,
    ) -> None:
        t = ctx.t
        err = t.error
        if err is None and (
            (name is not None and len(name) > _SHORT)
            or (call_id is not None and len(call_id) > _SHORT)
            or (arguments is not None and len(arguments) > _SHORT_TEXT)
            or (command is not None and len(command) > _SHORT_TEXT)
            or (file_path is not None and len(file_path) > _SHORT)
            or (url is not None and len(url) > _SHORT)
            or (model is not None and len(model) > _SHORT)
        ):
            # The order of make_observation's keywords: the first field over its bound is named.
            for field, value in (
                ("tool_name", name),
                ("call_id", call_id),
                ("arguments", arguments),
                ("command", command),
                ("file_path", file_path),
                ("url", url),
                ("model", model),
            ):
                if value is not None and len(value) > _SHORT and (err := _over(field, value)) is not None:
                    break
        if err is None and (err := t.attribute_error) is None:
            self.observations.append(
                _replace(
                    t.observation,
                    observation_id=_oid(t, coordinate),
                    family=_TOOL,
                    sequence=ctx.line.number,
                    provenance=ctx.prov,
                    occurred_at=ctx.occurred_at,
                    stage=_REQUESTED,
                    tool_name=name,
                    call_id=call_id,
                    arguments=arguments,
                    command=command,
                    file_path=file_path,
                    file_access=file_access,
                    url=url,
                    model=model,
                    provider=provider_of(model) if model is not None else None,
                )
            )
        else:
            self.bad(ctx, err)

    def quarantine(
        self,
        line: Line,
        reason: str,
        *,
        sid: str | None = None,
        uuid: str | None = None,
        field: str | None = None,
        err: BoundExceeded | None = None,
    ) -> None:
        self.quarantined.append(
            Quarantine(
                source_kind=KIND,
                path=self.path,
                reason=reason,
                session_id=_short(sid),
                record_id=_short(uuid),
                sequence=line.number,
                line=line.number,
                offset=line.offset,
                field=err.field if err is not None else field,
                bound=err.bound if err is not None else None,
            )
        )

    def take(self, bytes_read: int, cursor: bytes | None) -> Batch:
        batch = Batch(
            observations=self.observations,
            quarantined=self.quarantined,
            cursor=cursor,
            records_read=self.records,
            other_records=self.other,
            bytes_read=bytes_read,
        )
        self.observations, self.quarantined, self.records, self.other = [], [], 0, 0
        return batch

    def carry(self) -> bytes:
        return _carry_encoder.encode(
            _Carry(
                cur=self.cur,
                via=sorted(self.via),
                calls=list(self.calls.items()),
                done=list(self.done.items()),
                linked=list(self.linked),
                started=list(self.started),
            )
        )

    def boundary(self, line: Line) -> None:
        """A response group is closing before ``line``: the place for a requested batch cut."""
        self.flush()
        if self.cut_wanted:
            self.cut_wanted = False
            batch = self.take(0, None)
            self.ready = (batch, line.offset, line.number - 1, self.carry())

    # -- lines ---------------------------------------------------------------------------
    def line(self, line: Line) -> None:
        data = line.data
        if data is None:
            self.records += 1
            self.quarantine(line, "oversized_line")
            return
        try:
            rec = _record_decoder.decode(data)
        except msgspec.ValidationError:
            self.records += 1
            self.mismatch(line, data)
            return
        except msgspec.DecodeError as exc:
            if not data.strip():
                return  # a blank line is not a record (and never decodes)
            try:
                rec = retry_repaired(_record_decoder.decode, data, exc)  # lone surrogates
            except msgspec.ValidationError:
                self.records += 1
                self.mismatch(line, data)
                return
            except msgspec.DecodeError as final:
                self.records += 1
                self.quarantine(line, failure_reason(data, final))
                return
        except RecursionError:
            self.records += 1
            self.quarantine(line, NESTING_TOO_DEEP)
            return
        kind = rec.type
        if kind == "assistant" or kind == "user":
            self.conversation(line, rec, kind)
        elif kind in BOOKKEEPING:
            self.identify(rec, line)
            self.records += 1
            self.other += 1
            if kind == "progress" and rec.data is not None:
                self.progress(line, rec)
        elif kind is None and rec.message is not None:
            # No explicit outer type: the payload's own role may classify it (CLAUDE-2 only
            # gives an *explicit* outer type precedence).
            self.conversation(line, rec, None)
        else:
            self.identify(rec, line)
            self.records += 1
            self.quarantine(line, "unknown_record_type", sid=self.sid_of(rec), uuid=rec.uuid, field="type")

    def mismatch(self, line: Line, data: bytes) -> None:
        """An envelope with unexpected field types: bookkeeping stays opaque, the rest is set aside."""
        try:
            head = decode_guarded(_head_decoder.decode, data)
        except msgspec.DecodeError as exc:
            self.quarantine(line, failure_reason(data, exc))
            return
        a = head.session_id if isinstance(head.session_id, str) else None
        b = head.session_id_alias if isinstance(head.session_id_alias, str) else None
        self.check_identity(a, b, line)
        uuid = head.uuid if isinstance(head.uuid, str) else None
        if isinstance(head.type, str) and head.type in BOOKKEEPING:
            self.other += 1
        elif head.type is None or head.type in ("user", "assistant"):
            self.quarantine(line, "schema_mismatch", sid=a or b, uuid=uuid)
        else:
            self.quarantine(line, "unknown_record_type", sid=a or b, uuid=uuid, field="type")

    # -- identity (CLAUDE-13) ------------------------------------------------------------
    def check_identity(self, a: str | None, b: str | None, line: Line) -> str | None:
        """Track the source's session identity; raise on conflicting aliases.

        Two aliases in one record must agree. A new session id (resume lineage: Claude Code
        keeps writing a resumed session into one file) is accepted only through an alias that
        established the current identity; a different alias naming another session conflicts.
        """
        if b is None and a is not None and a == self.cur and self.camel:
            return a  # the common case: the same sessionId as the lines before
        a = a or None
        b = b or None
        if a is None and b is None:
            return None
        if a is not None and b is not None and a != b:
            raise SourceError(
                "identity_conflict", f"line {line.number}: sessionId and session_id name different sessions"
            )
        value = a if a is not None else b
        assert value is not None
        aliases = frozenset(n for n, v in (("sessionId", a), ("session_id", b)) if v is not None)
        if self.cur is None or value != self.cur:
            if self.cur is not None and not (aliases & self.via):
                raise SourceError(
                    "identity_conflict",
                    f"line {line.number}: {'/'.join(sorted(aliases))} names a session other than"
                    f" the one {'/'.join(sorted(self.via))} established",
                )
            if len(value) <= MAX_ID:
                self.cur, self.via = value, aliases
        else:
            self.via = self.via | aliases
        self.camel = "sessionId" in self.via
        return value

    def identify(self, rec: _Record, line: Line) -> str | None:
        sid = self.check_identity(rec.session_id, rec.session_id_alias, line)
        if self.file_agent is not None and rec.agent_id and rec.agent_id != self.file_agent:
            raise SourceError("identity_conflict", f"line {line.number}: agentId differs from the file's agent id")
        return sid

    def sid_of(self, rec: _Record) -> str | None:
        return rec.session_id or rec.session_id_alias or self.cur or self.fallback_sid

    def context(self, rec: _Record, line: Line, sid: str | None) -> _Ctx:
        # Raw envelope values: ``session`` normalises them once per distinct envelope.
        key = (
            sid or self.cur or self.fallback_sid,
            rec.agent_id,
            rec.is_sidechain,
            rec.version,
            rec.git_branch,
            rec.cwd,
        )
        last = self.last
        if last is not None and key == last[0]:  # most records repeat the envelope before them
            t, sid, attributes, cwd = last[1]
        else:
            session = self.sessions.get(key)
            if session is None:
                session = self.session(key)
            self.last = (key, session)
            t, sid, attributes, cwd = session
        # A known-valid minute with a canonical ``:SS.mmmZ`` rest is canonical_time's "yes" (the
        # two tail sets also make the length 24); anything else takes the full test.
        ts = rec.timestamp
        occurred_at = (
            ts
            if isinstance(ts, str) and ts[19:] in _MILLIS and ts[16:19] in _SECONDS and ts[:16] in _valid_minutes
            else canonical_time(ts)
        )
        uuid = rec.uuid or None
        return _Ctx(
            t,
            sid,
            cwd,
            attributes,
            occurred_at,
            uuid,
            line,
            Provenance(source_kind=KIND, path=self.path, line=line.number, offset=line.offset, record_id=uuid),
            f"uuid:{uuid}:block:" if uuid is not None else f"offset:{line.offset}:block:",
        )

    def session(self, key: _SessionKey) -> _Session:
        """The template of one session's observations, made once per distinct record envelope."""
        base, agent_id, sidechain, version, branch, cwd = key
        agent_id = agent_id or None
        cwd = cwd or None
        if agent_id is not None:
            sid, parent = f"{base}/{agent_id}", base
        else:
            sid, parent = base, None
        attributes: dict[str, str] = {}
        if version:
            attributes["version"] = version
        if branch:
            attributes["git_branch"] = branch
        if agent_id:
            attributes["agent_id"] = agent_id
        t = _template(sid, SUBAGENT if (sidechain or agent_id is not None) else AGENT, cwd, attributes, parent)
        if len(self.sessions) >= MAX_SESSIONS:
            self.sessions.clear()
        session = self.sessions[key] = (t, sid, attributes, cwd)
        return session

    # -- conversation records ------------------------------------------------------------
    def conversation(self, line: Line, rec: _Record, kind: str | None) -> None:
        msg = rec.message
        if msg is None or msg.content is None:
            self.identify(rec, line)
            self.records += 1
            self.quarantine(line, "schema_mismatch", sid=self.sid_of(rec), uuid=rec.uuid, field="message")
            return
        if kind is None:
            if msg.role not in ("user", "assistant"):
                self.identify(rec, line)
                self.records += 1
                self.quarantine(line, "unknown_record_type", sid=self.sid_of(rec), uuid=rec.uuid, field="type")
                return
            kind = msg.role
        content = msg.content
        results: list[_Block] | None = None  # a user record that holds only tool results
        if kind == "assistant":
            # A response group closes when another response (or a record without one) starts.
            group = self.group
            if group is not None and (
                msg.id is None
                or group.key != f"{rec.session_id or rec.session_id_alias or self.cur or self.fallback_sid}\x1f{msg.id}"
            ):
                self.boundary(line)
        elif isinstance(content, str):
            self.boundary(line)
        else:
            # A user record with anything but tool results is a new turn; tool results of a
            # response's parallel calls arrive between its lines and do not close it.
            results = content
            for block in content:
                if block.type != "tool_result":
                    results = None
                    self.boundary(line)
                    break
        sid = rec.session_id
        if not (
            sid is not None
            and rec.session_id_alias is None
            and sid == self.cur
            and self.camel
            and (self.file_agent is None or not rec.agent_id or rec.agent_id == self.file_agent)
        ):
            sid = self.identify(rec, line)  # the common case above needs no identity change
        self.records += 1
        ctx = self.context(rec, line, sid)
        if ctx.sid not in self.started:
            self.start(ctx)
        ambiguous = ("role",) if msg.role != kind and msg.role is not None else ()
        if kind == "assistant":
            self.assistant(ctx, rec, msg, content, ambiguous)
        elif results is not None:
            if results:
                self.tool_results(ctx, rec, results, len(results))
        else:
            self.user(ctx, rec, content, ambiguous)

    def group_key(self, rec: _Record, message_id: str) -> str:
        return f"{rec.session_id or rec.session_id_alias or self.cur or self.fallback_sid}\x1f{message_id}"

    def start(self, ctx: _Ctx) -> None:
        """One session observation per session id met in this source (start, and parent link)."""
        if ctx.sid in self.started:
            return
        if len(ctx.sid) <= MAX_ID:
            self.started[ctx.sid] = None
            while len(self.started) > MAX_STARTED:
                self.started.popitem(last=False)
        self.emit_session(ctx, "session:start")

    def user(self, ctx: _Ctx, rec: _Record, content: str | list[_Block], ambiguous: tuple[str, ...]) -> None:
        # The compaction helper's prompt is Claude Code's own, never a person's words.
        injected = bool(rec.is_meta or rec.is_compact_summary) or (rec.agent_id or "").startswith(COMPACT_AGENT_PREFIX)
        if isinstance(content, str):
            if content.strip():
                self.emit_message(ctx, ctx.coord + "0", "user", content, injected or looks_injected(content), ambiguous)
            return
        results = 0
        for i, block in enumerate(content):
            btype = block.type
            if btype == "text":
                text = block.text
                if text and text.strip():
                    self.emit_message(
                        ctx, ctx.coord + str(i), "user", text, injected or looks_injected(text), ambiguous
                    )
            elif btype == "tool_result":
                results += 1
            elif btype == "tool_use":
                self.tool_use(ctx, i, block, None)
            elif btype not in DROPPED_BLOCKS:
                self.quarantine(
                    ctx.line, "unknown_content_block", sid=ctx.sid, uuid=ctx.uuid, field=f"message.content[{i}]"
                )
        if results:
            self.tool_results(ctx, rec, content, results)

    def assistant(
        self, ctx: _Ctx, rec: _Record, msg: _Message, content: str | list[_Block], ambiguous: tuple[str, ...]
    ) -> None:
        model = msg.model or None
        synthetic = model == SYNTHETIC_MODEL
        if synthetic:
            model = None
        group = self.group
        if group is None:
            key = self.group_key(rec, msg.id) if msg.id else None
            usage_done = self.done.get(key, False) if key is not None else False
            group = self.group = _Group(key, ctx, usage_done)
        if model is not None:
            if group.model is not None and group.model != model:
                group.model_conflict = True
            group.model = model
        if isinstance(content, str):
            self.add_text(group, ctx, 0, content)
        else:
            for i, block in enumerate(content):
                btype = block.type
                if btype == "text":
                    if block.text is not None:
                        self.add_text(group, ctx, i, block.text)
                elif btype == "tool_use":
                    self.tool_use(ctx, i, block, model)
                elif btype == "tool_result":
                    self.tool_results(ctx, rec, content[i : i + 1], 1, index_base=i)
                elif btype not in DROPPED_BLOCKS:
                    self.quarantine(
                        ctx.line, "unknown_content_block", sid=ctx.sid, uuid=ctx.uuid, field=f"message.content[{i}]"
                    )
        if msg.usage is not None:
            group.usage = msg.usage
            group.usage_ctx = ctx
            group.usage_request = rec.request_id
        if synthetic:
            # Claude Code's own stand-in for a response (API errors...): no tokens were used.
            group.injected = True
            group.usage_done = True
        if ambiguous:
            group.role_conflict = True
        if group.key is None:
            self.flush()

    def add_text(self, group: _Group, ctx: _Ctx, index: int, text: str) -> None:
        if not text.strip():
            return  # whitespace-only blocks ("\n\n") carry nothing
        if group.text_ctx is None:
            group.text_ctx = ctx
            group.text_coord = ctx.coord + str(index)
        if group.overflow:
            return
        # Held text never grows past the bound: the merged message would be quarantined anyway.
        group.text_size += utf8_len(text) + (len(TEXT_JOIN) if group.texts else 0)
        if group.text_size > AUTHORED_TEXT_BOUND:
            group.overflow = True
            group.texts = []
            return
        group.texts.append(text)

    def flush(self) -> None:
        """Emit the open response group: one message (text only) and one usage (CLAUDE-9)."""
        group = self.group
        if group is None:
            return
        self.group = None
        text_ctx = group.text_ctx
        model = group.model
        provider = provider_of(model) if model is not None else None
        ambiguous = _AMBIGUOUS[group.model_conflict, group.role_conflict]
        if text_ctx is not None and group.text_coord is not None:
            if group.overflow:
                self.quarantine(
                    text_ctx.line,
                    "unbounded_value",
                    sid=text_ctx.sid,
                    uuid=text_ctx.uuid,
                    err=BoundExceeded("text", AUTHORED_TEXT_BOUND, group.text_size),
                )
            else:
                self.emit_message(
                    text_ctx,
                    group.text_coord,
                    "assistant",
                    TEXT_JOIN.join(group.texts),
                    group.injected,
                    ambiguous,
                    model,
                    provider,
                )
        usage = group.usage
        if usage is not None and not group.usage_done and group.usage_ctx is not None:
            fresh, read, created = usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens
            # Canonical input counts every input token: the cache reads and writes are parts of it.
            if fresh is None and read is None and created is None:
                total_in = None
            else:
                total_in = (fresh or 0) + (read or 0) + (created or 0)
            if total_in is not None or usage.output_tokens is not None:
                canonical = TokenUsage(
                    input_tokens=total_in,
                    output_tokens=usage.output_tokens,
                    cache_read_input_tokens=read,
                    cache_creation_input_tokens=created,
                )
                key = group.key
                message_id = key.split(chr(31), 1)[1] if key else None
                coordinate = f"message:{message_id}:usage" if key else group.ctx.coordinate(0) + ":usage"
                # ccusage's identity of a response: message.id and requestId, both present.
                request = group.usage_request
                response_id = (
                    f"{message_id}:{request}"
                    if message_id and request and len(message_id) <= MAX_ID and len(request) <= MAX_ID
                    else None
                )
                self.emit_usage(
                    group.usage_ctx,
                    coordinate,
                    canonical,
                    model,
                    provider,
                    ("model",) if group.model_conflict else (),
                    response_id,
                )
                group.usage_done = True
        if group.key is not None and len(group.key) <= 2 * MAX_ID:
            self.done[group.key] = group.usage_done or bool(self.done.get(group.key))
            self.done.move_to_end(group.key)
            while len(self.done) > MAX_DONE_GROUPS:
                self.done.popitem(last=False)

    # -- tools -----------------------------------------------------------------------------
    def tool_use(self, ctx: _Ctx, index: int, block: _Block, model: str | None) -> None:
        name = block.name
        call_id = block.id
        value = block.input
        if call_id and name and len(call_id) <= MAX_ID and len(name) <= MAX_ID:
            self.calls[call_id] = name
            while len(self.calls) > MAX_PENDING_CALLS:
                self.calls.popitem(last=False)
        try:
            if name == "MultiEdit":
                arguments = _multiedit_arguments(value)
            else:
                arguments = encode_arguments(
                    value if isinstance(value, _ARGUMENT_TYPES) else None,
                    AUTHORED_KEYS.get(name or "", ()),
                )
        except BoundExceeded as exc:
            self.quarantine(ctx.line, "unbounded_value", sid=ctx.sid, uuid=ctx.uuid, err=exc)
            return
        command = file_path = url = None
        if name and isinstance(value, dict):
            if name in COMMAND_TOOLS:
                item = value.get("command")
                command = item if isinstance(item, str) else None
            elif name in PATH_FIELD:
                item = value.get(PATH_FIELD[name])
                file_path = item if isinstance(item, str) else None
            elif name in URL_FIELD:
                item = value.get(URL_FIELD[name])
                url = item if isinstance(item, str) else None
        access = None if file_path is None else ("write" if name in WRITE_TOOLS else "read")
        self.emit_requested(
            ctx, ctx.coord + str(index), name, call_id, arguments, command, file_path, url, model, access
        )

    def tool_results(self, ctx: _Ctx, rec: _Record, blocks: list[_Block], count: int, index_base: int = 0) -> None:
        detail: _ToolUseResult | None = None
        detail_read = False
        for offset, block in enumerate(blocks):
            if block.type != "tool_result":
                continue
            i = index_base + offset
            call_id = block.tool_use_id
            name = self.calls.pop(call_id, None) if call_id else None
            content = block.content
            if content is None or isinstance(content, str):
                text, unknown = content, _NO_UNKNOWN
            else:
                text, unknown = _result_text(content)
            for j in unknown:
                self.quarantine(
                    ctx.line,
                    "unknown_content_block",
                    sid=ctx.sid,
                    uuid=ctx.uuid,
                    field=f"message.content[{i}].content[{j}]",
                )
            interrupted = False
            if count == 1 and rec.tool_use_result and (name is None or name in RESULT_DETAIL_TOOLS):
                if not detail_read:
                    detail_read = True
                    detail = _tool_use_result(rec.tool_use_result)
                if detail is not None:
                    interrupted = detail.interrupted is True
                    if detail.agent_id and call_id:
                        self.link(ctx, detail.agent_id, call_id)
            # The observation (see "output" above), built here: this runs once per tool result.
            t = ctx.t
            err = t.error
            if err is None and name is not None and len(name) > _SHORT:
                err = _over("tool_name", name)
            if err is None and call_id is not None and len(call_id) > _SHORT:
                err = _over("call_id", call_id)
            if err is None and text is not None and len(text) > _SHORT_TEXT:
                err = _over("result", text)
            if err is None and (err := t.attribute_error) is None:
                self.observations.append(
                    _replace(
                        t.observation,
                        observation_id=_oid(t, ctx.coord + str(i)),
                        family=_TOOL,
                        sequence=ctx.line.number,
                        provenance=ctx.prov,
                        occurred_at=ctx.occurred_at,
                        stage=_RESULT,
                        tool_name=name,
                        call_id=call_id,
                        result=text,
                        is_error=block.is_error,
                        interrupted=interrupted,
                    )
                )
            else:
                self.bad(ctx, err)

    # -- subagent links ------------------------------------------------------------------
    def progress(self, line: Line, rec: _Record) -> None:
        data = rec.data
        if data is not None and data.type == "agent_progress" and data.agent_id and rec.parent_tool_use_id:
            ctx = self.context(rec, line, rec.session_id or rec.session_id_alias)
            self.link(ctx, data.agent_id, rec.parent_tool_use_id)

    def link(self, ctx: _Ctx, agent_id: str, call_id: str) -> None:
        """Session observation of a subagent, in the parent's source, naming the spawning call."""
        if agent_id in self.linked or len(agent_id) > MAX_ID:
            return
        self.linked[agent_id] = None
        while len(self.linked) > MAX_LINKED:
            self.linked.popitem(last=False)
        child = f"{ctx.sid}/{agent_id}"
        # The link belongs to the parent's source identity, with the child's session fields.
        t = _template(child, SUBAGENT, ctx.cwd, {**ctx.attributes, "agent_id": agent_id}, ctx.sid, ctx.sid)
        link_ctx = _Ctx(
            t, child, ctx.cwd, t.observation.attributes, ctx.occurred_at, ctx.uuid, ctx.line, ctx.prov, ctx.coord
        )
        self.emit_session(link_ctx, f"agent:{agent_id}:link", call_id)


def _tool_use_result(raw: msgspec.Raw) -> _ToolUseResult | None:
    view = memoryview(raw)
    if not view or view[0] != 0x7B:  # "{"
        return None  # a plain string (errors, rejections)
    try:
        return _tool_use_result_decoder.decode(raw)  # decoded in place, never copied
    except (msgspec.DecodeError, RecursionError):
        return None


class ClaudeAdapter:
    """Source-owned adapter of ``claude.projects``: one transcript file per source."""

    kind = KIND

    def __init__(self, *, batch_bytes: int = BATCH_BYTES, max_batch_bytes: int = MAX_BATCH_BYTES) -> None:
        self.batch_bytes = batch_bytes
        self.max_batch_bytes = max(max_batch_bytes, batch_bytes)

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior = decode_cursor(cursor) if ctx.history is HistoryMode.INCREMENTAL else None
        with JsonlReader(source.path, prior) as reader:
            # The carried state belongs to the position it was saved at: a file read again
            # from the start (replaced, truncated) starts with a clean state.
            carry = bytes(prior.carry) if prior is not None and prior.carry is not None else None
            if reader.start_offset == 0:
                carry = None
            scan = _Scan(source, carry)
            start = end_offset = reader.start_offset
            end_line = reader.start_line
            batch_bytes = self.batch_bytes
            # A line that ends at or past ``limit`` fills the window (``window >= batch_bytes``).
            limit = start + batch_bytes - 1
            last: Line | None = None
            for line in reader.lines():
                try:
                    scan.line(line)
                except RecursionError:
                    # JSON nested too deep inside a value decoded later: this line only.
                    scan.quarantine(line, NESTING_TOO_DEEP)
                if scan.ready is not None:
                    batch, cut_offset, cut_line, cut_carry = scan.ready
                    scan.ready = None
                    batch.cursor = encode_cursor(reader.cursor(cut_offset, cut_line, carry=cut_carry))
                    batch.bytes_read = cut_offset - start
                    start = cut_offset
                    limit = start + batch_bytes - 1
                    batch.reset = reader.take_restart()
                    yield batch
                last = line
                if line.offset + line.length >= limit:
                    end_offset, end_line = line.offset + line.length + 1, line.number
                    window = end_offset - start
                    if scan.group is None or window >= self.max_batch_bytes:
                        scan.flush()
                        scan.cut_wanted = False
                        raw = encode_cursor(reader.cursor(end_offset, end_line, carry=scan.carry()))
                        batch = scan.take(window, raw)
                        batch.reset = reader.take_restart()
                        yield batch
                        start = end_offset
                        limit = start + batch_bytes - 1
                    else:
                        scan.cut_wanted = True  # cut where the open response closes
            if last is not None:
                end_offset, end_line = last.offset + last.length + 1, last.number
            scan.flush()
            raw = encode_cursor(reader.cursor(end_offset, end_line, carry=scan.carry()))
            batch = scan.take(end_offset - start, raw)
            batch.partial = reader.partial_tail
            batch.reset = reader.take_restart()
            yield batch
