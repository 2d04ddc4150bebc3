"""What the report shows, gathered through the index API with the read side's filters.

The result is one JSON-ready dict: ``meta``, ``overview``, ``sessions`` (each with its
timeline rows), ``detections``. Every string in it has passed the redactor (the report
is an output like any other); counts come from the index, so they equal what
``telltale sessions``/``detections``/``usage`` answer for the same filters.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections import Counter
from dataclasses import dataclass
from typing import Any

from telltale import __version__
from telltale.events.redaction import redact, redact_arguments, redact_cached, redact_document
from telltale.index import status as index_status
from telltale.index import usage as index_usage
from telltale.index.detections import DetectionRow, list_detections
from telltale.index.filters import SEVERITIES, Filters
from telltale.index.sessions import Session, children, list_sessions
from telltale.index.timeline import MAX_DEPTH, file_paths
from telltale.report import timeline

#: Timeline rows in one report at most: sessions past it are listed without a timeline
#: (the page says so and names ``telltale show``), so a report stays bounded in bytes.
REPORT_ROWS = 400_000
#: Characters of message text, and of tool-result text, one report carries at most: when
#: the texts are longer together, each is cut at the same length, short ones kept whole.
MESSAGE_BUDGET = 6_000_000
RESULT_BUDGET = 1_500_000

SEVERITY_ORDER = ("critical", "high", "medium", "low", "informational")


def _r(value: str | None) -> str | None:
    """One string through the redactor (short ones memoised: names, paths, models repeat)."""
    if value is None:
        return None
    return redact_cached(value) if len(value) <= 256 else redact(value)


def _rs(value: str) -> str:
    return redact_cached(value) if len(value) <= 256 else redact(value)


def _args(text: str) -> str:
    return redact_arguments(text)[0]


@dataclass(frozen=True)
class Options:
    content: str = "log"
    store_text: bool = False  # --content full: texts from the agents' stores (records still matching)
    log_path: str = ""
    state_path: str = ""
    now: dt.datetime | None = None


def collect(conn: sqlite3.Connection, filters: Filters, options: Options) -> dict[str, Any]:
    """The report's data for ``filters`` at ``options.content``."""
    content = options.content
    matched = list_sessions(conn, filters)
    sessions = _with_subagents(conn, matched)
    index_of = {s.rowid: i for i, s in enumerate(sessions)}
    files = file_paths(conn, options.log_path) if options.log_path else {}

    budget = REPORT_ROWS
    with_timeline: list[Session] = []
    for s in sessions:
        if s.events <= budget:
            with_timeline.append(s)
            budget -= s.events
    read = timeline.read_sessions(conn, (s.rowid for s in with_timeline), files)

    detections = list_detections(conn, filters)
    det_ids = [d.id for d in detections]
    extra = [i for lines in read.values() for i in lines.detections if i not in set(det_ids)]
    raw: dict[str, bytes] = {i: b for lines in read.values() for i, b in lines.detections.items()}
    det_rows = _detections(conn, detections, extra, raw, files, index_of, content)
    detection_index = {d["id"]: i for i, d in enumerate(det_rows)}

    store_texts: dict[str, str] = {}
    if options.store_text and content == "full":
        from telltale.index.storetext import texts

        docs = [d for lines in read.values() for d in timeline.wanted_store_texts(lines.lines)]
        store_texts = texts(conn, docs) if docs else {}

    message_sizes: list[int] = []
    result_sizes: list[int] = []
    for session_lines in read.values():
        m, r = timeline.text_sizes(session_lines.lines, store_texts)
        message_sizes += m
        result_sizes += r
    text_limit = timeline.fair_cut(message_sizes, MESSAGE_BUDGET, timeline.TEXT_LIMIT)
    result_limit = timeline.fair_cut(result_sizes, RESULT_BUDGET, timeline.RESULT_LIMIT)
    cuts = {
        "message_limit": text_limit,
        "messages_cut": sum(1 for n in message_sizes if n > text_limit),
        "result_limit": result_limit,
        "results_cut": sum(1 for n in result_sizes if n > result_limit),
    }

    kids: dict[tuple[str, str], list[int]] = {}
    for i, s in enumerate(sessions):
        if s.parent_session_id:
            kids.setdefault((s.client, s.parent_session_id), []).append(i)
    matched_ids = {s.rowid for s in matched}
    by_key = {(s.client, s.session_id): i for i, s in enumerate(sessions)}
    out_sessions: list[dict[str, Any]] = []
    for i, s in enumerate(sessions):
        parent = by_key.get((s.client, s.parent_session_id)) if s.parent_session_id else None
        entry = _session(s, i, parent, content, s.rowid in matched_ids)
        base = timeline.epoch_ms(s.first_at) or 0
        entry["base"] = base
        children_here = kids.get((s.client, s.session_id), [])
        lines = read.get(s.rowid)
        if lines is None:
            entry["tl"] = None  # over the report's bound: the page names `telltale show`
        else:
            by_call: dict[str, list[int]] = {}
            loose: list[int] = []
            for c in children_here:
                call = sessions[c].parent_call_id
                if call:
                    by_call.setdefault(call, []).append(c)
                else:
                    loose.append(c)
            made = timeline.rows(
                lines.lines, base_ms=base, content=content, redact=_rs, redact_arguments=_args,
                detection_index=detection_index, children_by_call=by_call, store_texts=store_texts,
                text_limit=text_limit, result_limit=result_limit,
            )  # fmt: skip
            loose.extend(c for calls in by_call.values() for c in calls)  # no matching call in the timeline
            entry["tl"] = made.rows
            entry["omitted"] = made.omitted
            entry["missing"] = lines.missing_spans
            entry["loose"] = sorted(loose)
        entry["subs"] = children_here
        out_sessions.append(entry)

    overview = _overview(conn, filters, matched, detections, content)
    overview["health"]["report"] = {
        **cuts,
        "without_timeline": sum(1 for e in out_sessions if e["tl"] is None),
        "with_missing_parts": sum(1 for e in out_sessions if e.get("missing")),
        "rows_omitted": sum(e.get("omitted", 0) for e in out_sessions),
    }
    return {
        "meta": _meta(conn, filters, options),
        "overview": overview,
        "sessions": out_sessions,
        "detections": det_rows,
    }


