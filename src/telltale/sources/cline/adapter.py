"""One adapter for the Cline family: a task's ``api_conversation_history.json`` and ``ui_messages.json``.

Both files are rewritten whole on every change (:mod:`telltale.sources._document` keeps
the entry diff). They split the work so that nothing is counted twice (DECISIONS
"Agents"): messages, tool calls and tool results come from the API history (what the
model saw), token usage and cost from the ``api_req_started`` entries of the UI messages
(one per model request). The task's model and workspace come from the task's own data:
``modelInfo`` on messages, ``task_metadata.json`` ``model_usage``, Roo's
``history_item.json`` and the ``# Current Working Directory (...)`` line the extension
injects into the first request.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from telltale.model import Family, Provenance, Stage, TokenUsage, encode_arguments, iso_time
from telltale.readers.files import read_small
from telltale.sources._document import DocumentHandler, acquire_document
from telltale.sources._jsonl_driver import Recorder, json_text
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.cline import tools, wire
from telltale.sources.cline.forks import Fork, fork_for_kind
from telltale.sources.spec import Source

#: Sidecar files read whole at most this large (they are small JSON objects).
SIDECAR_BOUND = 1 << 20

API_FILE = "api_conversation_history.json"
UI_FILES = ("ui_messages.json", "claude_messages.json")


class TaskInfo:
    """What a task's sidecars say about it: model, provider, workspace, mode, parent."""

    def __init__(self, task_dir: str) -> None:
        self.model: str | None = None
        self.provider: str | None = None
        self.mode: str | None = None
        self.cwd: str | None = None
        self.parent: str | None = None
        meta = _read_sidecar(os.path.join(task_dir, "task_metadata.json"), wire.task_metadata)
        if meta is not None:
            for usage in meta.model_usage:
                self.model = usage.model_id or self.model
                self.provider = usage.model_provider_id or self.provider
                self.mode = usage.mode or self.mode
        item = _read_sidecar(os.path.join(task_dir, "history_item.json"), wire.history_item)
        if item is not None:
            self.cwd = item.workspace or None
            self.mode = item.mode or self.mode
            self.parent = item.parentTaskId or None


def _read_sidecar(path: str, decoder: msgspec.json.Decoder[Any]) -> Any:
    """A small JSON sidecar of the task, or ``None`` (missing, a link, too big, malformed)."""
    data = read_small(path, SIDECAR_BOUND)
    if data is None:
        return None
    try:
        return decoder.decode(data)
    except msgspec.DecodeError:
        return None


class _TaskHandler:
    """Shared by both files: identity, session fields, provenance."""

    def __init__(self, source: Source, fork: Fork) -> None:
        self.source = source
        self.fork = fork
        task_dir = os.path.dirname(source.path)
        self.task_id = os.path.basename(task_dir) or "unknown"
        self.info = TaskInfo(task_dir)
        self.identity = f"{fork.client}:{self.task_id}"
        self.cwd = self.info.cwd
        self.fresh = True
        self.session_emitted = False

    def split(self, data: bytes) -> list[msgspec.Raw]:
        return wire.api_split.decode(data)

    def session_id(self) -> str | None:
        return self.task_id

    def common(self, index: int, key: str, ts: int | None) -> dict[str, Any]:
        return {
            "client": self.fork.client,
            "session_id": self.task_id,
            "sequence": index,
            "occurred_at": iso_time(ts) if ts else None,
            "agent": self.fork.agent,
            "cwd": self.cwd,
            "provenance": Provenance(
                source_kind=self.source.kind, path=self.source.path, row=f"entry:{index}",
                record_id=key if len(key) <= 256 else None,
            ),
        }


