"""Text for ``show --content full`` read back from the agent's own store.

The log may hold only a message's or a result's length and keyed hash (the default
content mode). When the transcript is still on disk, ``show`` runs its adapter over it
again (read-only, as a scan does), finds the observations by their ids and keeps a text
only when its hash equals the one the log recorded: the record still says what it said
when it was scanned. The text is redacted and bounded exactly as a ``full`` event would
carry it, and only printed, never written anywhere. Anything else is shown as the log
holds it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from telltale.events.envelope import path_hash

#: A store larger than this is not read back (``show`` stays interactive).
MAX_STORE_BYTES = 256 << 20
#: Observations looked at per store at most.
MAX_OBSERVATIONS = 500_000


def _wanted(docs: Iterable[dict[str, Any]]) -> dict[str, dict[str, tuple[str, str]]]:
    """path hash → {event id: (field, logged hash)} of the texts the log does not carry."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for doc in docs:
        tt = doc.get("telltale") or {}
        source = tt.get("source") or {}
        event = doc.get("event") or {}
        message, tool = tt.get("message"), tt.get("tool")
        if isinstance(message, dict) and message.get("hash") and "text" not in message:
            want = ("text", str(message["hash"]))
        elif isinstance(tool, dict) and tool.get("result_hash") and "result" not in tool:
            want = ("result", str(tool["result_hash"]))
        else:
            continue
        if source.get("path_hash") and event.get("id"):
            out.setdefault(str(source["path_hash"]), {})[str(event["id"])] = want
    return out


def texts(state: sqlite3.Connection, docs: Iterable[dict[str, Any]]) -> dict[str, str]:
    """event id → text, for the events whose record in the store still matches the log."""
    wanted = _wanted(docs)
    if not wanted:
        return {}
    from telltale.events.activity import TEXT_LIMIT, bounded_text
    from telltale.events.redaction import value_hash
    from telltale.sources.base import AcquireContext, HistoryMode
    from telltale.sources.registry import adapter_for
    from telltale.sources.spec import RootType, Source

    sources = {
        path_hash(path): (kind, path)
        for kind, path in state.execute("SELECT kind, path FROM cursors")
        if path_hash(path) in wanted
    }
    found: dict[str, str] = {}
    for hashed, (kind, path) in sources.items():
        try:
            st = os.stat(path)
        except OSError:
            continue  # the transcript is gone: the log is all there is
        if st.st_size > MAX_STORE_BYTES:
            continue
        source = Source(client="", kind=kind, path=path, root_type=RootType.HOME, store_root=os.path.dirname(path),
                        found_by="show", device=st.st_dev, inode=st.st_ino)  # fmt: skip
        ids = wanted[hashed]
        seen = 0
        try:
            adapter = adapter_for(kind)
            ctx = AcquireContext(history=HistoryMode.ALL, dry_run=True, now=time.time())
            for batch in adapter.acquire(source, None, ctx):
                for obs in batch.observations:
                    seen += 1
                    want = ids.get(obs.observation_id)
                    if want is None:
                        continue
                    value = obs.text if want[0] == "text" else obs.result
                    if value and value_hash(value) == want[1]:
                        found[obs.observation_id] = bounded_text(value, TEXT_LIMIT)
                if seen > MAX_OBSERVATIONS or len(found) >= sum(len(v) for v in wanted.values()):
                    break
        except Exception:  # a store that cannot be read now: the log is all there is
            continue
    return found