def _with_subagents(conn: sqlite3.Connection, matched: list[Session]) -> list[Session]:
    """The matched sessions and, for the timelines, their subagents the filters left out."""
    out = list(matched)
    have = {s.rowid for s in out}
    frontier = [(s, 0) for s in matched]
    while frontier:
        s, depth = frontier.pop()
        if depth >= MAX_DEPTH:
            continue
        for child in children(conn, s):
            if child.rowid not in have:
                have.add(child.rowid)
                out.append(child)
            frontier.append((child, depth + 1))
    return out


def _session(s: Session, i: int, parent: int | None, content: str, matched: bool) -> dict[str, Any]:
    project = s.cwd_hash if content == "none" else (s.cwd or s.cwd_hash)
    return {
        "i": i,
        "client": _r(s.client),
        "id": _r(s.session_id),
        "agent": _r(s.agent),
        "version": _r(s.agent_version),
        "project": _r(project),
        "parent": parent,
        "first": s.first_at,
        "last": s.last_at,
        "events": s.events,
        "messages": s.messages,
        "tools": s.tool_calls,
        "detections": s.detections,
        "sev": s.severity,
        "tokens": {
            "input": s.input,
            "cache_creation": s.cache_creation,
            "cache_read": s.cache_read,
            "output": s.output,
            "total": s.total,
        },
        "m": 1 if matched else 0,
    }


def _detections(
    conn: sqlite3.Connection,
    listed: list[DetectionRow],
    extra: list[str],
    raw: dict[str, bytes],
    files: dict[int, str],
    index_of: dict[int, int],
    content: str,
) -> list[dict[str, Any]]:
    """Listed detections (they count) first, then those only seen in a shown timeline."""
    ids = [d.id for d in listed] + [i for i in dict.fromkeys(extra)]
    if not ids:
        return []
    places = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT d.id, d.session, d.file, d.offset, d.length, d.at, d.client, d.rule_id, d.rule_name,"
            " d.severity_name, d.score, d.category, d.message, d.tool, d.evidence"
            " FROM ix_detections d WHERE d.id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
    }
    listed_ids = {d.id for d in listed}
    handles: dict[int, Any] = {}
    out: list[dict[str, Any]] = []
    try:
        for det_id in ids:
            place = places.get(det_id)
            if place is None:
                continue
            session_rowid, file_id, offset, length = place[0], place[1], place[2], place[3]
            line = raw.get(det_id)
            if line is None and file_id in files and offset is not None and length:
                fh = handles.get(file_id)
                if fh is None:
                    try:
                        fh = handles[file_id] = open(files[file_id], "rb")  # noqa: SIM115 - closed below
                    except OSError:
                        fh = None
                if fh is not None:
                    fh.seek(offset)
                    line = fh.read(length)
            doc: dict[str, Any] = {}
            if line:
                try:
                    parsed = json.loads(line)
                    doc = parsed if isinstance(parsed, dict) else {}
                except ValueError:
                    doc = {}
            entry = _detection(det_id, doc, place, content)
            entry["s"] = index_of.get(session_rowid) if session_rowid is not None else None
            entry["m"] = 1 if det_id in listed_ids else 0
            out.append(entry)
    finally:
        for fh in handles.values():
            fh.close()
    return out