class ApiHistoryHandler(_TaskHandler):
    """``api_conversation_history.json``: messages, tool calls and their results."""

    def __init__(self, source: Source, fork: Fork) -> None:
        super().__init__(source, fork)
        self.entries: Sequence[wire.ApiMessage | None] = ()
        #: Tool calls of each assistant entry: ``(call_id, name)`` in order.
        self.calls: dict[int, list[tuple[str, str]]] = {}

    def decode(self, raw: msgspec.Raw) -> wire.ApiMessage:
        return wire.api_message.decode(raw)

    def native_id(self, entry: wire.ApiMessage) -> str | None:
        return f"ts:{entry.ts}" if entry.ts is not None else None

    def begin(self, entries: Sequence[Any | None], fresh: bool) -> None:
        self.entries = entries
        self.fresh = fresh
        for entry in entries:
            if entry is not None and entry.role == "user":
                for text in _texts(entry):
                    cwd = tools.working_directory(text) if "Current" in text else None
                    if cwd:
                        self.cwd = self.cwd or cwd
                        break
                if self.cwd:
                    break

    def settled(self, index: int) -> bool:
        entry = self.entries[index]
        # The extension rewrites a trailing user message when a task resumes (it is folded
        # into the next request); it is final once anything follows it.
        return not (entry is not None and entry.role == "user" and index == len(self.entries) - 1)

    def project(self, index: int, key: str, rec: Recorder) -> None:
        entry = self.entries[index]
        assert entry is not None
        common = self.common(index, key, entry.ts)
        info = entry.modelInfo
        model = (info.modelId if info else None) or self.info.model
        provider = (info.providerId if info else None) or self.info.provider
        if self.fresh and not self.session_emitted:
            self.session_emitted = True
            attributes = {"extension": self.fork.extension_ids[0]}
            if self.info.mode:
                attributes["mode"] = self.info.mode[:256]
            rec.add(
                source_identity=self.identity, coordinate="session", family=Family.SESSION,
                model=model, provider=provider, parent_session_id=self.info.parent,
                attributes=attributes, **common,
            )
        if entry.role == "assistant":
            self._assistant(index, key, entry, model, provider, common, rec)
        else:
            self._user(index, key, entry, common, rec)

    # -- assistant ---------------------------------------------------------------------
    def _assistant_calls(self, index: int) -> list[tuple[str, str]]:
        """``(call_id, name)`` of an assistant entry's calls (ids synthesised in the XML era)."""
        if index in self.calls:
            return self.calls[index]
        entry = self.entries[index]
        calls: list[tuple[str, str]] = []
        if entry is not None and entry.role == "assistant":
            key_base = f"{self.task_id}:{index}"
            n = 0
            for block in _blocks(entry):
                if block.type == "tool_use" and block.name:
                    calls.append((block.id or block.call_id or f"{key_base}:call:{n}", block.name))
                    n += 1
                elif block.type == "text" and block.text and "<" in block.text:
                    for name, _params in tools.xml_calls(block.text):
                        calls.append((f"{key_base}:call:{n}", name))
                        n += 1
        self.calls[index] = calls
        return calls

    def _assistant(
        self, index: int, key: str, entry: wire.ApiMessage, model: str | None, provider: str | None,
        common: dict[str, Any], rec: Recorder,
    ) -> None:
        calls = iter(self._assistant_calls(index))
        for n, block in enumerate(_blocks(entry)):
            if block.type == "text" and block.text:
                rec.add(
                    source_identity=self.identity, coordinate=f"api:{key}:block:{n}", family=Family.MESSAGE,
                    role="assistant", text=block.text, model=model, provider=provider, **common,
                )
                if "<" in block.text:
                    for name, params in tools.xml_calls(block.text):
                        call_id, _ = next(calls)
                        self._request(call_id, name, params, model, provider, common, rec)
            elif block.type == "tool_use" and block.name:
                call_id, _ = next(calls)
                args = block.input if block.input is not None else {}
                self._request(call_id, block.name, args, model, provider, common, rec)

    def _request(
        self, call_id: str, name: str, args: Any, model: str | None, provider: str | None,
        common: dict[str, Any], rec: Recorder,
    ) -> None:
        arguments = args if isinstance(args, dict | list | str) else json_text(args)
        attributes = tools.mcp_attributes(name, args)
        rec.add(
            source_identity=self.identity, coordinate=f"call:{call_id}:requested", family=Family.TOOL,
            stage=Stage.REQUESTED, tool_name=name, call_id=call_id,
            arguments=encode_arguments(arguments, tools.AUTHORED_KEYS), model=model, provider=provider,
            attributes=attributes, **tools.facets(name, args), **common,
        )

    # -- user --------------------------------------------------------------------------
    def _previous_calls(self, index: int) -> list[tuple[str, str]]:
        for j in range(index - 1, -1, -1):
            entry = self.entries[j]
            if entry is not None and entry.role == "assistant":
                return self._assistant_calls(j)
            if entry is not None and entry.role == "user":
                return []
        return []

    def _user(self, index: int, key: str, entry: wire.ApiMessage, common: dict[str, Any], rec: Recorder) -> None:
        pending = list(self._previous_calls(index))
        results: list[tuple[str | None, str, list[str], bool | None]] = []  # (call id, name, texts, error)
        blocks = _blocks(entry)
        for n, block in enumerate(blocks):
            if block.type == "tool_result":
                call_id = block.tool_use_id or block.call_id
                name = _take(pending, call_id, None)
                results.append((call_id, name or "", [_result_text(block.content)], block.is_error))
                continue
            if block.type != "text" or not block.text:
                continue
            header = tools.result_header(block.text)
            if header is not None:
                tool_name, rest, error = header
                call = _take_by_name(pending, tool_name)
                results.append((call, tool_name, [rest] if rest else [], True if error else None))
                continue
            if results and not results[-1][2] and not tools.injected(block.text):
                results[-1][2].append(block.text)  # XML era: the body follows its header
                continue
            rec.add(
                source_identity=self.identity, coordinate=f"api:{key}:block:{n}", family=Family.MESSAGE,
                role="user", text=block.text, injected=tools.injected(block.text), **common,
            )
        for n, (call_id, name, texts, failed) in enumerate(results):
            cid = call_id or f"{self.task_id}:{index}:result:{n}"
            rec.add(
                source_identity=self.identity, coordinate=f"call:{cid}:result", family=Family.TOOL,
                stage=Stage.RESULT, tool_name=name or None, call_id=cid, result="\n".join(texts) or None,
                is_error=failed, **common,
            )


