"""Amp thread documents: ``threads/T-<id>.json``, rewritten whole on every change.

Each element of ``messages`` is one entry of :mod:`telltale.sources._document` (identity:
its ``messageId``). A user message holds the prompt text and the ``tool_result`` blocks
(``toolUseID``, outcome in ``run{status, result, error}``); an assistant message holds
text and ``tool_use`` blocks and, once the response completed, its ``usage`` (one model
response: emitted with it as a usage observation, ``totalInputTokens`` being input with
cache reads and writes included). The last assistant message is held while its
``state.type`` says it is still streaming; any message followed by another is settled.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import msgspec

from telltale.model import Family, Provenance, Stage, TokenUsage, encode_arguments, iso_time
from telltale.sources._document import acquire_document
from telltale.sources._jsonl_driver import Recorder, ToolFacets, json_text
from telltale.sources.amp import CLIENT, KIND, wire
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.spec import Source

AGENT = "Amp"
#: ``state.type`` values that no longer change.
TERMINAL_STATES = frozenset({"complete", "cancelled", "error"})
#: Arguments that carry authored text.
AUTHORED_KEYS = ("cmd", "command", "content", "old_str", "new_str", "prompt", "query")

_facets = ToolFacets(
    shell=frozenset({"Bash", "bash"}),
    files=frozenset({"Read", "read_file", "create_file", "edit_file", "undo_edit", "format_file", "list_directory",
                     "glob", "Grep"}),
    urls=frozenset({"read_web_page"}),
    command_keys=("cmd", "command"),
    path_keys=("path", "filePath", "file_path"),
    writes=frozenset({"create_file", "edit_file", "undo_edit", "format_file"}),
    reads=frozenset({"Read", "read_file", "list_directory", "glob", "Grep"}),
)


def _file_uri(uri: str | None) -> str | None:
    if not uri or not uri.startswith("file://"):
        return None
    return unquote(urlsplit(uri).path) or None


def _result_text(run: wire.Run | None, block: wire.Block) -> tuple[str | None, bool | None, str | None]:
    """(text, is_error, status) of a tool result."""
    if run is None:
        return json_text(block.content), block.is_error, None
    status = run.status
    result = run.result
    if isinstance(result, dict):
        for key in ("output", "content", "diff"):
            if isinstance(result.get(key), str):
                result = result[key]
                break
    text = json_text(result) if result is not None else None
    if text is None and run.error is not None:
        text = run.error if isinstance(run.error, str) else run.error.message
    is_error = True if status in ("error", "rejected-by-user") else (False if status == "done" else None)
    return text, is_error, status


class ThreadHandler:
    def __init__(self, source: Source) -> None:
        self.source = source
        name = os.path.basename(source.path)
        self.sid = name[: -len(".json")] if name.endswith(".json") else name
        self.head: wire.ThreadHead | None = None
        self.title: str | None = None
        self.created: int | float | None = None
        self.messages: Sequence[wire.Message | None] = ()
        self.cwd: str | None = None
        self.fresh = True
        self.session_emitted = False
        self.names: dict[str, str] = {}

    # DocumentHandler protocol
    def split(self, data: bytes) -> list[msgspec.Raw]:
        self.head = wire.thread_head.decode(data)
        if isinstance(self.head.id, str) and 0 < len(self.head.id) <= 256:
            self.sid = self.head.id
        env = wire.typed(self.head.env, wire.Env)
        trees = env.initial.trees if env is not None and env.initial is not None else []
        self.cwd = _file_uri(trees[0].uri) if trees else None
        self.title = self.head.title if isinstance(self.head.title, str) else None
        created = self.head.created
        self.created = created if isinstance(created, int | float) and not isinstance(created, bool) else None
        return self.head.messages

    def decode(self, raw: msgspec.Raw) -> wire.Message:
        return wire.message.decode(raw)

    def native_id(self, entry: wire.Message) -> str | None:
        return None if entry.messageId is None else str(entry.messageId)

    def session_id(self) -> str | None:
        return self.sid

    def begin(self, entries: Sequence[Any | None], fresh: bool) -> None:
        self.messages = entries
        self.fresh = fresh
        for entry in entries:
            if entry is None or isinstance(entry.content, str):
                continue
            for block in entry.content:
                if block.type == "tool_use" and block.id and block.name:
                    self.names[block.id] = block.name

    def settled(self, index: int) -> bool:
        if index < len(self.messages) - 1:
            return True
        entry = self.messages[index]
        if entry is None or entry.role != "assistant" or entry.state is None:
            return True
        return entry.state.type in TERMINAL_STATES

    def project(self, index: int, key: str, rec: Recorder) -> None:
        entry = self.messages[index]
        assert entry is not None and self.head is not None
        identity = f"{CLIENT}:{self.sid}"
        usage = entry.usage
        model = usage.model if usage else None
        when = iso_time(entry.meta.sentAt if entry.meta else None) or iso_time(usage.timestamp if usage else None)
        common: dict[str, Any] = {
            "client": CLIENT, "agent": AGENT, "session_id": self.sid, "cwd": self.cwd, "sequence": index,
            "occurred_at": when,
            "provenance": Provenance(source_kind=KIND, path=self.source.path, row=f"entry:{index}",
                                     record_id=key if len(key) <= 256 else None),
        }
        if self.fresh and not self.session_emitted:
            self.session_emitted = True
            title = self.title
            rec.add(source_identity=identity, coordinate="session", family=Family.SESSION,
                    attributes={"title": title[:256]} if title else {},
                    **{**common, "occurred_at": iso_time(self.created)})
        blocks = [] if isinstance(entry.content, str) else entry.content
        texts = [entry.content] if isinstance(entry.content, str) and entry.content else [
            b.text for b in blocks if b.type == "text" and b.text]
        if texts and entry.role in ("user", "assistant"):
            rec.add(source_identity=identity, coordinate=f"msg:{key}:text", family=Family.MESSAGE,
                    role=entry.role, text="\n".join(texts), model=model if entry.role == "assistant" else None,
                    **common)
        for n, block in enumerate(blocks):
            if block.type == "tool_use":
                call_id = block.id or f"{key}:call:{n}"
                args = block.input
                rec.add(source_identity=identity, coordinate=f"call:{call_id}:requested", family=Family.TOOL,
                        stage=Stage.REQUESTED, tool_name=block.name, call_id=call_id, model=model,
                        arguments=encode_arguments(args if isinstance(args, dict | list | str) else json_text(args),
                                                   AUTHORED_KEYS),
                        **_facets(block.name, args), **common)
            elif block.type == "tool_result" and (block.toolUseID or block.tool_use_id):
                call_id = block.toolUseID or block.tool_use_id or ""
                text, is_error, status = _result_text(block.run, block)
                rec.add(source_identity=identity, coordinate=f"call:{call_id}:result", family=Family.TOOL,
                        stage=Stage.RESULT, tool_name=self.names.get(call_id), call_id=call_id, result=text,
                        is_error=is_error, interrupted=status == "cancelled",
                        attributes={"status": status[:64]} if status else {}, **common)
        if usage is not None and entry.role == "assistant":
            counts = TokenUsage(
                input_tokens=usage.totalInputTokens if usage.totalInputTokens is not None else (
                    sum(v or 0 for v in (usage.inputTokens, usage.cacheCreationInputTokens,
                                         usage.cacheReadInputTokens))
                    if usage.inputTokens is not None else None),
                output_tokens=usage.outputTokens,
                cache_read_input_tokens=usage.cacheReadInputTokens,
                cache_creation_input_tokens=usage.cacheCreationInputTokens,
            )
            if not counts.is_empty():
                rec.add(source_identity=identity, coordinate=f"msg:{key}:usage", family=Family.USAGE, usage=counts,
                        model=model, response_id=f"{self.sid}:{key}", attributes={"usage_scope": "response"},
                        **{**common, "occurred_at": iso_time(usage.timestamp) or when})


class AmpThreadAdapter:
    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_document(source, cursor, ctx, ThreadHandler(source))
