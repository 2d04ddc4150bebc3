"""Copilot CLI session-state event logs: ``session-state/<id>/events.jsonl`` (and flat ``<id>.jsonl``).

Every line is an envelope ``{type, data, id, timestamp, parentId}`` with a dotted
``type``. Copilot adds event types often, so an unknown *dotted* type is counted as an
other record; only a record whose envelope or known payload is malformed (or an
unknown undotted type) is quarantined. Tool calls are keyed by ``toolCallId``: the
request comes from ``assistant.message.toolRequests``; ``tool.execution_start`` repeats
it and only stands in for it when the request was never seen.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.model import (
    STRING_BOUND,
    BoundExceeded,
    Family,
    Provenance,
    Quarantine,
    Stage,
    TokenUsage,
    encode_arguments,
    iso_time,
)
from telltale.readers.jsonl import Line
from telltale.readers.records import decode_guarded, failure_reason
from telltale.sources._jsonl_driver import BoundedMap, MapsEachLine, Out, Recorder, acquire_lines, decode_failure_reason
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.copilot._tools import AUTHORED_KEYS, CLIENT, PROVIDER, facets
from telltale.sources.spec import Source

KIND = "copilot.session_state"
#: Calls requested but not yet completed, carried between scans (oldest forgotten first).
MAX_PENDING = 1_024

_ABSENT = msgspec.Raw()
_DOTTED = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)+$")

# -- native shapes -----------------------------------------------------------------------


class _Envelope(msgspec.Struct):
    type: str
    data: msgspec.Raw = _ABSENT
    id: str | None = None
    timestamp: str | None = None
    parentId: str | None = None


class _Context(msgspec.Struct):
    cwd: str | None = None
    gitRoot: str | None = None
    branch: str | None = None
    repository: str | None = None
    hostType: str | None = None


class _SessionStart(msgspec.Struct):
    sessionId: str | None = None
    copilotVersion: str | None = None
    producer: str | None = None
    context: _Context | None = None


class _ModelChange(msgspec.Struct):
    newModel: str | None = None


class _Text(msgspec.Struct):
    content: str | None = None


class _ToolRequest(msgspec.Struct):
    toolCallId: str
    name: str | None = None
    arguments: Any = None


class _AssistantMessage(msgspec.Struct):
    messageId: str | None = None
    model: str | None = None
    content: str | None = None
    toolRequests: list[_ToolRequest] = []
    outputTokens: int | None = None


class _ExecutionStart(msgspec.Struct):
    toolCallId: str
    toolName: str | None = None
    arguments: Any = None
    model: str | None = None


class _ExecResult(msgspec.Struct):
    content: str | None = None


class _ExecutionComplete(msgspec.Struct):
    toolCallId: str
    success: bool | None = None
    result: _ExecResult | None = None
    error: Any = None
    model: str | None = None


class _PermissionRequest(msgspec.Struct):
    kind: str | None = None
    toolCallId: str | None = None


class _PermissionRequested(msgspec.Struct):
    requestId: str | None = None
    permissionRequest: _PermissionRequest | None = None


class _PermissionResult(msgspec.Struct):
    kind: str | None = None


class _PermissionCompleted(msgspec.Struct):
    requestId: str | None = None
    toolCallId: str | None = None
    result: _PermissionResult | None = None


class _MetricUsage(msgspec.Struct):
    inputTokens: int | None = None
    outputTokens: int | None = None
    cacheReadTokens: int | None = None
    cacheWriteTokens: int | None = None
    reasoningTokens: int | None = None


class _ModelMetric(msgspec.Struct):
    usage: _MetricUsage | None = None


class _Shutdown(msgspec.Struct):
    shutdownType: str | None = None
    modelMetrics: dict[str, _ModelMetric] = {}


class _Abort(msgspec.Struct):
    reason: str | None = None


_envelope_decoder = msgspec.json.Decoder(_Envelope)
_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    "session.start": msgspec.json.Decoder(_SessionStart),
    "session.model_change": msgspec.json.Decoder(_ModelChange),
    "user.message": msgspec.json.Decoder(_Text),
    "system.message": msgspec.json.Decoder(_Text),
    "assistant.message": msgspec.json.Decoder(_AssistantMessage),
    "tool.execution_start": msgspec.json.Decoder(_ExecutionStart),
    "tool.execution_complete": msgspec.json.Decoder(_ExecutionComplete),
    "permission.requested": msgspec.json.Decoder(_PermissionRequested),
    "permission.completed": msgspec.json.Decoder(_PermissionCompleted),
    "session.shutdown": msgspec.json.Decoder(_Shutdown),
    "abort": msgspec.json.Decoder(_Abort),
}
#: Known bookkeeping (counted, not projected); any other dotted type is treated the same.
_BOOKKEEPING = frozenset(
    {
        "assistant.turn_start", "assistant.turn_end", "hook.start", "hook.end", "session.info",
        "session.error", "session.warning", "session.resume", "session.compaction_start",
        "session.compaction_complete", "assistant.reasoning", "assistant.usage",
    }
)


class _Carry(msgspec.Struct, omit_defaults=True):
    session_id: str | None = None
    cwd: str | None = None
    model: str | None = None
    pending: dict[str, str] = {}  # toolCallId -> tool name ("" when unknown)


_carry_decoder = msgspec.json.Decoder(_Carry)


def shutdown_usage(usage: _MetricUsage) -> TokenUsage:
    """``modelMetrics.<model>.usage`` in OpenTelemetry meaning.

    Copilot's ``inputTokens`` already include the cache reads and writes (observed:
    input = uncached + cacheRead + cacheWrite in ``tokenDetails``), so they are kept as is.
    """
    return TokenUsage(
        input_tokens=usage.inputTokens,
        output_tokens=usage.outputTokens,
        cache_read_input_tokens=usage.cacheReadTokens,
        cache_creation_input_tokens=usage.cacheWriteTokens,
        reasoning_output_tokens=usage.reasoningTokens,
    )


class _SessionStateHandler(MapsEachLine):
    def __init__(self, source: Source, carry: bytes | None) -> None:
        self.source = source
        self.fallback_session = _file_session(source.path)
        state = _Carry()
        if carry:
            try:
                state = _carry_decoder.decode(carry)
            except msgspec.DecodeError:
                state = _Carry()
        self.session_id = state.session_id
        self.cwd = state.cwd
        self.model = state.model
        self.pending = BoundedMap(MAX_PENDING, state.pending)

    def carry(self) -> bytes:
        return msgspec.json.encode(
            _Carry(session_id=self.session_id, cwd=self.cwd, model=self.model, pending=self.pending.items)
        )

    @property
    def sid(self) -> str:
        return self.session_id or self.fallback_session

    def handle(self, line: Line, out: Out) -> None:
        if line.data is None:
            out.records_read += 1
            out.quarantined.append(self._quarantine("oversized_line", line, None))
            return
        if not line.data.strip():
            return
        out.records_read += 1
        try:
            env = decode_guarded(_envelope_decoder.decode, line.data)
        except msgspec.DecodeError as exc:
            out.quarantined.append(self._quarantine(decode_failure_reason(line.data, exc), line, None))
            return
        decoder = _DECODERS.get(env.type)
        if decoder is None:
            if env.type in _BOOKKEEPING or _DOTTED.match(env.type):
                out.other_records += 1
            else:
                out.quarantined.append(self._quarantine("unknown_record_type", line, env.id))
            return
        try:
            data = decode_guarded(decoder.decode, env.data if env.data else b"{}")
        except msgspec.DecodeError as exc:
            reason = failure_reason(bytes(env.data or b""), exc)
            out.quarantined.append(self._quarantine(reason, line, env.id))
            return
        rec = Recorder(KIND)
        try:
            projected = self._map(env, data, line, rec)
        except BoundExceeded as err:
            rec.take()
            out.quarantined.append(self._quarantine("unbounded_value", line, env.id, err))
            return
        if not projected:
            out.other_records += 1
        out.observations.extend(rec.take())

    # -- mapping -------------------------------------------------------------------------
    def _common(self, env: _Envelope, line: Line) -> dict[str, Any]:
        return {
            "client": CLIENT,
            "session_id": self.sid,
            "sequence": line.number,
            "occurred_at": iso_time(env.timestamp),
            "cwd": self.cwd,
            "provenance": Provenance(
                source_kind=KIND, path=self.source.path, line=line.number, offset=line.offset, record_id=env.id
            ),
        }

    def _coordinate(self, env: _Envelope, line: Line) -> str:
        return f"event:{env.id}" if env.id else f"line:{line.number}"

    def _map(self, env: _Envelope, data: Any, line: Line, rec: Recorder) -> bool:
        """Add the event's observations; ``False`` when it is bookkeeping only."""
        if isinstance(data, _SessionStart):
            return self._session_start(env, data, line, rec)
        if isinstance(data, _ModelChange):
            if data.newModel:
                self.model = data.newModel
            return False
        if isinstance(data, _Text):
            return self._text(env, data, line, rec)
        if isinstance(data, _AssistantMessage):
            return self._assistant(env, data, line, rec)
        if isinstance(data, _ExecutionStart):
            return self._execution_start(env, data, line, rec)
        if isinstance(data, _ExecutionComplete):
            return self._execution_complete(env, data, line, rec)
        if isinstance(data, _PermissionRequested | _PermissionCompleted):
            return self._permission(env, data, line, rec)
        if isinstance(data, _Shutdown):
            return self._shutdown(env, data, line, rec)
        if isinstance(data, _Abort):
            return self._abort(env, data, line, rec)
        return False

    def _session_start(self, env: _Envelope, data: _SessionStart, line: Line, rec: Recorder) -> bool:
        context = data.context or _Context()
        for name, value in (("session_id", data.sessionId), ("cwd", context.cwd)):
            size = len(value.encode("utf-8", "surrogatepass")) if value else 0
            if size > STRING_BOUND:
                # Quarantined by itself and not adopted: every record after it would carry
                # the over-bound identity and be quarantined too.
                raise BoundExceeded(name, STRING_BOUND, size)
        if data.sessionId:
            self.session_id = data.sessionId
        if context.cwd:
            self.cwd = context.cwd
        attributes = {
            key: value
            for key, value in (
                ("copilot_version", data.copilotVersion),
                ("repository", context.repository),
                ("git_root", context.gitRoot),
                ("branch", context.branch),
                ("host_type", context.hostType),
            )
            if value
        }
        rec.add(
            source_identity=f"{CLIENT}:{self.sid}",
            coordinate=self._coordinate(env, line),
            family=Family.SESSION,
            agent=data.producer,
            provider=PROVIDER,
            attributes=attributes,
            **self._common(env, line),
        )
        return True

    def _text(self, env: _Envelope, data: _Text, line: Line, rec: Recorder) -> bool:
        if not data.content:
            return False
        system = env.type == "system.message"
        # user.message.content is what the user typed; transformedContent (what the model
        # saw, with injected context) is deliberately not used.
        rec.add(
            source_identity=f"{CLIENT}:{self.sid}",
            coordinate=self._coordinate(env, line),
            family=Family.MESSAGE,
            role="system" if system else "user",
            text=data.content,
            injected=system,
            **self._common(env, line),
        )
        return True

    def _assistant(self, env: _Envelope, data: _AssistantMessage, line: Line, rec: Recorder) -> bool:
        if data.model:
            self.model = data.model
        model = data.model or self.model
        identity = f"{CLIENT}:{self.sid}"
        base = self._coordinate(env, line)
        common = self._common(env, line)
        projected = False
        if data.content:
            rec.add(
                source_identity=identity,
                coordinate=f"{base}:text",
                family=Family.MESSAGE,
                role="assistant",
                text=data.content,
                model=model,
                provider=PROVIDER,
                **common,
            )
            projected = True
        for request in data.toolRequests:
            self._request(request.toolCallId, request.name, request.arguments, model, common, rec)
            projected = True
        if data.outputTokens is not None:
            rec.add(
                source_identity=identity,
                coordinate=f"{base}:usage",
                family=Family.USAGE,
                usage=TokenUsage(output_tokens=data.outputTokens),
                model=model,
                provider=PROVIDER,
                attributes={"usage_scope": "response"},
                **common,
            )
            projected = True
        return projected

    def _request(
        self, call_id: str, name: str | None, args: Any, model: str | None, common: dict[str, Any], rec: Recorder
    ) -> None:
        arguments = args if isinstance(args, dict | list | str) or args is None else str(args)
        rec.add(
            source_identity=f"{CLIENT}:{self.sid}",
            # Keyed by the call, so a request seen via execution_start gets the same id.
            coordinate=f"call:{call_id}:requested",
            family=Family.TOOL,
            stage=Stage.REQUESTED,
            tool_name=name,
            call_id=call_id,
            arguments=encode_arguments(arguments, AUTHORED_KEYS),
            model=model,
            provider=PROVIDER,
            **facets(name, args),
            **common,
        )
        self.pending.set(call_id, name or "")

    def _execution_start(self, env: _Envelope, data: _ExecutionStart, line: Line, rec: Recorder) -> bool:
        if data.toolCallId in self.pending:
            if data.toolName and not self.pending.get(data.toolCallId):
                self.pending.set(data.toolCallId, data.toolName)
            return False
        # The request was never seen (no toolRequests entry): this start stands in for it.
        self._request(
            data.toolCallId, data.toolName, data.arguments, data.model or self.model,
            self._common(env, line), rec,
        )
        return True

    def _execution_complete(self, env: _Envelope, data: _ExecutionComplete, line: Line, rec: Recorder) -> bool:
        name = self.pending.pop(data.toolCallId) or None
        result = data.result.content if data.result is not None else None
        if result is None and data.error is not None:
            error = data.error
            if isinstance(error, dict):
                error = error.get("message")
            result = error if isinstance(error, str) else None
        rec.add(
            source_identity=f"{CLIENT}:{self.sid}",
            coordinate=f"call:{data.toolCallId}:result",
            family=Family.TOOL,
            stage=Stage.RESULT,
            tool_name=name,
            call_id=data.toolCallId,
            result=result,
            is_error=(not data.success) if data.success is not None else None,
            model=data.model or self.model,
            provider=PROVIDER,
            **self._common(env, line),
        )
        return True

    def _permission(
        self, env: _Envelope, data: _PermissionRequested | _PermissionCompleted, line: Line, rec: Recorder
    ) -> bool:
        attributes = {"event": env.type}
        if isinstance(data, _PermissionRequested):
            request = data.permissionRequest or _PermissionRequest()
            call_id = request.toolCallId
            if request.kind:
                attributes["permission_kind"] = request.kind
            request_id = data.requestId
        else:
            call_id = data.toolCallId
            decision = data.result.kind if data.result is not None else None
            if decision:
                attributes["decision"] = decision
                attributes["approved"] = "true" if decision.startswith("approved") else "false"
            request_id = data.requestId
        if request_id:
            attributes["request_id"] = request_id
        tool_name = self.pending.get(call_id) if call_id else None
        rec.add(
            source_identity=f"{CLIENT}:{self.sid}",
            coordinate=self._coordinate(env, line),
            family=Family.OTHER,
            call_id=call_id,
            tool_name=tool_name or None,
            attributes=attributes,
            **self._common(env, line),
        )
        return True

    def _shutdown(self, env: _Envelope, data: _Shutdown, line: Line, rec: Recorder) -> bool:
        base = self._coordinate(env, line)
        projected = False
        for model, metric in sorted(data.modelMetrics.items()):
            if metric.usage is None:
                continue
            usage = shutdown_usage(metric.usage)
            if usage.is_empty():
                continue
            rec.add(
                source_identity=f"{CLIENT}:{self.sid}",
                coordinate=f"{base}:model:{model}",
                family=Family.USAGE,
                usage=usage,
                model=model,
                provider=PROVIDER,
                attributes={"usage_scope": "session"},
                **self._common(env, line),
            )
            projected = True
        return projected

    def _abort(self, env: _Envelope, data: _Abort, line: Line, rec: Recorder) -> bool:
        """Every call still pending at an abort ends interrupted."""
        base = self._coordinate(env, line)
        attributes = {"abort_reason": data.reason} if data.reason else {}
        projected = False
        for call_id, name in list(self.pending.items.items()):
            rec.add(
                source_identity=f"{CLIENT}:{self.sid}",
                coordinate=f"{base}:call:{call_id}",
                family=Family.TOOL,
                stage=Stage.RESULT,
                tool_name=name or None,
                call_id=call_id,
                interrupted=True,
                attributes=attributes,
                **self._common(env, line),
            )
            projected = True
        self.pending.items.clear()
        return projected

    def _quarantine(
        self, reason: str, line: Line, record_id: str | None, err: BoundExceeded | None = None
    ) -> Quarantine:
        return Quarantine(
            source_kind=KIND,
            path=self.source.path,
            reason=reason,
            session_id=self.sid,
            record_id=record_id if record_id is not None and len(record_id) <= 256 else None,
            sequence=line.number,
            line=line.number,
            offset=line.offset,
            field=err.field if err is not None else None,
            bound=err.bound if err is not None else None,
        )


def _file_session(path: str) -> str:
    """``<id>/events.jsonl`` names its session by directory; a flat file by its stem."""
    name = os.path.basename(path)
    if name == "events.jsonl":
        return os.path.basename(os.path.dirname(path)) or name
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name


class CopilotSessionStateAdapter:
    """Copilot CLI ``session-state`` event logs (current per-directory and older flat files)."""

    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_lines(source, cursor, ctx, lambda carry: _SessionStateHandler(source, carry))