def _take(pending: list[tuple[str, str]], call_id: str | None, name: str | None) -> str | None:
    for i, (cid, cname) in enumerate(pending):
        if cid == call_id:
            del pending[i]
            return cname
    return name


def _take_by_name(pending: list[tuple[str, str]], name: str) -> str | None:
    """The next open call, by position; the header's tool name confirms it."""
    for i, (cid, cname) in enumerate(pending):
        if cname == name:
            del pending[: i + 1]
            return cid
    return None


def _result_text(content: str | list[Any] | None) -> str:
    if isinstance(content, str):
        return content
    texts = [
        item["text"] for item in content or ()
        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str)
    ]
    return "\n".join(texts)


def _blocks(entry: wire.ApiMessage) -> list[wire.Block]:
    content = entry.content
    if isinstance(content, str):
        return [wire.Block(type="text", text=content)] if content else []
    return content


def _texts(entry: wire.ApiMessage) -> Iterator[str]:
    for block in _blocks(entry):
        if block.type == "text" and block.text:
            yield block.text


class UiMessagesHandler(_TaskHandler):
    """``ui_messages.json``: one usage observation per ended ``api_req_started`` request."""

    def __init__(self, source: Source, fork: Fork) -> None:
        super().__init__(source, fork)
        self.entries: Sequence[wire.UiMessage | None] = ()
        self.requests: dict[int, wire.ApiRequest] = {}
        self.last_request = -1

    def decode(self, raw: msgspec.Raw) -> wire.UiMessage:
        return wire.ui_message.decode(raw)

    def native_id(self, entry: wire.UiMessage) -> str | None:
        return f"ts:{entry.ts}"

    def begin(self, entries: Sequence[Any | None], fresh: bool) -> None:
        self.entries = entries
        self.fresh = fresh
        for index, entry in enumerate(entries):
            if entry is None or entry.say != "api_req_started":
                continue
            self.last_request = index
            try:
                request = wire.api_request.decode(entry.text or "{}")
            except msgspec.DecodeError:
                request = wire.ApiRequest()
            self.requests[index] = request
            if self.cwd is None and request.request and "Current" in request.request:
                self.cwd = tools.working_directory(request.request)

    def settled(self, index: int) -> bool:
        entry = self.entries[index]
        if entry is None or entry.say != "api_req_started":
            return True  # projects nothing: accounted for as it is
        if entry.partial:
            return False
        request = self.requests[index]
        ended = request.cost is not None or request.cancelReason is not None
        return ended or (request.streamingFailedMessage is not None) or index < self.last_request

    def project(self, index: int, key: str, rec: Recorder) -> None:
        entry = self.entries[index]
        assert entry is not None
        request = self.requests.get(index)
        if request is None:
            return
        usage = _usage(request)
        if usage.is_empty():
            return
        info = entry.modelInfo
        attributes = {"usage_scope": "response"}
        if request.cost is not None:
            attributes["cost_usd"] = repr(request.cost)
        if request.cancelReason:
            attributes["cancel_reason"] = request.cancelReason[:256]
        rec.add(
            source_identity=self.identity, coordinate=f"ui:{key}:usage", family=Family.USAGE, usage=usage,
            model=(info.modelId if info else None) or self.info.model,
            provider=(info.providerId if info else None) or self.info.provider,
            attributes=attributes, **self.common(index, key, entry.ts),
        )


def _usage(request: wire.ApiRequest) -> TokenUsage:
    """``api_req_started`` counts in OpenTelemetry meaning.

    Cline's ``tokensIn`` counts the input tokens that were neither read from nor written to
    the prompt cache (its API stream reports them apart), so the input total adds both.
    """
    parts = [request.tokensIn, request.cacheReads, request.cacheWrites]
    total_in = sum(p for p in parts if p) if any(p is not None for p in parts) else None
    return TokenUsage(
        input_tokens=total_in,
        output_tokens=request.tokensOut,
        cache_read_input_tokens=request.cacheReads,
        cache_creation_input_tokens=request.cacheWrites,
    )


def handler_for(source: Source) -> DocumentHandler:
    fork = fork_for_kind(source.kind)
    if os.path.basename(source.path) == API_FILE:
        return ApiHistoryHandler(source, fork)
    return UiMessagesHandler(source, fork)


class ClineTaskAdapter:
    """Every fork's task files; the file's name decides what it projects."""

    kind = "cline.tasks"

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_document(source, cursor, ctx, handler_for(source))


class RooTaskAdapter(ClineTaskAdapter):
    kind = "roo.tasks"


class KiloLegacyTaskAdapter(ClineTaskAdapter):
    kind = "kilo.legacy_tasks"
