"""``telltale export``: the log filtered and deduplicated by ``event.id``, as JSONL,
Elasticsearch bulk (action/document pairs), a summary or a timeline."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from telltale.cli import readside

FORMATS = ("jsonl", "elastic-bulk", "summary", "timeline")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export", help="the event log filtered and deduplicated (jsonl, elastic-bulk, summary, timeline)",
        description="Read the event log (and its rotated files), keep the events the filters select, drop "
        "duplicates by event id and write them to stdout.",
    )
    p.add_argument(
        "--format", choices=FORMATS, default="jsonl",
        help="jsonl (default): the events as logged; elastic-bulk: an Elasticsearch _bulk body; summary: counts; "
        "timeline: one line per event",
    )
    readside.add_paths(p)
    readside.add_filters(p)
    p.add_argument("--rule", action="append", metavar="ID", help="only detections of these rules (repeatable)")
    p.add_argument(
        "--dataset", action="append", metavar="NAME",
        help="only these datasets: activity, detection, health, inventory (repeatable)",
    )  # fmt: skip
    p.add_argument(
        "--index", default="telltale-events",
        help="elastic-bulk: the target index or data stream (default telltale-events)",
    )  # fmt: skip
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from telltale.index.export import Selection, select

    filters = readside.filters_of(args)
    conn = None
    try:
        conn = readside.open_index(args)
    except Exception:
        conn = None  # no index is needed to export: only to find the log
    filters = readside.with_clients(filters, args, conn)
    log_path = readside.log_path_of(args, conn)
    if conn is not None:
        conn.close()
    readside.require_log(log_path)
    selection = Selection(filters, tuple(args.rule or ()), tuple(args.dataset or ()))
    out = sys.stdout.buffer
    if args.format == "jsonl":
        for _, line in select(log_path, selection):
            out.write(line + b"\n")
    elif args.format == "elastic-bulk":
        index = json.dumps(args.index)
        for doc, line in select(log_path, selection):
            head = f'{{"create":{{"_index":{index},"_id":{json.dumps(doc.event.id)}}}}}\n'  # type: ignore[attr-defined]
            out.write(head.encode() + line + b"\n")
    elif args.format == "timeline":
        rows = [(doc.timestamp, _timeline_line(doc)) for doc, _ in select(log_path, selection)]  # type: ignore[attr-defined]
        rows.sort(key=lambda r: r[0])
        for _, text in rows:
            out.write(text.encode() + b"\n")
    else:
        out.write(_summary(select(log_path, selection), filters).encode())
    out.flush()
    return 0


def _timeline_line(doc: Any) -> str:
    event, tt, gen_ai = doc.event, doc.telltale, doc.gen_ai
    session = gen_ai.conversation.id if gen_ai is not None and gen_ai.conversation is not None else "-"
    what = doc.message or event.action
    if event.dataset == "telltale.detection" and doc.rule is not None:
        what = f"DETECTION {tt.detection.severity if tt.detection else ''} {doc.rule.id}: {doc.message or ''}"
    return f"{doc.timestamp}\t{tt.client or '-'}\t{session}\t{event.dataset.removeprefix('telltale.')}\t{what}"


def _summary(selected: Any, filters: Any) -> str:
    datasets: dict[str, int] = {}
    actions: dict[str, int] = {}
    clients: dict[str, int] = {}
    sessions: set[tuple[str, str]] = set()
    severities: dict[str, int] = {}
    first = last = None
    total = 0
    for doc, _ in selected:
        total += 1
        event, tt, gen_ai = doc.event, doc.telltale, doc.gen_ai
        datasets[event.dataset] = datasets.get(event.dataset, 0) + 1
        key = f"{event.dataset.removeprefix('telltale.')}/{event.action}"
        actions[key] = actions.get(key, 0) + 1
        if tt.client:
            clients[tt.client] = clients.get(tt.client, 0) + 1
        if gen_ai is not None and gen_ai.conversation is not None and gen_ai.conversation.id:
            sessions.add((tt.client or "", gen_ai.conversation.id))
        if tt.detection is not None and tt.detection.severity:
            severities[tt.detection.severity] = severities.get(tt.detection.severity, 0) + 1
        at = doc.timestamp
        first = at if first is None or at < first else first
        last = at if last is None or at > last else last
    lines = [f"events: {total:,} (deduplicated by event.id)", f"from: {first or '-'}", f"to: {last or '-'}",
             f"sessions: {len(sessions):,}"]  # fmt: skip
    lines += [f"client {k}: {v:,}" for k, v in sorted(clients.items())]
    lines += [f"{k}: {v:,}" for k, v in sorted(actions.items())]
    lines += [f"detections {k}: {v:,}" for k, v in sorted(severities.items())]
    return "\n".join(lines) + "\n"
