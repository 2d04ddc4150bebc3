"""``.aider.chat.history.md``: runs, prompts, replies, edits, shell commands and tokens.

The file is append-only (byte-offset cursor; the JSONL reader's head/tail fingerprints
notice a truncated or rewritten file and read it again from 0, reported as
``source_truncated``/``source_rewritten``). Lines group into *entries*: a run header, a
user input (consecutive ``#### `` lines), one status line, or a text block. An entry is
mapped when the line after it arrives, because only then is it complete and — for a text
block — known for what it is:

* a text block right after a user input, or followed by a ``> Tokens:`` line, is the
  assistant's reply (message, plus one ``edit`` tool call per SEARCH/REPLACE block and one
  ``shell`` call per line of a shell-fenced block);
* any other text block continues a multi-line status message (an edit error with its
  SEARCH block quoted): counted, not projected.

The last entry of the file waits until the file has been left alone for
:data:`SETTLE_SECONDS` (the scan asks to be run again meanwhile); the cursor resumes at its
start, and what the entries before it left open (pending calls, model, run) is carried.

Results: ``> Applied edit to X`` closes the oldest open ``edit`` call on X (or stands for a
write of a whole-file or udiff reply, a requested+result pair of its own); ``> Running X``
closes the open ``shell`` call for X the same way. ``> Tokens: …`` is usage (aider's rounded
figures, ``attributes.usage_precision = rounded``). A run has no ids and no per-message
times: the session id is the file's path hash and the run header's offset, and only the
header's (local) time is a source time.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.digest import blake2b
from telltale.model import BoundExceeded, Family, Provenance, Stage, TokenUsage, encode_arguments
from telltale.readers.jsonl import Line
from telltale.sources import _project_local
from telltale.sources._jsonl_driver import Out, Recorder, acquire_lines, line_quarantine
from telltale.sources.aider import markdown as md
from telltale.sources.aider.markdown import LineKind
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.spec import Source

KIND = "aider.chat"
CLIENT = "aider"
AGENT = "aider"
#: The file's last entry is mapped once the file is this many seconds old.
SETTLE_SECONDS = 60.0
#: Bytes of one entry held for mapping; a longer one is quarantined (``unbounded_value``).
MAX_ENTRY_BYTES = 4 << 20
#: Open calls carried between entries (and scans); the oldest are forgotten first.
MAX_PENDING = 64
#: Characters of a pending call's key (path or command) kept for matching.
KEY_CHARS = 512

AUTHORED_KEYS = ("search", "replace", "command")


class _Carry(msgspec.Struct, array_like=True, omit_defaults=True):
    """What crosses entries and scans: run start, model, what came last, open calls."""

    run: int = 0
    run_line: int = 0
    model: str = ""
    prev: str = ""
    pending: list[tuple[str, str, str]] = []  # (call id, tool, key)


_carry_decoder = msgspec.json.Decoder(_Carry)
_encoder = msgspec.json.Encoder()


class _Entry:
    __slots__ = ("bad", "kind", "line", "lines", "offset", "size")

    def __init__(self, kind: LineKind, line: Line) -> None:
        self.kind = kind
        self.line = line.number
        self.offset = line.offset
        self.lines: list[tuple[int, int, str]] = []  # (line number, offset, text)
        self.size = 0
        self.bad: str | None = None


def _header_time(text: str) -> str | None:
    """The run header's local time as UTC ISO-8601 (the host's zone: aider wrote it here)."""
    stamp = text[len(md.HEADER_PREFIX):].strip()
    try:
        moment = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    utc = moment.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def path_digest(path: str) -> str:
    return blake2b(path.encode("utf-8", "surrogateescape"), digest_size=6).hexdigest()


class ChatHandler:
    """Maps the lines of one chat-history file (see the module docstring)."""

    def __init__(self, source: Source, carry: bytes | None, settled: bool, project_store: str) -> None:
        self.source = source
        self.settled = settled
        self.held = False
        self.state = _Carry()
        if carry:
            try:
                self.state = _carry_decoder.decode(carry)
            except msgspec.DecodeError:
                self.state = _Carry()
        self.committed = _encoder.encode(self.state)
        self.entry: _Entry | None = None
        self.cwd = os.path.dirname(source.path)
        self.file_id = path_digest(source.path)
        self.attributes = {"project_store": project_store}

    # -- LineHandler ----------------------------------------------------------------------
    def handle(self, line: Line, out: Out) -> None:
        if line.data is None:
            out.records_read += 1
            out.quarantined.append(line_quarantine(KIND, self.source, line, "oversized_line"))
            if self.entry is not None:
                self.entry.bad = self.entry.bad or "oversized_line"
            return
        raw = line.data[:-1] if line.data.endswith(b"\r") else line.data
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        kind = md.classify(text) if text is not None else LineKind.TEXT
        entry = self.entry
        if entry is not None and (
            (entry.kind is LineKind.USER and kind is LineKind.USER)
            or (entry.kind is LineKind.TEXT and kind in (LineKind.TEXT, LineKind.BLANK))
        ):
            self._add(entry, line, text)
            return
        if entry is not None:
            self._finish_entry(entry, out, kind, text)
        if kind is LineKind.BLANK:
            return
        entry = _Entry(kind, line)
        self._add(entry, line, text)
        if kind in (LineKind.HEADER, LineKind.STATUS):
            self._finish_entry(entry, out, None, None)
        else:
            self.entry = entry

    def finish(self, out: Out) -> None:
        if self.entry is None:
            return
        if self.settled:
            self._finish_entry(self.entry, out, None, None)
        else:
            self.held = True

    def resume_point(self) -> tuple[int, int] | None:
        if self.entry is None:
            return None
        return self.entry.offset, self.entry.line - 1

    def carry(self) -> bytes | None:
        return self.committed

    # -- entries --------------------------------------------------------------------------
    def _add(self, entry: _Entry, line: Line, text: str | None) -> None:
        if text is None:
            entry.bad = entry.bad or "invalid_utf8"
            return
        entry.size += line.length + 1
        if entry.size > MAX_ENTRY_BYTES:
            entry.bad = entry.bad or "unbounded_value"
            entry.lines.clear()
            return
        if entry.bad is None:
            entry.lines.append((line.number, line.offset, text))

    def _finish_entry(self, entry: _Entry, out: Out, next_kind: LineKind | None, next_text: str | None) -> None:
        self.entry = None
        out.records_read += 1
        if entry.bad is not None:
            out.quarantined.append(self._quarantine(entry, entry.bad))
            self.state.prev = "other"
        else:
            try:
                self._map(entry, out, next_kind, next_text)
            except BoundExceeded as err:
                out.quarantined.append(self._quarantine(entry, "unbounded_value", err))
        self.committed = _encoder.encode(self.state)

    def _quarantine(self, entry: _Entry, reason: str, err: BoundExceeded | None = None) -> Any:
        line = Line(number=entry.line, offset=entry.offset, data=b"", length=0)
        return line_quarantine(KIND, self.source, line, reason, session_id=self.session_id, err=err)

    @property
    def session_id(self) -> str:
        return f"aider-{self.file_id}-{self.state.run}"

    def _common(self, line: int, offset: int) -> dict[str, Any]:
        model = self.state.model or None
        return {
            "client": CLIENT, "sequence": line, "session_id": self.session_id, "agent": AGENT, "cwd": self.cwd,
            "model": model, "provider": md.provider_of(model) if model else None,
            "attributes": self.attributes,
            "provenance": Provenance(source_kind=KIND, path=self.source.path, line=line, offset=offset),
        }

    def _map(self, entry: _Entry, out: Out, next_kind: LineKind | None, next_text: str | None) -> None:
        rec = Recorder(KIND)
        state = self.state
        number, offset, first = entry.lines[0]
        if entry.kind is LineKind.HEADER:
            state.run, state.run_line, state.model, state.pending, state.prev = offset, number, "", [], "header"
            rec.add(source_identity=self.source.path, coordinate=f"line:{offset}:session", family=Family.SESSION,
                    occurred_at=_header_time(first), **self._common(number, offset))
        elif entry.kind is LineKind.USER:
            self._user(rec, entry, out)
        elif entry.kind is LineKind.STATUS:
            self._status(rec, number, offset, md.status_text(first), out)
        else:
            reply = state.prev == "user" or (
                next_kind is LineKind.STATUS and next_text is not None and next_text.startswith(md.TOKENS_PREFIX))
            if reply:
                self._reply(rec, entry)
                state.prev = "assistant"
            else:
                out.other_records += 1
                state.prev = "other"
        out.observations.extend(rec.take())

    def _user(self, rec: Recorder, entry: _Entry, out: Out) -> None:
        number, offset, _ = entry.lines[0]
        text = md.user_text([t for _, _, t in entry.lines])
        if md.is_confirmation(text):
            out.other_records += 1
            self.state.prev = "other"
            return
        common = self._common(number, offset)
        rec.add(source_identity=self.source.path, coordinate=f"line:{offset}:user", family=Family.MESSAGE,
                role="user", text=text, **common)
        command = md.user_command(text)
        if command is not None:
            call_id = f"aider-{offset}"
            if command.tool == "web":
                rec.add(source_identity=self.source.path, coordinate=f"line:{offset}:web", family=Family.TOOL,
                        stage=Stage.REQUESTED, tool_name="web", call_id=call_id, url=command.argument,
                        arguments=encode_arguments({"url": command.argument}), **common)
            else:
                rec.add(source_identity=self.source.path, coordinate=f"line:{offset}:run", family=Family.TOOL,
                        stage=Stage.REQUESTED, tool_name="run", call_id=call_id, command=command.argument,
                        arguments=encode_arguments({"command": command.argument}, AUTHORED_KEYS), **common)
        self.state.prev = "user"

    def _reply(self, rec: Recorder, entry: _Entry) -> None:
        lines = list(entry.lines)
        while lines and not lines[-1][2].strip():
            lines.pop()
        texts = [t for _, _, t in lines]
        number, offset, _ = lines[0]
        common = self._common(number, offset)
        rec.add(source_identity=self.source.path, coordinate=f"line:{offset}:assistant", family=Family.MESSAGE,
                role="assistant", text="\n".join(texts).strip(), **common)
        edits, commands = md.reply_actions(texts)
        for edit in edits:
            at_line, at = lines[edit.line][0], lines[edit.line][1]
            call_id = f"aider-{at}"
            args = {"path": edit.path, "search": edit.search, "replace": edit.replace}
            rec.add(source_identity=self.source.path, coordinate=f"line:{at}:edit", family=Family.TOOL,
                    stage=Stage.REQUESTED, tool_name="edit", call_id=call_id, file_path=edit.path,
                    file_access="write", arguments=encode_arguments(args, AUTHORED_KEYS),
                    **self._common(at_line, at))
            self._open(call_id, "edit", edit.path)
        for shell in commands:
            at_line, at = lines[shell.line][0], lines[shell.line][1]
            call_id = f"aider-{at}"
            rec.add(source_identity=self.source.path, coordinate=f"line:{at}:shell", family=Family.TOOL,
                    stage=Stage.REQUESTED, tool_name="shell", call_id=call_id, command=shell.command,
                    arguments=encode_arguments({"command": shell.command}, AUTHORED_KEYS),
                    **self._common(at_line, at))
            self._open(call_id, "shell", shell.command)

    def _status(self, rec: Recorder, number: int, offset: int, text: str, out: Out) -> None:
        state = self.state
        state.prev = "status"
        common = self._common(number, offset)
        tokens = md.parse_tokens(text)
        if tokens is not None:
            usage = TokenUsage(input_tokens=tokens.sent, output_tokens=tokens.received,
                               cache_read_input_tokens=tokens.cache_hit,
                               cache_creation_input_tokens=tokens.cache_write)
            attributes = {**self.attributes, "usage_precision": "rounded", "usage_scope": "response"}
            if tokens.cost_message is not None:
                attributes["cost_usd"] = tokens.cost_message
            rec.add(source_identity=self.source.path, coordinate=f"line:{offset}:usage", family=Family.USAGE,
                    usage=usage, **{**common, "attributes": attributes})
            return
        model = md.parse_model(text)
        if model is not None:
            state.model = model
            out.other_records += 1
            return
        for prefix, tool in ((md.APPLIED_PREFIX, "edit"), (md.RUNNING_PREFIX, "shell")):
            if text.startswith(prefix) and len(text) > len(prefix):
                self._result(rec, tool, text[len(prefix):], number, offset, common)
                return
        out.other_records += 1

    def _result(self, rec: Recorder, tool: str, key: str, number: int, offset: int, common: dict[str, Any]) -> None:
        call_id = self._close(tool, key)
        if call_id is None:  # a whole-file reply, or a command aider quoted over several lines
            call_id = f"aider-{offset}"
            facet = {"file_path": key, "file_access": "write"} if tool == "edit" else {"command": key}
            args = {"path": key} if tool == "edit" else {"command": key}
            rec.add(source_identity=self.source.path, coordinate=f"line:{offset}:{tool}", family=Family.TOOL,
                    stage=Stage.REQUESTED, tool_name=tool, call_id=call_id,
                    arguments=encode_arguments(args, AUTHORED_KEYS), **facet, **common)
        text = f"Applied edit to {key}" if tool == "edit" else f"Running {key}"
        rec.add(source_identity=self.source.path, coordinate=f"line:{offset}:result", family=Family.TOOL,
                stage=Stage.RESULT, tool_name=tool, call_id=call_id, result=text, is_error=False, **common)

    # -- open calls -----------------------------------------------------------------------
    def _open(self, call_id: str, tool: str, key: str) -> None:
        pending = self.state.pending
        pending.append((call_id, tool, key[:KEY_CHARS]))
        del pending[:-MAX_PENDING]

    def _close(self, tool: str, key: str) -> str | None:
        key = key[:KEY_CHARS]
        pending = self.state.pending
        for index, (call_id, kind, wanted) in enumerate(pending):
            if kind == tool and wanted == key:
                del pending[index]
                return call_id
        return None


def _settled(path: str, now: float) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return now > 0 and st.st_mtime <= now - SETTLE_SECONDS


class AiderChatAdapter:
    """Aider's Markdown chat history (project-local, append-only)."""

    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        settled = ctx.history is HistoryMode.ALL or _settled(source.path, ctx.now)
        project = os.path.dirname(source.path)
        store = _project_local.git_status(project, os.path.basename(source.path))
        handlers: list[ChatHandler] = []

        def factory(carry: bytes | None) -> ChatHandler:
            handlers.append(ChatHandler(source, carry, settled, store))
            return handlers[-1]

        def revisit() -> bool:
            return bool(handlers) and handlers[-1].held

        return acquire_lines(source, cursor, ctx, factory, revisit=revisit)
