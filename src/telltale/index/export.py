"""The log, filtered and deduplicated by ``event.id``, streamed file by file (rotated files
first): what ``telltale export`` writes as JSONL, Elasticsearch bulk, a summary or a
timeline."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import msgspec

from telltale.index.documents import decode_document
from telltale.index.filters import SEVERITIES, Filters
from telltale.index.logfiles import iter_lines, log_files
from telltale.index.upkeep import SEVERITY_NUMBER, id64


@dataclass(frozen=True)
class Selection:
    filters: Filters
    rules: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()

    def wants(self, doc: msgspec.Struct) -> bool:  # a documents.Document
        f = self.filters
        at = doc.timestamp  # type: ignore[attr-defined]
        if f.since and at < f.since:
            return False
        if f.until and at >= f.until:
            return False
        event, tt, gen_ai = doc.event, doc.telltale, doc.gen_ai  # type: ignore[attr-defined]
        if self.datasets and event.dataset not in self.datasets and event.dataset.removeprefix("telltale.") not in (
            self.datasets
        ):
            return False
        if f.clients and tt.client not in f.clients:
            return False
        if f.session:
            sid = gen_ai.conversation.id if gen_ai is not None and gen_ai.conversation is not None else None
            if not sid or not sid.startswith(f.session):
                return False
        if f.project and not ((tt.cwd and f.project in tt.cwd) or tt.cwd_hash == f.project):
            return False
        if self.rules:
            rule = doc.rule  # type: ignore[attr-defined]
            if rule is None or rule.id not in self.rules:
                return False
        if f.severity:
            det = tt.detection
            level = SEVERITY_NUMBER.get(det.severity or "", 0) if det is not None else 0
            if level < f.severity:
                return False
        return True


def select(log_path: str, selection: Selection) -> Iterator[tuple[msgspec.Struct, bytes]]:
    """(narrow document, line) of each selected event, once per ``event.id``, in log order."""
    seen: set[int] = set()
    for path in log_files(log_path):
        for _, line in iter_lines(path):
            try:
                doc = decode_document(line)
            except (msgspec.DecodeError, ValueError):
                continue
            event_id = doc.event.id
            if not event_id:
                continue
            key = id64(event_id)
            if key in seen:
                continue
            seen.add(key)
            if selection.wants(doc):
                yield doc, line


__all__ = ["SEVERITIES", "Selection", "select"]
