"""Emit each Gemini CLI message part once, in its settled form (DECISIONS "Settling").

gemini-cli re-appends a whole message every time it changes (tokens attached, a tool
call's status or result), so one message id appears on several lines. A message's parts
are emitted separately, each exactly once:

* its text (``m:<id>``) when first seen non-empty (the writer records content whole);
* its usage (``m:<id>:usage``) when ``tokens`` first appear, even after the text;
* each tool call: the request (``m:<id>:call:<cid>``) once its status is terminal
  (``success``, ``error``, ``cancelled``) or once a later entry exists after the message
  (a later message, a rewind or a checkpoint); the result (``…:result``) with the
  terminal status only. A changed part already emitted is never emitted again.

A message with a tool call still running is *held*: the scan's resume point stays at its
latest line, so the next scan reads it again. What was emitted is remembered per message
(bounded, oldest forgotten first), so re-reading is harmless.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from telltale.digest import blake2b

#: Messages whose emitted parts are remembered (a checkpoint repeats the whole conversation).
MEMORY = 4_096
_TEXT, _USAGE = 1, 2


def key(value: str) -> str:
    """A short, stable stand-in for an id in the carried state (12 hex digits)."""
    return blake2b(value.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


class Memory(msgspec.Struct, omit_defaults=True):
    """What was emitted, per message key, in first-seen order."""

    #: message key -> [flags, call keys with "r" (request done) or "a" (request and result done)]
    done: dict[str, tuple[int, list[str]]] = {}
    #: Older messages were forgotten: an unknown id ahead of known ones in a checkpoint is old.
    forgot: bool = False
    #: Byte offsets of rewind lines whose marker was emitted (bounded like ``done``).
    rewinds: list[int] = []

    def known(self, message_id: str) -> bool:
        return key(message_id) in self.done

    def _entry(self, message_id: str) -> tuple[int, list[str]]:
        k = key(message_id)
        entry = self.done.get(k)
        if entry is None:
            entry = (0, [])
            self.done[k] = entry
            if len(self.done) > MEMORY:
                del self.done[next(iter(self.done))]
                self.forgot = True
        return entry

    def has_text(self, message_id: str) -> bool:
        entry = self.done.get(key(message_id))
        return entry is not None and bool(entry[0] & _TEXT)

    def has_usage(self, message_id: str) -> bool:
        entry = self.done.get(key(message_id))
        return entry is not None and bool(entry[0] & _USAGE)

    def call_state(self, message_id: str, call_id: str) -> str:
        """``""`` (nothing emitted), ``"r"`` (request) or ``"a"`` (request and result)."""
        entry = self.done.get(key(message_id))
        if entry is None:
            return ""
        prefix = key(call_id)
        for item in entry[1]:
            if item[:-1] == prefix:
                return item[-1]
        return ""

    def mark_seen(self, message_id: str) -> None:
        self._entry(message_id)

    def mark_text(self, message_id: str) -> None:
        flags, calls = self._entry(message_id)
        self.done[key(message_id)] = (flags | _TEXT, calls)

    def mark_usage(self, message_id: str) -> None:
        flags, calls = self._entry(message_id)
        self.done[key(message_id)] = (flags | _USAGE, calls)

    def mark_call(self, message_id: str, call_id: str, state: str) -> None:
        flags, calls = self._entry(message_id)
        prefix = key(call_id)
        kept = [item for item in calls if item[:-1] != prefix]
        kept.append(prefix + state)
        self.done[key(message_id)] = (flags, kept[-256:])

    def rewind_done(self, offset: int) -> bool:
        return offset in self.rewinds

    def mark_rewind(self, offset: int) -> None:
        self.rewinds.append(offset)
        del self.rewinds[:-MEMORY]


def old_unknown(memory: Memory, ids: Iterable[str]) -> set[str]:
    """Ids of a checkpoint's messages that are older than anything remembered.

    With nothing forgotten, an unknown id is new (a compression summary, say). Once
    older messages were forgotten, unknown ids ahead of the first remembered one are
    taken as the forgotten ones: they were emitted when they were first seen.
    """
    if not memory.forgot:
        return set()
    out: set[str] = set()
    for message_id in ids:
        if memory.known(message_id):
            break
        out.add(message_id)
    return out
