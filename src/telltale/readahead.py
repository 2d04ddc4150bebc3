"""Small changed sources read a few at a time, ahead of the one being written.

A cold scan of real transcripts reads ~1,000 small files (a median of 10 observations
each). Read one at a time, each file's detection runs right after its own parsing and
encoding, whose working set has pushed the rule pack's tables (Hyperscan databases, RE2
DFAs, the engine's objects) out of the CPU caches: the same detection work was measured
taking ~1.5x as long inside the scan as on the same batches back to back. Reading the
next few small sources first, then writing them one by one, keeps each stage's tables
warm for a run of sources: a cold scan of the Claude tree takes ~4% less CPU (the median
of 21 paired runs; docs/performance.md, session 11).

Only the order of the work changes: every source is still staged, detected and committed
in discovery order, one at a time, by the one writer; a source read ahead and never
written (the scan was stopped) was only read, and read-only. What a source's reading
raised is raised again where it would have been, after the batches it yielded before it.
Memory stays bounded: a source is read ahead only when it is small, and the batches held
at once are limited in bytes; a large source is read as a stream, as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence

from telltale.prepared import Prepared

#: A source is read ahead only when at most this many bytes are left to read in it.
SOURCE_BYTES = 1 << 20
#: Bytes of sources read ahead and not yet written, at most.
AHEAD_BYTES = 4 << 20


class _Read:
    """One source read ahead: its batches and what reading it raised after them."""

    __slots__ = ("batches", "error")

    def __init__(self, batches: list[Prepared], error: Exception | None) -> None:
        self.batches = batches
        self.error = error


class ReadAhead:
    """The batches of the sources to read (by index), read ahead in groups when small.

    ``read(index)`` reads one source (an iterator of its prepared batches); ``order`` is
    the indices to read, in the order they are asked for; ``sizes`` their bytes left to
    read (an unknown size is not read ahead); ``stopped`` ends the read-ahead early.
    """

    def __init__(
        self,
        read: Callable[[int], Iterator[Prepared]],
        order: Sequence[int],
        sizes: Mapping[int, int],
        stopped: Callable[[], bool],
        *,
        source_bytes: int | None = None,
        ahead_bytes: int | None = None,
    ) -> None:
        self._read = read
        self._order = list(order)
        self._position = {index: n for n, index in enumerate(self._order)}
        self._sizes = sizes
        self._stopped = stopped
        self._source_bytes = SOURCE_BYTES if source_bytes is None else source_bytes
        self._ahead_bytes = AHEAD_BYTES if ahead_bytes is None else ahead_bytes
        self._ahead: dict[int, _Read] = {}

    @property
    def pending(self) -> bool:
        """Whether sources read ahead are waiting to be written."""
        return bool(self._ahead)

    def batches(self, index: int) -> Iterator[Prepared]:
        """Source ``index``'s batches: read ahead already, read now with the small ones
        after it, or (a large source) read as it is written."""
        done = self._ahead.pop(index, None)
        if done is None and self._small(index):
            self._fill(index)
            done = self._ahead.pop(index)
        if done is None:
            yield from self._read(index)
            return
        yield from done.batches
        if done.error is not None:
            raise done.error

    def _small(self, index: int) -> bool:
        size = self._sizes.get(index)
        return size is not None and size <= self._source_bytes

    def _fill(self, index: int) -> None:
        """Read ``index`` and the small sources after it, up to the byte budget."""
        total = 0
        for next_index in itertools.islice(self._order, self._position[index], None):  # no copy of the rest
            if next_index in self._ahead:
                continue
            if not self._small(next_index) or (total and (self._stopped() or total + self._sizes[next_index]
                                                          > self._ahead_bytes)):
                break
            total += self._sizes[next_index]
            batches: list[Prepared] = []
            error: Exception | None = None
            try:
                batches.extend(self._read(next_index))
            except Exception as exc:  # raised again when this source is written
                error = exc
            self._ahead[next_index] = _Read(batches, error)
