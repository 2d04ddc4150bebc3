"""Qwen Code: ``~/.qwen/projects/<project>/chats/<session>.jsonl``.

Every line is one ``ChatRecord``: ``user``, ``assistant``, ``tool_result`` or ``system``.
Message content is a Gemini-API ``Content`` (``role`` + ``parts``). The adapter is
modeled (QWEN-3/4): a record whose ``type`` is unknown, or whose shape does not match
its type, gets a terminal classification of its own (quarantine) and is never
re-read as another kind; the rest of the transcript is still acquired (QWEN-5, see
docs/sources/qwen.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, Stage, TokenUsage, encode_arguments, iso_time
from telltale.readers.jsonl import Line
from telltale.readers.records import decode_guarded
from telltale.sources._jsonl_driver import (
    MapsEachLine,
    Out,
    Recorder,
    ToolFacets,
    acquire_lines,
    decode_failure_reason,
    json_text,
    line_quarantine,
)
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.spec import Source

CLIENT = "qwen"
KIND = "qwen.projects"

# -- native shapes (Gemini Content inside Qwen's ChatRecord) ----------------------------

_ABSENT = msgspec.Raw()  # an omitted raw field (empty, falsy)


class _FunctionCall(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    args: dict[str, Any] | None = None


class _FunctionResponse(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    response: Any = None


class _Part(msgspec.Struct):
    text: str | None = None
    thought: bool | None = None
    functionCall: _FunctionCall | None = None
    functionResponse: _FunctionResponse | None = None
    # Known Gemini parts that carry no text we keep (media, code execution, signatures).
    inlineData: msgspec.Raw = _ABSENT
    fileData: msgspec.Raw = _ABSENT
    executableCode: msgspec.Raw = _ABSENT
    codeExecutionResult: msgspec.Raw = _ABSENT
    thoughtSignature: msgspec.Raw = _ABSENT
    videoMetadata: msgspec.Raw = _ABSENT


class _Content(msgspec.Struct):
    role: str | None = None
    parts: list[_Part] = []


class _UsageMetadata(msgspec.Struct):
    promptTokenCount: int | None = None
    candidatesTokenCount: int | None = None
    thoughtsTokenCount: int | None = None
    totalTokenCount: int | None = None
    cachedContentTokenCount: int | None = None
    toolUsePromptTokenCount: int | None = None


class _ToolCallResult(msgspec.Struct):
    callId: str | None = None
    status: str | None = None


class _ForkedFrom(msgspec.Struct):
    sessionId: str | None = None


class _Record(msgspec.Struct, tag_field="type"):
    uuid: str
    sessionId: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    version: str | None = None
    gitBranch: str | None = None
    agentName: str | None = None
    isSidechain: bool | None = None
    forkedFrom: _ForkedFrom | None = None


class _User(_Record, tag="user"):
    message: _Content | None = None


class _Assistant(_Record, tag="assistant"):
    message: _Content | None = None
    model: str | None = None
    usageMetadata: _UsageMetadata | None = None


class _ToolResult(_Record, tag="tool_result"):
    message: _Content | None = None
    toolCallResult: _ToolCallResult | None = None


class _System(_Record, tag="system"):
    subtype: str | None = None


_KNOWN_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
_decoder = msgspec.json.Decoder(_User | _Assistant | _ToolResult | _System)


class _Envelope(msgspec.Struct):
    type: Any = None
    uuid: Any = None
    sessionId: Any = None


_envelope_decoder = msgspec.json.Decoder(_Envelope)


class _Carry(msgspec.Struct, omit_defaults=True):
    sessions: list[str] = []


_carry_decoder = msgspec.json.Decoder(_Carry)
_MAX_SESSIONS = 64

# -- tool facets -------------------------------------------------------------------------

_SHELL_TOOLS = frozenset({"run_shell_command", "shell"})
_FILE_TOOLS = frozenset(
    {"read_file", "write_file", "edit", "replace", "list_directory", "glob", "grep", "search_file_content"}
)
_URL_TOOLS = frozenset({"web_fetch"})
#: Arguments that carry authored text (commands, written content, edit strings, prompts).
_AUTHORED_KEYS = ("command", "content", "old_string", "new_string", "prompt")


_facets = ToolFacets(
    shell=_SHELL_TOOLS, files=_FILE_TOOLS, urls=_URL_TOOLS,
    writes=frozenset({"write_file", "edit", "replace"}),
    reads=frozenset({"read_file", "list_directory", "glob", "grep", "search_file_content"}),
    command_keys=("command",), path_keys=("file_path", "absolute_path", "path"),
)


def gemini_usage(meta: _UsageMetadata) -> tuple[TokenUsage, bool]:
    """Gemini ``usageMetadata`` in OpenTelemetry meaning, and whether it was ambiguous.

    ``promptTokenCount`` already includes ``cachedContentTokenCount``. Whether
    ``candidatesTokenCount`` includes ``thoughtsTokenCount`` depends on the backend:
    Gemini itself reports them apart (total = prompt + candidates + thoughts), while
    Qwen Code's OpenAI-compatible converter copies ``completion_tokens`` (which already
    includes reasoning) into candidates (total = prompt + candidates). The total tells
    them apart; without a total the OpenAI-compatible reading (Qwen's default) is used
    and the usage is marked ambiguous.
    """
    prompt = meta.promptTokenCount
    candidates = meta.candidatesTokenCount
    thoughts = meta.thoughtsTokenCount
    total = meta.totalTokenCount
    tool_prompt = meta.toolUsePromptTokenCount or 0
    ambiguous = False
    output = candidates
    if thoughts and candidates is not None:
        if total is not None and prompt is not None and total == prompt + tool_prompt + candidates + thoughts:
            output = candidates + thoughts
        elif total is None:
            ambiguous = True
    input_tokens = None if prompt is None else prompt + tool_prompt
    usage = TokenUsage(
        input_tokens=input_tokens,
        output_tokens=output,
        cache_read_input_tokens=meta.cachedContentTokenCount,
        reasoning_output_tokens=thoughts,
        total_tokens=total,
    )
    return usage, ambiguous


# -- mapping -----------------------------------------------------------------------------


class _QwenHandler(MapsEachLine):
    def __init__(self, source: Source, carry: bytes | None) -> None:
        self.source = source
        self.fallback_session = _file_session(source.path)
        sessions: list[str] = []
        if carry:
            try:
                sessions = _carry_decoder.decode(carry).sessions
            except msgspec.DecodeError:
                sessions = []
        self.sessions: list[str] = sessions[-_MAX_SESSIONS:]

    def carry(self) -> bytes:
        return msgspec.json.encode(_Carry(sessions=self.sessions))

    def handle(self, line: Line, out: Out) -> None:
        data = line.data
        if data is None:
            out.records_read += 1
            out.quarantined.append(line_quarantine(KIND, self.source, line, "oversized_line"))
            return
        if not data.strip():
            return
        out.records_read += 1
        try:
            record = decode_guarded(_decoder.decode, data)
        except msgspec.DecodeError as exc:
            out.quarantined.append(self._classify_failure(line, data, exc))
            return
        self._session(record, line, out)
        if isinstance(record, _System):
            # ui_telemetry, slash_command, at_command, chat_compression, ...: bookkeeping.
            # ui_telemetry repeats the assistant record's tokens; they are not counted again.
            out.other_records += 1
            return
        rec = Recorder(KIND)
        session_id = record.sessionId or self.fallback_session
        try:
            if isinstance(record, _User):
                self._user(record, line, rec, out)
            elif isinstance(record, _Assistant):
                self._assistant(record, line, rec, out)
            else:
                self._tool_result(record, line, rec, out)
        except BoundExceeded as err:
            rec.take()
            out.quarantined.append(
                line_quarantine(
                    KIND, self.source, line, "unbounded_value",
                    session_id=session_id, record_id=record.uuid, err=err,
                )
            )
            return
        out.observations.extend(rec.take())

    def _classify_failure(self, line: Line, data: bytes, exc: msgspec.DecodeError) -> Any:
        reason = decode_failure_reason(data, exc)
        session_id = record_id = None
        if reason == "schema_mismatch":
            try:
                env = decode_guarded(_envelope_decoder.decode, data)
            except msgspec.DecodeError:
                env = _Envelope()
            if not isinstance(env.type, str) or env.type not in _KNOWN_TYPES:
                reason = "unknown_record_type"
            session_id = env.sessionId if isinstance(env.sessionId, str) else None
            record_id = env.uuid if isinstance(env.uuid, str) else None
        return line_quarantine(
            KIND, self.source, line, reason, session_id=session_id, record_id=record_id
        )

    # -- common context ------------------------------------------------------------------
    def _common(self, record: _Record, line: Line) -> dict[str, Any]:
        session_id = record.sessionId or self.fallback_session
        common: dict[str, Any] = {
            "client": CLIENT,
            "session_id": session_id,
            "sequence": line.number,
            "occurred_at": iso_time(record.timestamp),
            "cwd": record.cwd,
            "agent": record.agentName,
            "provenance": Provenance(
                source_kind=KIND, path=self.source.path, line=line.number, offset=line.offset,
                record_id=record.uuid,
            ),
        }
        return common

    def _session(self, record: _Record, line: Line, out: Out) -> None:
        """The first record of each session id also yields the session observation."""
        session_id = record.sessionId or self.fallback_session
        if session_id in self.sessions:
            return
        self.sessions.append(session_id)
        del self.sessions[:-_MAX_SESSIONS]
        attributes: dict[str, str] = {}
        if record.version:
            attributes["version"] = record.version
        if record.gitBranch:
            attributes["git_branch"] = record.gitBranch
        parent = record.forkedFrom.sessionId if record.forkedFrom is not None else None
        rec = Recorder(KIND)
        try:
            rec.add(
                source_identity=f"{CLIENT}:{session_id}",
                coordinate=f"session:{session_id}",
                family=Family.SESSION,
                parent_session_id=parent,
                attributes=attributes,
                **self._common(record, line),
            )
        except BoundExceeded as err:
            out.quarantined.append(
                line_quarantine(
                    KIND, self.source, line, "unbounded_value",
                    session_id=session_id, record_id=record.uuid, err=err,
                )
            )
            return
        out.observations.extend(rec.take())

    # -- record kinds --------------------------------------------------------------------
    def _user(self, record: _User, line: Line, rec: Recorder, out: Out) -> None:
        parts = record.message.parts if record.message is not None else []
        self._check_parts(record, parts, line, out)
        texts = [p.text for p in parts if p.text and not p.thought]
        common = self._common(record, line)
        identity = f"{CLIENT}:{common['session_id']}"
        if texts:
            rec.add(
                source_identity=identity,
                coordinate=f"uuid:{record.uuid}:text",
                family=Family.MESSAGE,
                role="user",
                text="\n".join(texts),
                **common,
            )
        # Older builds stored tool responses on user records.
        self._responses(record, parts, None, line, rec)

    def _assistant(self, record: _Assistant, line: Line, rec: Recorder, out: Out) -> None:
        parts = record.message.parts if record.message is not None else []
        common = self._common(record, line)
        identity = f"{CLIENT}:{common['session_id']}"
        self._check_parts(record, parts, line, out)
        texts = [p.text for p in parts if p.text and not p.thought and p.functionCall is None]
        if texts:
            rec.add(
                source_identity=identity,
                coordinate=f"uuid:{record.uuid}:text",
                family=Family.MESSAGE,
                role="assistant",
                text="\n".join(texts),
                model=record.model,
                **common,
            )
        for index, part in enumerate(parts):
            call = part.functionCall
            if call is None:
                continue
            call_ref = call.id or f"part:{index}"
            rec.add(
                source_identity=identity,
                coordinate=f"uuid:{record.uuid}:call:{call_ref}",
                family=Family.TOOL,
                stage=Stage.REQUESTED,
                tool_name=call.name,
                call_id=call.id,
                arguments=encode_arguments(call.args, _AUTHORED_KEYS),
                model=record.model,
                **_facets(call.name, call.args),
                **common,
            )
        if record.usageMetadata is not None:
            usage, ambiguous = gemini_usage(record.usageMetadata)
            if not usage.is_empty():
                rec.add(
                    source_identity=identity,
                    coordinate=f"uuid:{record.uuid}:usage",
                    family=Family.USAGE,
                    usage=usage,
                    model=record.model,
                    ambiguous=("usage",) if ambiguous else (),
                    **common,
                )

    def _tool_result(self, record: _ToolResult, line: Line, rec: Recorder, out: Out) -> None:
        parts = record.message.parts if record.message is not None else []
        self._check_parts(record, parts, line, out)
        self._responses(record, parts, record.toolCallResult, line, rec)

    def _check_parts(self, record: _Record, parts: list[_Part], line: Line, out: Out) -> None:
        """A part of a kind we do not know is quarantined by itself; its siblings stay."""
        for part in parts:
            if _unknown_part(part):
                out.quarantined.append(
                    line_quarantine(
                        KIND, self.source, line, "unknown_content_block",
                        session_id=record.sessionId or self.fallback_session, record_id=record.uuid,
                    )
                )

    def _responses(
        self,
        record: _Record,
        parts: list[_Part],
        status: _ToolCallResult | None,
        line: Line,
        rec: Recorder,
    ) -> None:
        common = self._common(record, line)
        identity = f"{CLIENT}:{common['session_id']}"
        for index, part in enumerate(parts):
            response = part.functionResponse
            if response is None:
                continue
            is_error: bool | None = None
            interrupted = False
            if status is not None and (status.callId is None or status.callId == response.id):
                is_error = status.status == "error" if status.status else None
                interrupted = status.status == "cancelled"
            result, errored = _response_text(response.response)
            if errored:
                is_error = True
            call_ref = response.id or f"part:{index}"
            rec.add(
                source_identity=identity,
                coordinate=f"uuid:{record.uuid}:result:{call_ref}",
                family=Family.TOOL,
                stage=Stage.RESULT,
                tool_name=response.name,
                call_id=response.id,
                result=result,
                is_error=is_error,
                interrupted=interrupted,
                **common,
            )


def _response_text(response: Any) -> tuple[str | None, bool]:
    """The text the model saw for a ``functionResponse`` and whether it was an error."""
    if isinstance(response, dict):
        output = response.get("output")
        if isinstance(output, str):
            return output, False
        error = response.get("error")
        if isinstance(error, str):
            return error, True
        if output is not None:
            return json_text(output), False
    return json_text(response), False


def _unknown_part(part: _Part) -> bool:
    """A part with none of the Gemini fields we know (a new part kind)."""
    return (
        part.text is None
        and part.thought is None
        and part.functionCall is None
        and part.functionResponse is None
        and not part.inlineData
        and not part.fileData
        and not part.executableCode
        and not part.codeExecutionResult
        and not part.thoughtSignature
        and not part.videoMetadata
    )


def _file_session(path: str) -> str:
    name = os.path.basename(path)
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name


class QwenAdapter:
    """Source-owned modeled extraction of Qwen Code chat transcripts."""

    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_lines(source, cursor, ctx, lambda carry: _QwenHandler(source, carry))
