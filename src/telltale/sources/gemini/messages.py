"""One Gemini CLI message record → canonical observations (text, usage, tool calls).

Shared by the JSONL session log and the legacy whole-file sessions; which parts are
emitted now is decided with the :class:`~.settle.Memory` (see :mod:`.settle`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, Stage, TokenUsage, encode_arguments, iso_time
from telltale.sources._jsonl_driver import Recorder, json_text
from telltale.sources.gemini.facets import AUTHORED_KEYS, facets
from telltale.sources.gemini.settle import Memory
from telltale.sources.gemini.wire import TERMINAL_STATUSES, Message, Part, PartList, Tokens, ToolCall

CLIENT = "gemini"
_ROLES = {"user": "user", "gemini": "assistant", "info": "system", "warning": "system", "error": "system"}
#: Prefixes of the context gemini-cli injects as a first "user" message.
_INJECTED = ("<session_context>", "This is the Gemini CLI. We are setting up the context")


class Where(msgspec.Struct):
    """Where a record was read: provenance fields and the native ordinal."""

    path: str
    kind: str
    line: int | None = None
    offset: int | None = None
    sequence: int = 0

    def provenance(self, record_id: str | None) -> Provenance:
        return Provenance(source_kind=self.kind, path=self.path, line=self.line, offset=self.offset,
                          record_id=record_id)


class SessionContext(msgspec.Struct):
    """Facts of the whole session every observation carries."""

    source_identity: str
    session_id: str
    cwd: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


def parts_text(content: PartList) -> str | None:
    """The visible text of a ``PartListUnion`` (thought parts dropped), or ``None``."""
    if content is None:
        return None
    if isinstance(content, str):
        return content or None
    items: list[Part | str] = [content] if isinstance(content, Part) else content
    texts = [
        item if isinstance(item, str) else item.text
        for item in items
        if isinstance(item, str) or (item.text and not item.thought)
    ]
    joined = "\n".join(t for t in texts if t)
    return joined or None


def result_text(result: PartList) -> tuple[str | None, bool]:
    """The tool output the model saw (``functionResponse.response.output``), and whether
    the response was an error."""
    if result is None:
        return None, False
    if isinstance(result, str):
        return result, False
    items: list[Part | str] = [result] if isinstance(result, Part) else result
    texts: list[str] = []
    is_error = False
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif item.functionResponse is not None:
            response = item.functionResponse.response
            if isinstance(response, dict):
                if "error" in response and response.get("output") is None:
                    is_error = True
                    value = response.get("error")
                else:
                    value = response.get("output", response)
            else:
                value = response
            text = json_text(value)
            if text:
                texts.append(text)
        elif item.text:
            texts.append(item.text)
    return ("\n".join(texts) or None), is_error


def gemini_tokens(tokens: Tokens) -> TokenUsage:
    """``TokensSummary`` in OpenTelemetry meaning: ``input`` includes ``cached``; Gemini
    reports ``output`` without ``thoughts`` (total = input + output + thoughts + tool)."""
    thoughts = tokens.thoughts or 0
    tool = tokens.tool or 0
    return TokenUsage(
        input_tokens=None if tokens.input is None else tokens.input + tool,
        output_tokens=None if tokens.output is None else tokens.output + thoughts,
        cache_read_input_tokens=tokens.cached,
        reasoning_output_tokens=tokens.thoughts,
        total_tokens=tokens.total,
    )


class MessageMapper:
    """Builds the observations of one message version that are due now."""

    def __init__(self, kind: str, memory: Memory, *, id_kind: str | None = None) -> None:
        self.kind = kind
        #: The kind observation ids are derived with: legacy ``.json`` sessions use the JSONL
        #: kind, so a session gemini-cli migrates to ``.jsonl`` keeps its ids.
        self.id_kind = id_kind or kind
        self.memory = memory

    def emit(self, msg: Message, ctx: SessionContext, where: Where, *, settled: bool) -> tuple[list[Any], bool]:
        """Observations due for ``msg`` and whether the message still holds a running call.

        Raises :class:`BoundExceeded` (nothing of the version is then marked emitted).
        """
        rec = Recorder(self.id_kind)
        marks: list[tuple[str, str]] = []
        common: dict[str, Any] = {
            "client": CLIENT,
            "source_kind": self.kind,
            "session_id": ctx.session_id,
            "sequence": where.sequence,
            "cwd": ctx.cwd,
            "provenance": where.provenance(msg.id),
            **ctx.extra,
        }
        memory = self.memory
        base = f"m:{msg.id}"
        role = _ROLES.get(msg.type)
        model = msg.model if msg.type == "gemini" else None
        if role is not None and not memory.has_text(msg.id):
            text = parts_text(msg.content)
            if text is not None:
                attributes = {"notice": msg.type} if role == "system" else {}
                rec.add(
                    source_identity=ctx.source_identity, coordinate=base, family=Family.MESSAGE, role=role,
                    text=text, injected=role == "user" and text.lstrip().startswith(_INJECTED), model=model,
                    occurred_at=iso_time(msg.timestamp), attributes=attributes, **common,
                )
                marks.append(("text", ""))
        if msg.tokens is not None and not memory.has_usage(msg.id):
            rec.add(
                source_identity=ctx.source_identity, coordinate=f"{base}:usage", family=Family.USAGE,
                usage=gemini_tokens(msg.tokens), model=model, occurred_at=iso_time(msg.timestamp), **common,
            )
            marks.append(("usage", ""))
        held = False
        for call in msg.toolCalls or ():
            state = memory.call_state(msg.id, call.id)
            if state == "a":
                continue
            terminal = call.status in TERMINAL_STATUSES
            if not terminal and not settled:
                held = True
                continue
            if state == "":
                self._request(rec, call, ctx, common, base, model, terminal)
            if terminal:
                self._result(rec, call, ctx, common, base)
                marks.append(("call", call.id + ":a"))
            else:
                marks.append(("call", call.id + ":r"))
        observations = rec.take()
        memory.mark_seen(msg.id)
        for what, value in marks:
            if what == "text":
                memory.mark_text(msg.id)
            elif what == "usage":
                memory.mark_usage(msg.id)
            else:
                call_id, _, state = value.rpartition(":")
                memory.mark_call(msg.id, call_id, state)
        return observations, held

    def _request(self, rec: Recorder, call: ToolCall, ctx: SessionContext, common: dict[str, Any],
                 base: str, model: str | None, terminal: bool) -> None:
        attributes: dict[str, str] = {}
        if call.status and not terminal:
            attributes["status"] = call.status  # settled by a later entry while still running
        if call.displayName and call.displayName != call.name:
            attributes["display_name"] = call.displayName
        agent = call.agentId
        rec.add(
            source_identity=ctx.source_identity, coordinate=f"{base}:call:{call.id}", family=Family.TOOL,
            stage=Stage.REQUESTED, tool_name=call.name, call_id=call.id,
            arguments=encode_arguments(call.args, AUTHORED_KEYS) if call.args is not None else None,
            model=model, occurred_at=iso_time(call.timestamp), attributes=attributes,
            **({"agent": agent} if agent else {}), **facets(call.name, call.args), **common,
        )

    def _result(self, rec: Recorder, call: ToolCall, ctx: SessionContext, common: dict[str, Any], base: str) -> None:
        text, response_error = result_text(call.result)
        rec.add(
            source_identity=ctx.source_identity, coordinate=f"{base}:call:{call.id}:result", family=Family.TOOL,
            stage=Stage.RESULT, tool_name=call.name, call_id=call.id, result=text,
            is_error=call.status == "error" or response_error, interrupted=call.status == "cancelled",
            occurred_at=iso_time(call.timestamp), **common,
        )


def decode_message(raw: bytes | msgspec.Raw) -> Message:
    from telltale.sources.gemini.wire import message_decoder

    return message_decoder.decode(raw)


__all__ = ["CLIENT", "BoundExceeded", "MessageMapper", "SessionContext", "Where", "decode_message", "parts_text"]
