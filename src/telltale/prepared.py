"""A source's batches made ready for the writer: normalised and encoded.

The scan reads a changed source as a stream of :class:`Prepared` batches: the adapter's
:class:`~telltale.sources.base.Batch` with its observations normalised, and (unless the
run writes nothing) the event lines built from them. With one job the stream is produced
in the scanning process (:func:`local_batches`); with ``--jobs N`` by worker processes
(:mod:`telltale.readpool`), which send the same structs, msgpack-encoded. Either way the
scanning process consumes them in the same order and does everything else itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.events.envelope import utc_now
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.spec import Source


class Prepared(msgspec.Struct, array_like=True):
    """One adapter batch, its observations normalised, and their event ids and lines."""

    batch: Batch
    ids: list[str] = []
    lines: list[bytes] = []


def prepare(batch: Batch, content: str, user: str, *, encode: bool) -> Prepared:
    """Normalise a batch's observations and, with ``encode``, build their event lines
    (``user``: the account of their store, for ``user.name``).

    The normalisation stage (tree-sitter-bash) and the event builders are imported here,
    when a changed source is read: they are most of a no-change scan's start-up.
    """
    if not batch.observations:
        return Prepared(batch)
    from telltale.events.activity import activity_lines
    from telltale.normalize.stage import normalize_batch

    # Normalisation: each command as the shell will run it, paths by access.
    batch.observations = normalize_batch(batch.observations)
    if not encode:
        return Prepared(batch)
    observations = batch.observations
    lines = activity_lines(observations, content, utc_now(), user)
    return Prepared(batch, [o.observation_id for o in observations], lines)


def local_batches(source: Source, cursor: bytes | None, ctx: AcquireContext, content: str, *, encode: bool
                  ) -> Iterator[Prepared]:
    """A source read in this process: its adapter's batches, prepared one by one."""
    from telltale.sources.registry import adapter_for

    adapter: Any = adapter_for(source.kind)
    for batch in adapter.acquire(source, cursor, ctx):
        yield prepare(batch, content, source.user, encode=encode)
