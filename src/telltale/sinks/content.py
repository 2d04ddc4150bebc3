"""An output's own content mode: what of an event leaves for an output that asked for less text.

The outbox holds each event once, as the local log has it (``--content`` of the scan). An
output with ``content: none`` or ``content: redacted`` gets each event cut down when it is
sent:

* ``none`` keeps only fields that a ``--content none`` scan writes (an allowlist, so a field
  added later is withheld until it is listed here — fail closed) and replaces each
  ``telltale.attributes`` value by its keyed hash, as a ``none`` scan does (the hash of the
  redacted value: equal to the scan's when redaction changed nothing);
* ``redacted`` drops the message and tool-result text that only ``full`` carries.

An output cannot get more than the log has: ``content: full`` on an output of a
``redacted`` scan is refused when the scan starts (``check_content``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from telltale.errors import ConfigError
from telltale.events.envelope import ContentMode
from telltale.sinks import SendResult

__all__ = ["ContentSink", "check_content", "downgrade", "downgrade_line"]

_RANK = {ContentMode.NONE: 0, ContentMode.REDACTED: 1, ContentMode.FULL: 2}

#: What a ``--content none`` event may carry: dotted paths; a path keeps its whole subtree.
NONE_FIELDS: frozenset[str] = frozenset({
    "@timestamp", "message", "event", "host", "observer", "user", "log", "rule", "threat",
    "gen_ai.agent.name", "gen_ai.agent.version", "gen_ai.conversation.id", "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.usage",
    "process.exit_code",
    "telltale.schema_version", "telltale.client", "telltale.content_mode", "telltale.time_source",
    "telltale.sequence", "telltale.source.kind", "telltale.source.path_hash", "telltale.source.line",
    "telltale.source.offset", "telltale.source.row", "telltale.record_id", "telltale.cwd_hash",
    "telltale.parent_session_id",
    "telltale.parent_call_id", "telltale.attributes", "telltale.usage_total_tokens", "telltale.response_id",
    "telltale.ambiguous", "telltale.truncated",
    "telltale.message.role", "telltale.message.injected", "telltale.message.length", "telltale.message.hash",
    "telltale.tool.arguments_hash", "telltale.tool.arguments_length", "telltale.tool.command_hash",
    "telltale.tool.file_path_hash", "telltale.tool.url_hash", "telltale.tool.result_hash",
    "telltale.tool.result_length", "telltale.tool.interrupted",
    # Alerts: everything but the text a none scan leaves out (command, path, cwd, URL, excerpt,
    # evidence values); list items are matched field by field under the list's path.
    "telltale.detection.score", "telltale.detection.risk_score", "telltale.detection.count",
    "telltale.detection.first_seen", "telltale.detection.last_seen", "telltale.detection.severity",
    "telltale.detection.sequence", "telltale.detection.rule_ids", "telltale.detection.categories",
    "telltale.detection.modifiers", "telltale.detection.anchors", "telltale.detection.recommendation",
    "telltale.detection.suppressed_by", "telltale.detection.atlas", "telltale.detection.references",
    "telltale.detection.sigma",
    "telltale.detection.evidence.field", "telltale.detection.evidence.hash",
    "telltale.detection.evidence.observation_id", "telltale.detection.evidence.rule_id",
    "telltale.detection.where.observation_id", "telltale.detection.where.source.kind",
    "telltale.detection.where.source.path_hash", "telltale.detection.where.source.line",
    "telltale.detection.where.source.offset", "telltale.detection.where.source.row",
    "telltale.detection.where.record_id", "telltale.detection.where.occurred_at",
    "telltale.detection.where.cwd_hash", "telltale.detection.where.agent", "telltale.detection.where.agent_version",
    "telltale.detection.where.model", "telltale.detection.where.provider", "telltale.detection.where.tool_name",
    "telltale.detection.where.command_hash", "telltale.detection.where.file_path_hash",
    "telltale.detection.where.url_hash",
    "telltale.session_risk", "telltale.scan", "telltale.scan_id", "telltale.alert_type", "telltale.alert",
    "telltale.inventory", "telltale.loss", "telltale.health",
})  # fmt: skip

#: What only ``full`` carries beyond ``redacted``.
FULL_ONLY: tuple[tuple[str, ...], ...] = (("telltale", "message", "text"), ("telltale", "tool", "result"))


def _keep(value: Any, prefix: str) -> Any:
    """The allowed part of ``value`` at ``prefix`` (``None``: nothing of it is allowed)."""
    if prefix in NONE_FIELDS:
        return value
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return [_keep(item, prefix) for item in value]  # each item's fields under the list's path
    if not isinstance(value, dict):
        return None
    out = {}
    for key, child in value.items():
        kept = _keep(child, f"{prefix}.{key}" if prefix else key)
        if kept is not None and kept != {}:
            out[key] = kept
    return out


def downgrade(doc: dict[str, Any], mode: str) -> dict[str, Any]:
    """``doc`` as an output with content ``mode`` receives it (a new dict; ``doc`` is not changed)."""
    if mode == ContentMode.FULL:
        return doc
    tt = doc.get("telltale")
    if mode == ContentMode.REDACTED:
        if not isinstance(tt, dict) or not any(_has(doc, path) for path in FULL_ONLY):
            return doc
        out: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(doc))  # a deep copy
        for path in FULL_ONLY:
            parent: Any = out
            for key in path[:-1]:
                parent = parent.get(key) if isinstance(parent, dict) else None
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
        out["telltale"]["content_mode"] = ContentMode.REDACTED
        return out
    kept: dict[str, Any] = _keep(doc, "")
    ktt = kept.get("telltale")
    if isinstance(ktt, dict):
        attributes = ktt.get("attributes")
        if isinstance(attributes, dict) and tt is not None and tt.get("content_mode") != ContentMode.NONE:
            from telltale.events.redaction import value_hash

            ktt["attributes"] = {k: value_hash(str(v)) for k, v in attributes.items()}
        if "content_mode" in ktt:
            ktt["content_mode"] = ContentMode.NONE
    return kept


def _has(doc: dict[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = doc
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def downgrade_line(line: bytes, mode: str) -> bytes:
    """One encoded event for an output with content ``mode``; a line that is not JSON is withheld."""
    try:
        doc = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return b"{}"
    if not isinstance(doc, dict):
        return b"{}"
    out = downgrade(doc, mode)
    return line if out is doc else msgspec.json.encode(out)


def check_content(outputs: dict[str, Any], log_content: str) -> None:
    """Refuse an output that asks for more text than the local log carries."""
    for name, out in outputs.items():
        mode = getattr(out, "content", None)
        if mode is not None and _RANK[mode] > _RANK[log_content]:
            raise ConfigError(
                f"outputs.{name}.content: {mode} is more than the local log carries ({log_content}); "
                f"raise --content or lower the output's content"
            )


class ContentSink:
    """A sink wrapper sending each event at the output's own content mode."""

    def __init__(self, inner: Any, mode: str) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.mode = mode

    def send(self, events: Sequence[bytes]) -> SendResult:
        result: SendResult = self.inner.send([downgrade_line(e, self.mode) for e in events])
        return result

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
