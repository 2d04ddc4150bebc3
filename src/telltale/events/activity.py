"""Activity events: one document per canonical observation.

This is the output boundary for observation content: every string that leaves here
went through :func:`telltale.events.redaction.redact` and a size bound, according to
the content mode.
"""

from __future__ import annotations

from typing import Any

import msgspec

from telltale.events.envelope import SCHEMA_VERSION, ContentMode, encode_with_host, path_hash
from telltale.events.redaction import bounded, redact, redact_cached, size_and_hash, value_hash
from telltale.model import Family, Observation, Stage

#: Bound (characters) on commands, paths, URLs and argument text in redacted/full mode.
FIELD_LIMIT = 2_048
#: Bound on message and tool-result text in full mode.
TEXT_LIMIT = 8_192

#: Bound on each small attribute value.
_ATTRIBUTE_LIMIT = 512
#: Extra characters redacted past a bound, so a secret crossing the cut is still recognised.
_MARGIN = 512

_CHAT = {"name": "chat"}
_EXECUTE_TOOL = {"name": "execute_tool"}
_PROCESS = ["process"]
_SESSION = ["session"]
_INFO = ["info"]

# Enum members bound once: comparing by identity is cheaper than hashing an Enum.
_MESSAGE, _TOOL, _USAGE, _SESSION_FAMILY = Family.MESSAGE, Family.TOOL, Family.USAGE, Family.SESSION
_REQUESTED, _RESULT = Stage.REQUESTED, Stage.RESULT


def action_of(obs: Observation) -> str:
    family = obs.family
    if family is _TOOL:
        return "tool_call" if obs.stage is _REQUESTED else ("tool_result" if obs.stage is _RESULT else "other")
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

    __slots__ = ("content", "gen_ai", "path_hash", "telltale", "truncated")

    def __init__(self, obs: Observation, content: str) -> None:
        truncated: list[str] = []
        tt: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "client": obs.client, "content_mode": content}
        if obs.cwd:
            cwd = obs.cwd
            tt["cwd_hash"] = path_hash(cwd)
            if content != ContentMode.NONE:
                short = len(cwd) <= FIELD_LIMIT
                tt["cwd"] = redact_cached(cwd) if short else _field(cwd, FIELD_LIMIT, "cwd", truncated)
        if obs.parent_session_id:
            tt["parent_session_id"] = obs.parent_session_id
        if obs.parent_call_id:
            tt["parent_call_id"] = obs.parent_call_id
        gen_ai: dict[str, Any] = {}
        if obs.session_id:
            gen_ai["conversation"] = {"id": obs.session_id}
        if obs.agent:
            gen_ai["agent"] = {"name": obs.agent}
        self.content = content
        self.telltale = tt
        self.gen_ai = gen_ai
        self.truncated = truncated
        self.path_hash = path_hash(obs.provenance.path)


_ContextKey = tuple[str, str | None, str | None, str | None, str | None, str | None, str, str]
_CONTEXTS: dict[_ContextKey, _Context] = {}
_CONTEXTS_MAX = 4_096
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
    key = (
        obs.provenance.path, obs.session_id, obs.cwd, obs.agent, obs.parent_session_id, obs.parent_call_id,
        obs.client, content,
    )
    ctx = _CONTEXTS.get(key)
    if ctx is None:
        if len(_CONTEXTS) >= _CONTEXTS_MAX:
            _CONTEXTS.clear()
        ctx = _CONTEXTS[key] = _Context(obs, content)
    _last = (obs, ctx)
    return ctx


_Attributes = tuple[dict[str, str], tuple[str, ...]]
_ATTRIBUTES: dict[tuple[str, tuple[tuple[str, str], ...]], _Attributes] = {}
#: The attributes of the previous event: (its dict, content mode, output, truncated names).
_last_attributes: tuple[dict[str, str], str, dict[str, str], tuple[str, ...]] | None = None


def _attributes(attributes: dict[str, str], content: str) -> _Attributes:
    """The outgoing form of an observation's attributes (redacted, or hashed in ``none``
    mode) and the names of those cut to their bound; memoised, most repeat."""
    global _last_attributes
    last = _last_attributes
    if last is not None and last[0] is attributes and last[1] == content:
        return last[2], last[3]
    key = (content, tuple(attributes.items()))
    hit = _ATTRIBUTES.get(key)
    if hit is None:
        truncated: list[str] = []
        if content != ContentMode.NONE:
            out = {
                k: redact_cached(v)
                if len(v) <= _ATTRIBUTE_LIMIT
                else _field(v, _ATTRIBUTE_LIMIT, f"attributes.{k}", truncated)
                for k, v in attributes.items()
            }
        else:
            out = {k: value_hash(v) for k, v in attributes.items()}
        if len(_ATTRIBUTES) >= _CONTEXTS_MAX:
            _ATTRIBUTES.clear()
        hit = _ATTRIBUTES[key] = (out, tuple(truncated))
    _last_attributes = (attributes, content, hit[0], hit[1])
    return hit


def activity_event(obs: Observation, *, content: str, observed_at: str) -> dict[str, Any]:
    """Build the ECS/GenAI document of one observation (a fresh copy of what is emitted:
    the hot path shares constant parts between documents)."""
    doc: dict[str, Any] = msgspec.json.decode(activity_line(obs, content=content, observed_at=observed_at))
    return doc


def activity_line(obs: Observation, *, content: str, observed_at: str) -> bytes:
    """The encoded document of one observation (the scan's hot path)."""
    return encode_with_host(_activity(obs, content, observed_at))