def _detection(det_id: str, doc: dict[str, Any], place: tuple[Any, ...], content: str) -> dict[str, Any]:
    """One detection from its log line (the index row when the line is gone)."""
    _s, _f, _o, _l, at, client, rule_id, rule_name, severity, score, category, message, tool, evidence = place
    tt = doc.get("telltale") or {}
    det = tt.get("detection") or {}
    rule = doc.get("rule") or {}
    threat = doc.get("threat") or {}
    technique = threat.get("technique") or {}
    evidence_list = det.get("evidence") if isinstance(det.get("evidence"), list) else None
    if evidence_list is None:
        evidence_list = json.loads(evidence) if evidence else []
    shown_evidence = []
    for e in evidence_list[:20]:
        if not isinstance(e, dict):
            continue
        item = {"field": e.get("field"), "hash": e.get("hash"), "value": None}
        if content != "none" and isinstance(e.get("value"), str):
            item["value"] = timeline._cut(e["value"], timeline.WHAT_LIMIT)
        item["event"] = e.get("observation_id")
        shown_evidence.append(item)
    attack = [*_strings(technique.get("id")), *_strings((technique.get("subtechnique") or {}).get("id"))]
    source = tt.get("source") or {}
    where = _where(det.get("where"), content)
    entry: dict[str, Any] = {
        "id": det_id,
        "at": doc.get("@timestamp") or at,
        "sev": det.get("severity") or severity,
        "score": det.get("score", score),
        "rule": rule.get("id") or rule_id,
        "name": rule.get("name") or rule_name,
        "ruleset": rule.get("ruleset"),
        "uuid": rule.get("uuid"),
        "description": rule.get("description"),
        "category": rule.get("category") or category,
        "categories": _strings(det.get("categories")) or ([category] if category else []),
        "message": doc.get("message") or message,
        "tool": ((doc.get("gen_ai") or {}).get("tool") or {}).get("name") or tool,
        "client": tt.get("client") or client,
        "evidence": shown_evidence,
        "recommendation": det.get("recommendation"),
        "attack": attack,
        "tactics": _strings((threat.get("tactic") or {}).get("name")),
        "atlas": _strings(det.get("atlas")),
        "references": [r for r in _strings(det.get("references")) if r.startswith("https://")],
        "anchors": _strings(det.get("anchors")),
        "source": {"kind": source.get("kind"), "path_hash": source.get("path_hash"), "line": source.get("line")},
        "sequence": bool(det.get("sequence")),
        "count": det.get("count"),
        "first_seen": det.get("first_seen"),
        "last_seen": det.get("last_seen"),
        "where": where,
    }
    redacted: dict[str, Any] = redact_document(entry)
    return redacted


#: Anchors of one detection's "where" shown at most.
WHERE_ANCHORS = 5
#: Text keys of an anchor ("where") that ``--content none`` holds back (their hashes stay).
_WHERE_TEXT = frozenset({"command", "file_path", "cwd", "url", "path"})


