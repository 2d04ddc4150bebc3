"""Batch screening: which observations of a batch can make any rule a candidate.

Nearly every observation matches nothing, and for short values the fixed cost of one
Set match is most of the work. The values of one field across the batch are joined by
newlines and scanned in chunks (the Hyperscan literal scanner on ASCII chunks, the
field's chunk Set otherwise); a quiet chunk proves every value in it quiet, and a chunk
that is not quiet is halved down to the values that are not. See docs/detection.md,
"Matching path".
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate, compress
from operator import not_
from typing import cast

from telltale.detect import cache, literal_scan
from telltale.detect.fields import KIND_FIELDS, field_kind
from telltale.detect.match import FIELD_LIMIT, SetMatch, _FieldIndex, _Probe
from telltale.model import Observation

#: Values up to this many characters are screened joined (never over FIELD_LIMIT bytes).
CHUNK_VALUE_CHARS = FIELD_LIMIT // 4
#: Characters of joined values scanned in one Set match at most.
CHUNK_CHARS = 262_144
#: Values joined in one Set match at most, and at first.
CHUNK_MAX_VALUES = 256
CHUNK_FIRST_VALUES = 16
#: A smaller batch is not screened: every observation takes the exact per-value path.
#: Screening has a fixed cost per batch and per field (grouping, gathering, joining), and
#: real transcripts come in small batches (one per file: a median of 10 observations on
#: the corpus trees) of long values (whole files in tool results) that hit often; there
#: the exact path alone costs 40-60% less CPU (``bench/bench_corpus.py``, the detect stage).
SCREEN_MIN_BATCH = 256


def _queue(pending: dict[int, tuple[list[int], list[str]]], key: int, indices: list[int], texts: list[str]) -> None:
    """Add values to a field's screening queue (the lists given are kept, then extended)."""
    if not indices:
        return
    queue = pending.get(key)
    if queue is None:
        pending[key] = (indices, texts)
    else:
        queue[0].extend(indices)
        queue[1].extend(texts)