def _activity(obs: Observation, content: str, observed_at: str) -> dict[str, Any]:
    ctx = _context(obs, content)
    family = obs.family
    # action_of, inlined (once per event).
    if family is _TOOL:
        stage = obs.stage
        action = "tool_call" if stage is _REQUESTED else ("tool_result" if stage is _RESULT else "other")
    elif family is _MESSAGE:
        action = "message"
    elif family is _USAGE:
        action = "usage"
    elif family is _SESSION_FAMILY:
        action = "session"
    else:
        action = "other"
    timestamp = obs.occurred_at
    # The envelope of base_event(with_host=False), written out: this runs once per event.
    event: dict[str, Any] = {
        "id": obs.observation_id,
        "kind": "event",
        "dataset": "telltale.activity",
        "module": "telltale",
        "action": action,
        "created": observed_at,
        "category": _PROCESS if action == "tool_call" and obs.command else _SESSION,
        "type": _INFO,
    }
    tt = ctx.telltale.copy()
    tt["time_source"] = "source" if timestamp else "observed"
    tt["sequence"] = obs.sequence
    doc: dict[str, Any] = {"@timestamp": timestamp or observed_at, "event": event, "telltale": tt}
    truncated: list[str] = []
    keep = content != ContentMode.NONE

    prov = obs.provenance
    source: dict[str, Any] = {"kind": obs.source_kind, "path_hash": ctx.path_hash}
    if prov.line is not None:
        source["line"] = prov.line
    if prov.row is not None:
        source["row"] = _field(prov.row, 256, "source.row", truncated)
    tt["source"] = source
    if ctx.truncated:
        truncated.extend(ctx.truncated)
    if obs.attributes:
        tt["attributes"], cut = _attributes(obs.attributes, content)
        if cut:
            truncated.extend(cut)
    gen_ai = ctx.gen_ai.copy()
    if obs.provider:
        gen_ai["provider"] = {"name": obs.provider}
    if obs.model:
        gen_ai["request"] = {"model": obs.model}
    if obs.ambiguous:
        tt["ambiguous"] = list(obs.ambiguous)

    if family is _TOOL:
        gen_ai["operation"] = _EXECUTE_TOOL
        tool: dict[str, Any] = {}
        if obs.tool_name:
            gen_ai["tool"] = {"name": obs.tool_name, "call": {"id": obs.call_id}} if obs.call_id else {
                "name": obs.tool_name
            }
        elif obs.call_id:
            gen_ai["tool"] = {"call": {"id": obs.call_id}}
        if action == "tool_call":
            if obs.arguments is not None:
                arguments = obs.arguments
                tool["arguments_length"], tool["arguments_hash"] = size_and_hash(arguments)
                if keep:
                    tool["arguments"] = _field(arguments, FIELD_LIMIT, "tool.arguments", truncated)
            if obs.command:
                if keep:
                    command = _field(obs.command, FIELD_LIMIT, "process.command_line", truncated)
                    doc["process"] = {"command_line": command}
                tool["command_hash"] = value_hash(obs.command)
            file_path = obs.file_path
            if file_path:
                if keep:
                    # Sessions read and edit the same files again and again: short paths are memoised.
                    path = redact_cached(file_path) if len(file_path) <= _ATTRIBUTE_LIMIT else None
                    if path is None or len(path) > FIELD_LIMIT:
                        path = _field(file_path, FIELD_LIMIT, "file.path", truncated)
                    doc["file"] = {"path": path}
                tool["file_path_hash"] = path_hash(file_path)
            if obs.url:
                if keep:
                    doc["url"] = {"full": _field(obs.url, FIELD_LIMIT, "url.full", truncated)}
                tool["url_hash"] = value_hash(obs.url)
            summary = f"tool_call {obs.tool_name or 'unknown'}"
        else:
            if action == "other":
                del gen_ai["operation"]
            result = obs.result
            if result:
                tool["result_length"], tool["result_hash"] = size_and_hash(result)
                if content == ContentMode.FULL:
                    tool["result"] = _field(result, TEXT_LIMIT, "tool.result", truncated)
            else:
                tool["result_length"] = 0
            if obs.exit_code is not None:
                doc["process"] = {"exit_code": obs.exit_code}
            if obs.is_error is not None:
                event["outcome"] = "failure" if obs.is_error else "success"
            if obs.interrupted:
                tool["interrupted"] = True
                event["outcome"] = "unknown"
            summary = f"tool_result {obs.tool_name or 'unknown'}"
        if tool:
            tt["tool"] = tool
    elif family is _MESSAGE:
        gen_ai["operation"] = _CHAT
        role = obs.role or "unknown"
        text = obs.text
        msg: dict[str, Any] = {"role": role, "injected": obs.injected}
        length = 0
        if text:
            length, msg["hash"] = size_and_hash(text)
            if content == ContentMode.FULL:
                msg["text"] = _field(text, TEXT_LIMIT, "message.text", truncated)
        msg["length"] = length
        tt["message"] = msg
        summary = f"{role} message ({length} bytes)"
    elif family is _USAGE:
        gen_ai["operation"] = _CHAT
        summary = f"usage {obs.model or ''}".strip()
        u = obs.usage
        if u is not None:
            usage: dict[str, Any] = {}
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
                tt["usage_total_tokens"] = u.total_tokens
            gen_ai["usage"] = usage
        else:
            summary = "usage"
    else:
        summary = action
    if gen_ai:
        doc["gen_ai"] = gen_ai
    if truncated:
        tt["truncated"] = truncated
    doc["message"] = summary
    return doc
