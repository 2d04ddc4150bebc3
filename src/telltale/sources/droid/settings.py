"""Droid's ``<session id>.settings.json``: the session's model and running token totals.

The file is rewritten whole as the session runs and holds totals, not per-response
counts. Emitting each rewrite's totals would count a session many times over, so the
cursor keeps the totals already reported and each change emits the *increase* as one
usage observation (``usage_scope: session_delta``), identified by the session and the
totals it brings the session to: the sum of a session's usage events is its last total,
whatever the number of scans in between. A file that does not parse (caught mid-rewrite)
leaves the source ``partial`` and is read again on the next scan. Totals that went down (the file was started
over) are reported from zero again. The file is small; anything over
:data:`MAX_SETTINGS_BYTES` fails the source (``over_budget``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, Quarantine, TokenUsage
from telltale.readers.files import read_document
from telltale.readers.records import decode_guarded
from telltale.sources._jsonl_driver import Recorder
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.droid import CLIENT, SETTINGS_KIND, wire
from telltale.sources.spec import Source

KIND = SETTINGS_KIND
MAX_SETTINGS_BYTES = 1 << 20
_SUFFIX = ".settings.json"


class _Cursor(msgspec.Struct, omit_defaults=True):
    v: int = 1
    totals: list[int] = []


_cursor_decoder = msgspec.json.Decoder(_Cursor)


def _totals(usage: wire.TokenUsage) -> list[int]:
    values = (usage.inputTokens, usage.outputTokens, usage.cacheCreationTokens, usage.cacheReadTokens,
              usage.thinkingTokens)
    return [v if isinstance(v, int) and v > 0 else 0 for v in values]


class DroidSettingsAdapter:
    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior: list[int] = []
        if cursor and ctx.history is HistoryMode.INCREMENTAL:
            try:
                prior = _cursor_decoder.decode(cursor).totals
            except msgspec.DecodeError:
                prior = []
        data, _ = read_document(source.path, MAX_SETTINGS_BYTES)
        name = os.path.basename(source.path)
        sid = name[: -len(_SUFFIX)] if name.endswith(_SUFFIX) else name
        try:
            settings = decode_guarded(wire.settings.decode, data)
        except msgspec.DecodeError:
            # Caught mid-rewrite (or damaged): nothing accounted, read again next scan.
            yield Batch(observations=[], quarantined=[], cursor=cursor, bytes_read=len(data),
                        partial=True, revisit=True)
            return
        totals = _totals(settings.tokenUsage or wire.TokenUsage())
        if len(prior) != len(totals) or any(now < before for now, before in zip(totals, prior, strict=True)):
            prior = [0] * len(totals)  # first sight, or started over
        delta = [now - before for now, before in zip(totals, prior, strict=True)]
        rec = Recorder(KIND)
        quarantined: list[Quarantine] = []
        if any(delta):
            fresh_in, out, cache_write, cache_read, thinking = delta
            usage = TokenUsage(
                input_tokens=fresh_in + cache_write + cache_read, output_tokens=out,
                cache_creation_input_tokens=cache_write or None, cache_read_input_tokens=cache_read or None,
                reasoning_output_tokens=thinking or None,
            )
            try:
                rec.add(
                    source_identity=f"{CLIENT}:{sid}", coordinate="usage:" + ":".join(map(str, totals)),
                    family=Family.USAGE, client=CLIENT, agent="Factory Droid", session_id=sid, sequence=0,
                    usage=usage, model=settings.model, provider=settings.providerLock,
                    attributes={"usage_scope": "session_delta"},
                    provenance=Provenance(source_kind=KIND, path=source.path, row="tokenUsage"),
                )
            except BoundExceeded as err:
                rec.take()
                quarantined.append(Quarantine(source_kind=KIND, path=source.path, reason="unbounded_value",
                                              session_id=sid, row="tokenUsage", field=err.field, bound=err.bound))
        observations = rec.take()
        yield Batch(
            observations=observations, quarantined=quarantined,
            cursor=msgspec.json.encode(_Cursor(totals=totals)), records_read=1,
            other_records=0 if observations else 1, bytes_read=len(data),
        )
