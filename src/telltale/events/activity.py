"""Activity events: one document per canonical observation.

This is the output boundary for observation content: every string that leaves here
went through :func:`telltale.events.redaction.redact` and a size bound, according to
the content mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import msgspec

from telltale.events.envelope import SCHEMA_VERSION, ContentMode, host_raw, path_hash
from telltale.events.redaction import bounded, redact, redact_arguments, redact_cached, size_and_hash, value_hash
from telltale.model import Family, Observation, Stage

#: Bound (characters) on commands, paths, URLs and argument text in redacted/full mode.
FIELD_LIMIT = 2_048
#: Bound on message and tool-result text in full mode.
TEXT_LIMIT = 8_192

#: Bound on each small attribute value.
_ATTRIBUTE_LIMIT = 512
#: Extra characters redacted past a bound, so a secret crossing the cut is still recognised.
_MARGIN = 512

_encode = msgspec.json.Encoder().encode

_CHAT = {"name": "chat"}
_EXECUTE_TOOL = {"name": "execute_tool"}
_PROCESS = ["process"]
_SESSION = ["session"]
_INFO = ["info"]


# -- the document, as typed structs: built and encoded faster than nested dicts ------
# (``omit_defaults``: an optional field left at ``None`` is not written at all.)


class _Event(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    id: str
    kind: str
    dataset: str
    module: str
    action: str
    created: str
    category: list[str]
    type: list[str]
    outcome: str | None = None


class _Source(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    kind: str
    path_hash: str
    line: int | None = None
    row: str | None = None


class _Message(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    role: str
    injected: bool
    length: int
    hash: str | None = None
    text: str | None = None


class _Telltale(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    schema_version: str
    client: str
    content_mode: str
    time_source: str
    sequence: int
    source: _Source
    cwd_hash: str | None = None
    cwd: str | None = None
    parent_session_id: str | None = None
    parent_call_id: str | None = None
    attributes: msgspec.Raw | None = None
    message: _Message | None = None
    tool: dict[str, Any] | None = None
    #: What the normalisation stage read in the tool request (``normalized``, ``program``,
    #: ``argv``, ``pipeline``, ``written_paths``, ``read_paths``); only with content kept.
    command: dict[str, Any] | None = None
    usage_total_tokens: int | None = None
    response_id: str | None = None
    ambiguous: list[str] | None = None
    truncated: list[str] | None = None


class _GenAI(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    conversation: msgspec.Raw | None = None
    agent: msgspec.Raw | None = None
    provider: dict[str, str] | None = None
    request: dict[str, str] | None = None
    operation: dict[str, str] | None = None
    tool: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None


class _Document(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False, rename={"timestamp": "@timestamp"}):
    # The constant host, user and observer objects, encoded once (see ``host_raw``).
    host: msgspec.Raw
    user: msgspec.Raw
    observer: msgspec.Raw
    timestamp: str
    event: _Event
    telltale: _Telltale
    gen_ai: _GenAI | None = None
    process: dict[str, Any] | None = None
    file: dict[str, str] | None = None
    url: dict[str, str] | None = None
    message: str


# Enum members bound once: comparing by identity is cheaper than hashing an Enum.
_MESSAGE, _TOOL, _USAGE, _SESSION_FAMILY = Family.MESSAGE, Family.TOOL, Family.USAGE, Family.SESSION
_REQUESTED, _RESULT = Stage.REQUESTED, Stage.RESULT


def action_of(obs: Observation) -> str:
    family = obs.family
    if family is _TOOL:
        return "tool_call" if obs.stage is _REQUESTED else ("tool_result" if obs.stage is _RESULT else "other")
    if obs.stage is not None:
        return "other"  # a stage belongs to tool observations only
    if family is _MESSAGE:
        return "message"
    if family is _USAGE:
        return "usage"
    if family is _SESSION_FAMILY:
        return "session"
    return "other"


def _field(value: str, limit: int, name: str, truncated: list[str]) -> str:
    """Redact and bound one outgoing string; record ``name`` in ``truncated`` when cut.

    Bound before redacting (large arguments would otherwise dominate the scan), with a
    margin so a secret that straddles the limit is still whole when redacted.
    """
    if len(value) <= limit:
        text = redact(value)
        if len(text) <= limit:
            return text
    window, cut = bounded(value, limit + _MARGIN)
    text, cut2 = bounded(redact(window), limit)
    if cut or cut2:
        truncated.append(name)
    return text


class _Context:
    """What many events of one session share, redacted, hashed and bounded once.

    A transcript's events repeat their session, working directory and lineage; computing
    those parts once per distinct combination instead of once per event is most of what
    keeps event building off the scan's critical path. Attributes are not part of it:
    some adapters set per-event ones (a patch's paths), see :func:`_attributes`.
    """

    __slots__ = (
        "agent", "client", "content", "conversation", "cwd", "cwd_hash", "parent_call_id", "parent_session_id",
        "path_hash", "truncated",
    )

    def __init__(
        self, path: str, session_id: str | None, cwd: str | None, agent: str | None,
        parent_session_id: str | None, parent_call_id: str | None, client: str, content: str,
    ) -> None:
        truncated: list[str] = []
        self.cwd_hash: str | None = None
        self.cwd: str | None = None
        if cwd:
            self.cwd_hash = path_hash(cwd)
            if content != ContentMode.NONE:
                short = len(cwd) <= FIELD_LIMIT
                self.cwd = redact_cached(cwd) if short else _field(cwd, FIELD_LIMIT, "cwd", truncated)
        self.client = client
        self.parent_session_id = parent_session_id or None
        self.parent_call_id = parent_call_id or None
        # Encoded once: the same bytes in every event of the session.
        self.conversation = msgspec.Raw(_encode({"id": session_id})) if session_id else None
        self.agent = msgspec.Raw(_encode({"name": agent})) if agent else None
        self.content = content
        self.truncated = truncated
        self.path_hash = path_hash(path)


_CACHE_SIZE = 4_096
_session_context = lru_cache(maxsize=_CACHE_SIZE)(_Context)
#: The context of the previous event, checked first: consecutive events mostly share it.
_last: tuple[Observation, _Context] | None = None


def _context(obs: Observation, content: str) -> _Context:
    global _last
    last = _last
    if last is not None:
        prev = last[0]
        # Adapters derive a session's observations from one template: the fields are the
        # very same objects, so identity settles most lookups.
        if (
            prev.provenance.path is obs.provenance.path
            and prev.session_id is obs.session_id
            and prev.cwd is obs.cwd
            and prev.agent is obs.agent
            and prev.parent_session_id is obs.parent_session_id
            and prev.parent_call_id is obs.parent_call_id
            and prev.client is obs.client
            and last[1].content == content
        ):
            _last = (obs, last[1])
            return last[1]
    ctx = _session_context(
        obs.provenance.path, obs.session_id, obs.cwd, obs.agent, obs.parent_session_id, obs.parent_call_id,
        obs.client, content,
    )
    _last = (obs, ctx)
    return ctx


#: Outgoing attributes (encoded once) and the names of those cut.
_Attributes = tuple[msgspec.Raw, tuple[str, ...]]


@lru_cache(maxsize=_CACHE_SIZE)
def _outgoing_attributes(content: str, items: tuple[tuple[str, str], ...]) -> _Attributes:
    """Attributes redacted (hashed in ``none`` mode) and the names of those cut."""
    truncated: list[str] = []
    if content != ContentMode.NONE:
        out = {
            k: redact_cached(v)
            if len(v) <= _ATTRIBUTE_LIMIT
            else _field(v, _ATTRIBUTE_LIMIT, f"attributes.{k}", truncated)
            for k, v in items
        }
    else:
        out = {k: value_hash(v) for k, v in items}
    return msgspec.Raw(_encode(out)), tuple(truncated)


#: The attributes of the previous event: (its dict, content mode, outgoing form).
_last_attributes: tuple[dict[str, str], str, _Attributes] | None = None


def _attributes(attributes: dict[str, str], content: str) -> _Attributes:
    """The outgoing form of an observation's attributes; the previous event's dict is
    checked by identity first (a session template shares one)."""
    global _last_attributes
    last = _last_attributes
    if last is not None and last[0] is attributes and last[1] == content:
        return last[2]
    hit = _outgoing_attributes(content, tuple(attributes.items()))
    _last_attributes = (attributes, content, hit)
    return hit


def bounded_text(value: str, limit: int) -> str:
    """A text redacted and cut to ``limit`` as an event in ``full`` mode carries it."""
    return _field(value, limit, "text", [])


def outgoing_session_fields(obs: Observation, content: str) -> tuple[str | None, str | None, dict[str, str]]:
    """The cwd, cwd hash and attributes of an observation's event, as the log holds them
    (redacted, or hashed in ``none`` mode): what the index records of its session."""
    ctx = _context(obs, content)
    attributes: dict[str, str] = {}
    if obs.attributes:
        raw, _ = _attributes(obs.attributes, content)
        attributes = msgspec.json.decode(raw)
    return ctx.cwd, ctx.cwd_hash, attributes


def activity_event(obs: Observation, *, content: str, observed_at: str) -> dict[str, Any]:
    """Build the ECS/GenAI document of one observation (a fresh copy of what is emitted:
    the hot path shares constant parts between documents)."""
    doc: dict[str, Any] = msgspec.json.decode(activity_line(obs, content=content, observed_at=observed_at))
    return doc


def activity_line(obs: Observation, *, content: str, observed_at: str) -> bytes:
    """The encoded document of one observation."""
    return _encode(_activity(obs, content, observed_at))


def activity_lines(observations: Sequence[Observation], content: str, observed_at: str, user: str = "") -> list[bytes]:
    """The encoded documents of a batch of observations (the scan's hot loop); ``user`` is
    the account of their store (empty: the account Telltale runs as)."""
    encode, build = _encode, _activity
    return [encode(build(obs, content, observed_at, user)) for obs in observations]


def _activity(obs: Observation, content: str, observed_at: str, user_name: str = "") -> _Document:
    ctx = _context(obs, content)
    family = obs.family
    action = action_of(obs)
    timestamp = obs.occurred_at
    event = _Event(
        id=obs.observation_id,
        kind="event",
        dataset="telltale.activity",
        module="telltale",
        action=action,
        created=observed_at,
        category=_PROCESS if action == "tool_call" and obs.command else _SESSION,
        type=_INFO,
    )
    truncated: list[str] = []
    keep = content != ContentMode.NONE

    prov = obs.provenance
    row = prov.row
    source = _Source(
        kind=obs.source_kind,
        path_hash=ctx.path_hash,
        line=prov.line,
        row=_field(row, 256, "source.row", truncated) if row is not None else None,
    )
    if ctx.truncated:
        truncated.extend(ctx.truncated)
    attributes = None
    if obs.attributes:
        attributes, cut = _attributes(obs.attributes, content)
        if cut:
            truncated.extend(cut)
    tt = _Telltale(
        schema_version=SCHEMA_VERSION,
        client=ctx.client,
        content_mode=content,
        time_source="source" if timestamp else "observed",
        sequence=obs.sequence,
        source=source,
        cwd_hash=ctx.cwd_hash,
        cwd=ctx.cwd,
        parent_session_id=ctx.parent_session_id,
        parent_call_id=ctx.parent_call_id,
        attributes=attributes,
        ambiguous=list(obs.ambiguous) if obs.ambiguous else None,
    )
    host, user, observer = host_raw(user_name)
    doc = _Document(
        host=host, user=user, observer=observer, timestamp=timestamp or observed_at, event=event, telltale=tt,
        message=action,
    )
    operation: dict[str, str] | None = None
    gen_tool: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None

    if family is _TOOL:
        operation = _EXECUTE_TOOL
        tool: dict[str, Any] = {}
        if obs.tool_name:
            gen_tool = {"name": obs.tool_name, "call": {"id": obs.call_id}} if obs.call_id else {"name": obs.tool_name}
        elif obs.call_id:
            gen_tool = {"call": {"id": obs.call_id}}
        if action == "tool_call":
            if obs.arguments is not None:
                arguments = obs.arguments
                tool["arguments_length"], tool["arguments_hash"] = size_and_hash(arguments)
                if keep:
                    # Decoded, redacted value by value, encoded again (never the JSON text).
                    shown, arguments_cut = redact_arguments(arguments, FIELD_LIMIT, _MARGIN)
                    tool["arguments"] = shown
                    if arguments_cut:
                        truncated.append("tool.arguments")
            if obs.command:
                if keep:
                    command = _field(obs.command, FIELD_LIMIT, "process.command_line", truncated)
                    doc.process = {"command_line": command}
                tool["command_hash"] = value_hash(obs.command)
            file_path = obs.file_path
            if file_path:
                if keep:
                    # Sessions read and edit the same files again and again: short paths are memoised.
                    path = redact_cached(file_path) if len(file_path) <= _ATTRIBUTE_LIMIT else None
                    if path is None or len(path) > FIELD_LIMIT:
                        path = _field(file_path, FIELD_LIMIT, "file.path", truncated)
                    doc.file = {"path": path}
                tool["file_path_hash"] = path_hash(file_path)
            if obs.url:
                if keep:
                    doc.url = {"full": _field(obs.url, FIELD_LIMIT, "url.full", truncated)}
                tool["url_hash"] = value_hash(obs.url)
            if keep and (obs.programs or obs.written_paths or obs.read_paths):
                tt.command = _meaning(obs, truncated)
            doc.message = _tool_message("tool_call", obs.tool_name)
        else:
            if action == "other":
                operation = None
            result = obs.result
            if result:
                tool["result_length"], tool["result_hash"] = size_and_hash(result)
                if content == ContentMode.FULL:
                    tool["result"] = _field(result, TEXT_LIMIT, "tool.result", truncated)
            else:
                tool["result_length"] = 0
            if obs.exit_code is not None:
                doc.process = {"exit_code": obs.exit_code}
            if obs.is_error is not None:
                event.outcome = "failure" if obs.is_error else "success"
            if obs.interrupted:
                tool["interrupted"] = True
                event.outcome = "unknown"
            doc.message = _tool_message("tool_result", obs.tool_name)
        tt.tool = tool or None
    elif family is _MESSAGE:
        operation = _CHAT if action == "message" else None
        role = obs.role or "unknown"
        text = obs.text
        length = 0
        text_hash = text_out = None
        if text:
            length, text_hash = size_and_hash(text)
            if content == ContentMode.FULL:
                text_out = _field(text, TEXT_LIMIT, "message.text", truncated)
        tt.message = _Message(role=role, injected=obs.injected, length=length, hash=text_hash, text=text_out)
        doc.message = f"{role} message ({length} bytes)"
    elif family is _USAGE:
        operation = _CHAT if action == "usage" else None
        doc.message = f"usage {obs.model or ''}".strip()
        u = obs.usage
        if u is not None:
            usage = {}
            if u.input_tokens is not None:
                usage["input_tokens"] = u.input_tokens
            if u.output_tokens is not None:
                usage["output_tokens"] = u.output_tokens
            if u.cache_read_input_tokens is not None:
                usage["cache_read"] = {"input_tokens": u.cache_read_input_tokens}
            if u.cache_creation_input_tokens is not None:
                usage["cache_creation"] = {"input_tokens": u.cache_creation_input_tokens}
            if u.reasoning_output_tokens is not None:
                usage["reasoning"] = {"output_tokens": u.reasoning_output_tokens}
            if u.total_tokens is not None:
                tt.usage_total_tokens = u.total_tokens
            tt.response_id = obs.response_id
        else:
            doc.message = "usage"
    provider = obs.provider
    model = obs.model
    if ctx.conversation or ctx.agent or provider or model or operation or gen_tool or usage is not None:
        doc.gen_ai = _GenAI(
            conversation=ctx.conversation,
            agent=ctx.agent,
            provider=_named(provider) if provider else None,
            request=_model_request(model) if model else None,
            operation=operation,
            tool=gen_tool,
            usage=usage,
        )
    if truncated:
        tt.truncated = truncated
    return doc


#: Items of one list of :func:`_meaning` at most (the rest is counted as truncated).
_MEANING_ITEMS = 32


def _meaning(obs: Observation, truncated: list[str]) -> dict[str, Any]:
    """``telltale.command``: the normalisation stage's fields, redacted and bounded like the command."""
    out: dict[str, Any] = {}
    if obs.command_normalized is not None:
        out["normalized"] = _field(obs.command_normalized, FIELD_LIMIT, "telltale.command.normalized", truncated)
    for key, value in (
        ("program", obs.programs),
        ("argv", obs.argv),
        ("pipeline", obs.pipelines),
        ("written_paths", obs.written_paths),
        ("read_paths", obs.read_paths),
    ):
        if value:
            items = value.split("\n")
            if len(items) > _MEANING_ITEMS:
                truncated.append(f"telltale.command.{key}")
                items = items[:_MEANING_ITEMS]
            out[key] = [_field(item, FIELD_LIMIT, f"telltale.command.{key}", truncated) for item in items]
    return out


@lru_cache(maxsize=256)
def _named(name: str) -> dict[str, str]:
    """``{"name": name}``, shared: a scan meets a handful of providers."""
    return {"name": name}


@lru_cache(maxsize=256)
def _model_request(model: str) -> dict[str, str]:
    """``{"model": model}``, shared: a scan meets a handful of models."""
    return {"model": model}


@lru_cache(maxsize=1024)
def _tool_message(action: str, tool_name: str | None) -> str:
    """The ``message`` of a tool event, shared: a scan meets a few dozen tool names."""
    return f"{action} {tool_name or 'unknown'}"