def _where(value: Any, content: str) -> list[dict[str, Any]]:
    """A detection's "where" anchors (a list, or one mapping in older events), flattened to
    ``key: value`` pairs (``source.line``); text keys dropped at content level ``none``."""
    anchors = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
    out: list[dict[str, Any]] = []
    for anchor in anchors[:WHERE_ANCHORS]:
        if not isinstance(anchor, dict):
            continue
        flat: dict[str, Any] = {}
        for key, item in anchor.items():
            pairs = item.items() if isinstance(item, dict) else [(None, item)]
            for sub, leaf in pairs:
                name = f"{key}.{sub}" if sub is not None else str(key)
                if content == "none" and (sub or key) in _WHERE_TEXT:
                    continue
                if isinstance(leaf, (str, int, float)) and not isinstance(leaf, bool):
                    flat[name] = timeline._cut(leaf, timeline.WHAT_LIMIT) if isinstance(leaf, str) else leaf
        out.append(flat)
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _local_day(text: str | None, filters: Filters) -> str | None:
    ms = timeline.epoch_ms(text)
    if ms is None:
        return None
    return str(filters.zone.from_epoch(ms / 1000).strftime("%Y-%m-%d"))


def _overview(
    conn: sqlite3.Connection, filters: Filters, matched: list[Session], detections: list[DetectionRow], content: str
) -> dict[str, Any]:
    agents: dict[tuple[str, str, str], dict[str, Any]] = {}
    per_day: Counter[str] = Counter()
    for s in matched:
        key = (s.client, s.agent or "", s.agent_version or "")
        a = agents.setdefault(key, {"client": s.client, "agent": s.agent, "version": s.agent_version, "sessions": 0,
                                    "last": s.last_at})  # fmt: skip
        a["sessions"] += 1
        if (s.last_at or "") > (a["last"] or ""):
            a["last"] = s.last_at
        day = _local_day(s.first_at, filters)
        if day:
            per_day[day] += 1
    rows, total = index_usage.report(conn, "daily", filters)
    tokens_per_day = [{"day": r.key, "models": dict(sorted(r.models.items())), "total": r.total} for r in rows]
    by_severity = Counter(d.severity or "unknown" for d in detections)
    by_category = Counter(d.category or "unknown" for d in detections)
    health = index_status.health(conn, filters)
    last_scan = index_status.last_scan(conn)
    quarantined = sum(n for kind, n in health["counts"].get("record_quarantined", {}).items())
    overview = {
        "counts": {
            "sessions": len(matched),
            "subagents": sum(1 for s in matched if s.parent_session_id),
            "events": sum(s.events for s in matched),
            "messages": sum(s.messages for s in matched),
            "tool_calls": sum(s.tool_calls for s in matched),
            "detections": len(detections),
            "tokens": total.total,
            "cost_usd": total.cost,
            "cost_complete": total.unpriced_tokens == 0,
            "first": min((s.first_at for s in matched if s.first_at), default=None),
            "last": max((s.last_at for s in matched if s.last_at), default=None),
        },
        "agents": sorted(agents.values(), key=lambda a: (-a["sessions"], a["client"], a["version"] or "")),
        "sessions_per_day": sorted(per_day.items()),
        "tokens_per_day": tokens_per_day,
        "models": sorted(total.models.items(), key=lambda kv: -kv[1]),
        "by_severity": [(name, by_severity[name]) for name in (*SEVERITY_ORDER, "unknown") if by_severity[name]],
        "by_category": by_category.most_common(),
        "health": {
            "counts": health["counts"],
            "recent": health["recent"],
            "quarantined": quarantined,
            "last_scan": last_scan,
        },
    }
    result: dict[str, Any] = redact_document(overview)
    return result


def _zone_name(filters: Filters) -> str | None:
    """An IANA name for the page's clock, or ``None`` (the browser's local zone)."""
    if filters.zone.name != "local":
        return filters.zone.name
    tz = os.environ.get("TZ", "").lstrip(":")
    if not tz:
        return None
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(tz)
    except Exception:
        return None
    return tz


def _meta(conn: sqlite3.Connection, filters: Filters, options: Options) -> dict[str, Any]:
    shown = {
        "since": filters.since, "until": filters.until, "client": list(filters.clients) or None,
        "project": filters.project, "session": filters.session,
        "severity": next((k for k, v in SEVERITIES.items() if v == filters.severity and k != "info"), None),
    }  # fmt: skip
    now = options.now or dt.datetime.now(dt.UTC)
    meta = {
        "version": __version__,
        "generated": now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "zone": _zone_name(filters),
        "content": options.content,
        "filters": {k: v for k, v in shown.items() if v},
        "log_path": options.log_path,
        "state_path": options.state_path,
        "scans": index_status.scans_count(conn),
        "row_bound": REPORT_ROWS,
        "session_rows": timeline.SESSION_ROWS,
    }
    result: dict[str, Any] = redact_document(meta)
    return result