class ScreenMixin:
    """The engine's batch screen (see the module docstring)."""

    _fields: list[_FieldIndex | None]
    _probes: tuple[tuple[_Probe, ...], ...]
    #: Per observation kind: 1 when it has an eager field (set with ``_probes``).
    _probed: bytes
    #: The rule-pack cache the engine was built with, and whether the screen is built.
    _pack_cache: cache.PackCache | None
    _screen_ready: bool
    _kind_probes: Callable[[tuple[int, ...]], tuple[_Probe, ...]]

    def _prepare_screen(self) -> None:
        """Build each field's screen matchers, through the rule-pack cache the engine was
        built with (its Hyperscan databases; what is new is saved to it then)."""
        with cache.resumed(self._pack_cache):
            for fx in self._fields:
                if fx is not None:
                    fx.prepare_screen()
        # The per-value matches now go through the literal scanners too (_exact_scan).
        self._probes = tuple(self._kind_probes(fids) for fids in KIND_FIELDS)
        self._screen_ready = True

    def _suspects(self, observations: Sequence[Observation]) -> tuple[list[int], bytearray]:
        """Kind of each observation and the suspects: a large batch screened
        (:meth:`_screen`), a small one all suspects (see :data:`SCREEN_MIN_BATCH`)."""
        if not self._screen_ready:
            self._prepare_screen()
        if len(observations) < SCREEN_MIN_BATCH:
            # Only an observation of a kind with an eager field can make a rule a candidate.
            kinds = list(map(field_kind, observations))
            return kinds, bytearray(map(self._probed.__getitem__, kinds))
        return self._screen(observations)

    def _screen(self, observations: Sequence[Observation]) -> tuple[list[int], bytearray]:
        """Kind of each observation, and which ones may make a rule a candidate.

        An observation is *quiet* when none of its eager fields makes a rule a candidate
        (:meth:`_probe` returns ``None``); nearly all are. Instead of one Set match per
        value (its fixed cost dominates short values), the values of one field across
        the batch are joined by newlines and scanned together with the field's chunk Set.
        Every atom that hits in one value also hits in the joined text, and a gate
        (:meth:`_FieldIndex.opens`) that stays closed for the joined hits is closed for
        each value's hits, so a quiet chunk proves every value in it quiet. A chunk that
        is not quiet is narrowed down to the values that are not (``_screen_field``);
        their observations, those with values too long to join and those with a field
        with residual selections are *suspects*, which ``evaluate`` checks one by one
        with the exact per-value path. Fields are screened shortest-total first: a
        suspect found in a cheap field (a URL) keeps its other values out of later chunks.
        The values are gathered with C-level ``map``/``compress``, not a Python loop.
        """
        if not self._screen_ready:
            self._prepare_screen()
        kinds = list(map(field_kind, observations))
        suspects = bytearray(len(observations))
        probes = self._probes
        groups: dict[int, list[int]] = {}
        for i, kind in enumerate(kinds):
            group = groups.get(kind)
            if group is None:
                groups[kind] = [i]
            else:
                group.append(i)
        pending: dict[int, tuple[list[int], list[str]]] = {}
        fields = self._fields
        for kind, indices in groups.items():
            if not probes[kind]:
                continue
            objs = list(map(observations.__getitem__, indices))
            for get, _index, _match, trigger, _opens, fid in probes[kind]:
                values = list(map(get, objs))
                texts: list[str]
                if all(values):
                    which, texts = indices.copy(), cast("list[str]", values)
                else:
                    which = list(compress(indices, values))
                    if not which:
                        continue
                    texts = list(filter(None, values))
                if trigger is None:
                    for i in which:
                        suspects[i] = 1
                    continue
                fx = fields[fid]
                assert fx is not None
                if max(map(len, texts)) > CHUNK_VALUE_CHARS:
                    short = list(map(CHUNK_VALUE_CHARS.__ge__, map(len, texts)))
                    if fx.scanner is not None:
                        # An ASCII value joins in its cut form (its characters are its bytes):
                        # the literal scanner reads a long value ~3x faster than the Set does.
                        for j in compress(range(len(texts)), map(not_, short)):
                            value = texts[j]
                            if value.isascii():
                                texts[j] = value[:FIELD_LIMIT]
                                short[j] = True
                    for i in compress(which, map(not_, short)):
                        suspects[i] = 1
                    which = list(compress(which, short))
                    texts = list(compress(texts, short))
                # ASCII values are joined apart: one non-ASCII value would make the
                # whole joined text take the slow path of the UTF-8 encoder, and ASCII
                # chunks are scanned by the literal scanner (see literal_scan).
                if all(map(str.isascii, texts)):
                    _queue(pending, fid, which, texts)
                else:
                    ascii_ = list(map(str.isascii, texts))
                    _queue(pending, fid, list(compress(which, ascii_)), list(compress(texts, ascii_)))
                    wide = list(map(not_, ascii_))
                    wide_texts = list(compress(texts, wide))
                    if fx.fold_wide:
                        wide_texts = list(map(literal_scan.fold, wide_texts))
                    _queue(pending, -1 - fid, list(compress(which, wide)), wide_texts)
        ends = {key: list(accumulate(map(len, queue[1]))) for key, queue in pending.items()}
        for key in sorted(pending, key=lambda k: ends[k][-1]):
            indices, texts = pending[key]
            if suspects.find(1) >= 0 and any(map(suspects.__getitem__, indices)):
                keep = list(map(not_, map(suspects.__getitem__, indices)))
                indices = list(compress(indices, keep))
                if not indices:
                    continue
                texts = list(compress(texts, keep))
                ends[key] = list(accumulate(map(len, texts)))
            fx = fields[key if key >= 0 else -1 - key]
            assert fx is not None
            match = fx.ascii_chunk_match if key >= 0 else fx.wide_chunk_match
            assert match is not None
            self._screen_field(fx, match, indices, texts, ends[key], suspects)
        return kinds, suspects

    @staticmethod
    def _screen_field(
        fx: _FieldIndex,
        match: SetMatch,
        indices: list[int],
        values: list[str],
        ends: list[int],
        suspects: bytearray,
    ) -> None:
        """Mark the observations of ``indices`` whose value of this field may not be quiet.

        Values are scanned in chunks; a chunk that is not quiet is halved and each half
        scanned again, down to single values, which are marked. A lone hit among ``n``
        values costs about ``2 log2 n`` Set matches over twice the chunk's bytes, instead
        of every value's observation going through the per-value path. The chunk size
        adapts: it halves after a chunk that was not quiet and doubles after a quiet one.
        """
        trigger = fx.trigger_set
        opens = fx.opens
        count = len(values)
        start = 0
        want = CHUNK_FIRST_VALUES
        while start < count:
            before = ends[start - 1] if start else 0
            end = min(bisect_right(ends, before + CHUNK_CHARS, start), start + want, count)
            if end == start:
                end = start + 1
            quiet = True
            parts = [(start, end)]
            while parts:
                lo, hi = parts.pop()
                found = match("\n".join(values[lo:hi]).encode("utf-8", "surrogatepass"))
                if not found or trigger.isdisjoint(found) or not opens(found):
                    continue
                quiet = False
                if hi - lo == 1:
                    suspects[indices[lo]] = 1
                else:
                    mid = (lo + hi) // 2
                    parts.append((mid, hi))
                    parts.append((lo, mid))
            want = min(want * 2, CHUNK_MAX_VALUES) if quiet else max(1, want // 2)
            start = end
