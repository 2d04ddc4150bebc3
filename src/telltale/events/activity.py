"""Activity events: one document per canonical observation.

This is the output boundary for observation content: every string that leaves here
went through :func:`telltale.events.redaction.redact` and a size bound, according to
the content mode.
"""

from __future__ import annotations

from typing import Any

from telltale.events.envelope import SCHEMA_VERSION, ContentMode, encode_with_host, host_fields, path_hash
from telltale.events.redaction import bounded, redact, redact_cached, value_hash
from telltale.model import Family, Observation, Stage

#: Bound (characters) on commands, paths, URLs and argument text in redacted/full mode.
FIELD_LIMIT = 2_048
#: Bound on message and tool-result text in full mode.
TEXT_LIMIT = 8_192

#: Bound on each small attribute value.
_ATTRIBUTE_LIMIT = 512
#: Extra characters redacted past a bound, so a secret crossing the cut is still recognised.
_MARGIN = 512

_ACTIONS = {
    (Family.MESSAGE, None): "message",
    (Family.TOOL, Stage.REQUESTED): "tool_call",
    (Family.TOOL, Stage.RESULT): "tool_result",
    (Family.USAGE, None): "usage",
    (Family.SESSION, None): "session",
}
_OPERATIONS = {"message": "chat", "tool_call": "execute_tool", "tool_result": "execute_tool", "usage": "chat"}


def action_of(obs: Observation) -> str:
    return _ACTIONS.get((obs.family, obs.stage), "other")


def _size(value: str) -> int:
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


class _Writer:
    """Applies the content mode to each outgoing string."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.truncated: list[str] = []

    def field(self, name: str, value: str, limit: int = FIELD_LIMIT) -> str:
        # Bound before redacting (large arguments would otherwise dominate the scan), with
        # a margin so a secret that straddles the limit is still whole when redacted.
        if len(value) <= limit:
            text = redact(value)
            if len(text) <= limit:
                return text
        window, cut = bounded(value, limit + _MARGIN)
        text, cut2 = bounded(redact(window), limit)
        if cut or cut2:
            self.truncated.append(name)
        return text


def activity_event(obs: Observation, *, content: str, observed_at: str) -> dict[str, Any]:
    """Build the ECS/GenAI document of one observation."""
    doc = _activity(obs, content, observed_at)
    doc.update(host_fields())
    return doc


def activity_line(obs: Observation, *, content: str, observed_at: str) -> bytes:
    """The encoded document of one observation (the scan's hot path)."""
    return encode_with_host(_activity(obs, content, observed_at))


def _activity(obs: Observation, content: str, observed_at: str) -> dict[str, Any]:
    action = action_of(obs)
    timestamp = obs.occurred_at
    # The envelope of base_event(with_host=False), written out: this runs once per event.
    event: dict[str, Any] = {
        "id": obs.observation_id,
        "kind": "event",
        "dataset": "telltale.activity",
        "module": "telltale",
        "action": action,
        "created": observed_at,
        "category": ["process"] if action == "tool_call" and obs.command else ["session"],
        "type": ["info"],
    }
    doc: dict[str, Any] = {
        "@timestamp": timestamp or observed_at,
        "event": event,
        "telltale": {"schema_version": SCHEMA_VERSION, "time_source": "source" if timestamp else "observed"},
    }
    w = _Writer(content)
    keep = content != ContentMode.NONE

    gen_ai: dict[str, Any] = {}
    if obs.session_id:
        gen_ai["conversation"] = {"id": obs.session_id}
    if obs.provider:
        gen_ai["provider"] = {"name": obs.provider}
    if obs.model:
        gen_ai["request"] = {"model": obs.model}
    if obs.agent:
        gen_ai["agent"] = {"name": obs.agent}
    if action in _OPERATIONS:
        gen_ai["operation"] = {"name": _OPERATIONS[action]}

    tt: dict[str, Any] = doc["telltale"]
    tt.update(
        {
            "client": obs.client,
            "source": {"kind": obs.source_kind, "path_hash": path_hash(obs.provenance.path)},
            "observation_id": obs.observation_id,
            "sequence": obs.sequence,
            "content_mode": content,
        }
    )
    prov = obs.provenance
    if prov.line is not None:
        tt["source"]["line"] = prov.line
    if prov.row is not None:
        tt["source"]["row"] = w.field("source.row", prov.row, 256)
    if obs.cwd:
        tt["cwd_hash"] = path_hash(obs.cwd)
        if keep:
            cwd = obs.cwd
            tt["cwd"] = redact_cached(cwd) if len(cwd) <= FIELD_LIMIT else w.field("cwd", cwd)
    if obs.parent_session_id:
        tt["parent_session_id"] = obs.parent_session_id
    if obs.parent_call_id:
        tt["parent_call_id"] = obs.parent_call_id
    if obs.ambiguous:
        tt["ambiguous"] = list(obs.ambiguous)
    if obs.attributes:
        if keep:
            tt["attributes"] = {
                k: redact_cached(v) if len(v) <= _ATTRIBUTE_LIMIT else w.field(f"attributes.{k}", v, _ATTRIBUTE_LIMIT)
                for k, v in obs.attributes.items()
            }
        else:
            tt["attributes"] = {k: value_hash(v) for k, v in obs.attributes.items()}

    summary = action
    if obs.family is Family.MESSAGE:
        role = obs.role or "unknown"
        text = obs.text or ""
        msg: dict[str, Any] = {"role": role, "injected": obs.injected, "length": _size(text)}
        if text:
            msg["hash"] = value_hash(text)
        if content == ContentMode.FULL and text:
            msg["text"] = w.field("message.text", text, TEXT_LIMIT)
        tt["message"] = msg
        summary = f"{role} message ({msg['length']} bytes)"
    elif obs.family is Family.TOOL:
        tool: dict[str, Any] = {}
        if obs.tool_name:
            gen_ai.setdefault("tool", {})["name"] = obs.tool_name
        if obs.call_id:
            gen_ai.setdefault("tool", {})["call"] = {"id": obs.call_id}
        if obs.stage is Stage.REQUESTED:
            if obs.arguments is not None:
                tool["arguments_length"] = _size(obs.arguments)
                tool["arguments_hash"] = value_hash(obs.arguments)
                if keep:
                    tool["arguments"] = w.field("tool.arguments", obs.arguments)
            if obs.command:
                if keep:
                    doc["process"] = {"command_line": w.field("process.command_line", obs.command)}
                tool["command_hash"] = value_hash(obs.command)
            if obs.file_path:
                if keep:
                    doc["file"] = {"path": w.field("file.path", obs.file_path)}
                tool["file_path_hash"] = path_hash(obs.file_path)
            if obs.url:
                if keep:
                    doc["url"] = {"full": w.field("url.full", obs.url)}
                tool["url_hash"] = value_hash(obs.url)
            summary = f"tool_call {obs.tool_name or 'unknown'}"
        else:
            result = obs.result or ""
            tool["result_length"] = _size(result)
            if result:
                tool["result_hash"] = value_hash(result)
            if content == ContentMode.FULL and result:
                tool["result"] = w.field("tool.result", result, TEXT_LIMIT)
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
    elif obs.family is Family.USAGE and obs.usage is not None:
        u = obs.usage
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
        summary = f"usage {obs.model or ''}".strip()
    if gen_ai:
        doc["gen_ai"] = gen_ai
    if w.truncated:
        tt["truncated"] = w.truncated
    doc["message"] = summary
    return doc
