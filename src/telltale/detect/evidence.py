"""Evidence: bounded raw excerpts of what matched (redacted later, in telltale.events)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from telltale.detect.fields import FIELD_NAMES
from telltale.detect.match import Searcher, _Datas, _Hit, _Matcher
from telltale.detect.model import Evidence
from telltale.model import Observation

#: Bytes of context kept on each side of a match in an evidence excerpt.
EVIDENCE_CONTEXT = 160
#: Bytes of the match itself kept in an evidence excerpt.
EVIDENCE_MATCH = 512
#: Field values up to this many bytes are kept whole as evidence.
EVIDENCE_WHOLE = 512
#: Step evidence kept per ``evaluate`` call for sequence detections.
EVIDENCE_CACHE = 4_096


def _excerpt(data: bytes, start: int, end: int) -> str:
    """A bounded excerpt around ``data[start:end]``, cut at whitespace so no token is split."""
    if len(data) <= EVIDENCE_WHOLE:
        return data.decode("utf-8", "replace")
    end = min(end, start + EVIDENCE_MATCH)
    lo = max(0, start - EVIDENCE_CONTEXT)
    hi = min(len(data), end + EVIDENCE_CONTEXT)
    if lo > 0:
        cut = -1
        for ws in (b" ", b"\n", b"\t"):
            pos = data.find(ws, lo, start)
            if pos >= 0 and (cut < 0 or pos < cut):
                cut = pos
        lo = cut + 1 if cut >= 0 else start
    if hi < len(data):
        cut = max(data.rfind(ws, end, hi) for ws in (b" ", b"\n", b"\t"))
        hi = cut if cut >= 0 else end
    return data[lo:hi].decode("utf-8", "ignore")


class LaterEvidence:
    """A window entry's evidence, made on first read (``make`` runs once)."""

    __slots__ = ("_make", "_value")

    def __init__(self, make: Callable[[], list[Evidence]] | None, value: list[Evidence] | None = None) -> None:
        self._make = make
        self._value = value

    @classmethod
    def made(cls, value: list[Evidence]) -> LaterEvidence:
        return cls(None, value)

    def __iter__(self) -> Iterator[Evidence]:
        if self._value is None:
            assert self._make is not None
            self._value = self._make()
            self._make = None
        return iter(self._value)


class EvidenceMixin:
    """The engine's evidence of one hit."""

    #: The atom alone, compiled (``MatchMixin._single``).
    _single: Callable[[int, int], Searcher]

    def _evidence(self, obs: Observation, hit: _Hit, datas: _Datas) -> list[Evidence]:
        out: list[Evidence] = []
        seen: set[int] = set()
        for m in hit.selection:
            if m.field in seen:
                continue
            data = datas[m.field]
            if data is None:
                continue
            seen.add(m.field)
            span = self._span(m, data)
            out.append(
                Evidence(
                    field=FIELD_NAMES[m.field],
                    value=_excerpt(data, *span),
                    observation_id=obs.observation_id,
                    rule_id=hit.rule.id,
                )
            )
        return out

    def _later_evidence(self, obs: Observation, hit: _Hit, datas: _Datas) -> LaterEvidence:
        """Evidence made when read, from the observation's values cut again (the same bytes:
        keeping ``datas`` would hold up to 64 KiB per field of every remembered hit of a
        batch until ``evaluate`` returns)."""
        kind_fields, fields = datas.kind_fields, datas.fields

        def make() -> list[Evidence]:
            fresh = _Datas()
            fresh.obs, fresh.kind_fields, fresh.fields = obs, kind_fields, fields
            return self._evidence(obs, hit, fresh)

        return LaterEvidence(make)

    def _span(self, m: _Matcher, data: bytes) -> tuple[int, int]:
        searchers = m.searchers if m.is_regex else tuple(self._single(m.field, a) for a in m.atoms)
        for search in searchers:
            span = search(data)
            if span is not None:
                return span
        return 0, 0
