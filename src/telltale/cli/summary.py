"""The end-of-scan summary a person reads: one screen that says what was read, what was
written and where, what the rules found, what was skipped, what delivery did, and what
to run next.

It is fed from the pipeline's :class:`~telltale.pipeline.ScanResult` and the delivery
report only (never from scanner internals), and every string that came from the host
(paths, commands, rule evidence, error reasons) passes the redactor before it is shown.
The per-store table is behind ``--verbose``; a loop prints one timestamped line for an
iteration in which nothing changed.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from telltale.events.redaction import redact
from telltale.pipeline import STDOUT_LOG, DetectionBrief, ScanResult, SourceReport

#: Severities, most urgent first (the order detections are counted and listed in).
SEVERITIES = ("critical", "high", "medium", "low", "informational")
_SEVERITY_STYLE = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "cyan", "informational": "dim"}
#: Detections and skipped records listed by name at most; the rest are counted.
TOP_DETECTIONS = 5
TOP_DETECTIONS_NARROW = 3  # below 120 columns, so that the summary fits one screen
FIRST_SKIPPED = 3


@dataclass
class RunInfo:
    """What the command knows about the run beyond the scan result."""

    log_path: str
    content: str = "redacted"
    delivery: dict[str, Any] = field(default_factory=dict)
    delivery_seconds: float = 0.0
    command: str = "scan"
    verbose: bool = False
    #: Set for the iterations of a loop: their lines carry the time.
    at: dt.datetime | None = None


def shown(text: str) -> str:
    """A host string as shown: redacted, home as ``~``, control characters replaced."""
    home = os.path.expanduser("~")
    value = redact(text)
    if home not in ("", "/", "~") and (value == home or value.startswith(home + os.sep)):
        value = "~" + value[len(home):]
    return value.translate(_CONTROLS)


_CONTROLS = {c: "?" for c in (*range(0x20), 0x7F)}


def size(n: int) -> str:
    """Bytes as a person reads them (1.2 MB)."""
    step = 1000.0
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < step or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= step
    return f"{n} B"


def count(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def seconds(value: float) -> str:
    if value < 10:
        return f"{value:.2f}s"
    if value < 120:
        return f"{value:.0f}s"
    return f"{int(value // 60)}m{int(value % 60):02d}s"


def is_quiet(result: ScanResult, info: RunInfo) -> bool:
    """Nothing to tell: no store changed, nothing failed, no output needs attention."""
    return (
        bool(result.sources)
        and all(r.status == "unchanged" for r in result.sources)
        and not result.discovery_errors
        and result.interrupted is None
        and not _delivery_problems(info.delivery)
    )


def quiet_line(result: ScanResult, info: RunInfo) -> str:
    """One line for a run in which nothing changed (timestamped in a loop)."""
    unchanged = f"{count(len(result.sources), 'store')} unchanged, {seconds(result.duration_s)}"
    if info.at is None:
        return f"telltale {info.command}: nothing new since the last scan: {unchanged}"
    return f"{info.at.strftime('%Y-%m-%d %H:%M:%S')}  no changes: {unchanged}"


def render(result: ScanResult, info: RunInfo, width: int = 80) -> RenderableType:
    """The summary as one rich renderable (a label column and what it says) for ``width``
    columns."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, body in _rows(result, info, width):
        grid.add_row(label, body)
    parts: list[RenderableType] = [_title(result, info), grid]
    if info.verbose:
        parts.append(store_table(result.sources))
    return Group(*parts)


def print_summary(result: ScanResult, info: RunInfo, console: Console) -> None:
    console.print(render(result, info, console.width), highlight=False)


def _title(result: ScanResult, info: RunInfo) -> Text:
    scanned = sum(1 for r in result.sources if r.status not in ("unchanged", "unsupported"))
    unchanged = sum(1 for r in result.sources if r.status == "unchanged")
    total = len(result.sources)
    if result.interrupted is not None:
        total = max(int(result.interrupted.get("sources_total", total)), total)
    title = Text(f"telltale {info.command}", style="bold")
    if info.at is not None:
        title.append(" " + info.at.strftime("%H:%M:%S"))
    title.append(f": {count(total, 'store')}, {scanned} read, {unchanged} unchanged")
    if total > len(result.sources):
        title.append(f", {total - len(result.sources)} not reached", style="yellow")
    title.append(f", {seconds(result.duration_s)}")
    if result.interrupted is not None:
        title.append(f" (interrupted by {result.interrupted.get('signal', 'a signal')})", style="bold yellow")
    if result.dry_run:
        title.append(" (dry run: nothing written)", style="yellow")
    return title


def _rows(result: ScanResult, info: RunInfo, width: int) -> Iterable[tuple[str, RenderableType]]:
    yield "stores", Text(_stores_line(result.sources))
    yield "events", _events(result, info)
    if result.detection_count or result.top_detections:
        yield "detections", _detections(result, info, width)
    if result.quarantined_count:
        yield "skipped", _skipped(result.sources)
    failed = [r for r in result.sources if r.status == "error"]
    if failed:
        yield "errors", _failed(failed)
    blind = [r for r in result.sources if r.unsupported and r.status == "unsupported"]
    if blind:
        reasons = _tally(r.unsupported or "" for r in blind)
        yield "blind spots", Text(
            f"{count(len(blind), 'store')} found that Telltale cannot read ("
            + ", ".join(f"{n} {why}" for why, n in reasons.items())
            + "): see `telltale sources`"
        )
    if result.discovery_errors:
        issues = count(len(result.discovery_errors), "issue")
        yield "discovery", Text(f"{issues} (printed above): see `telltale sources`")
    if info.delivery:
        yield "delivery", _delivery(info)
    hints = next_hints(result, info)
    if hints:
        yield "next", Text("\n".join(_pack(hints, width - 14)))


def _stores_line(sources: Sequence[SourceReport]) -> str:
    if not sources:
        return "none found (see `telltale sources`)"
    by_client: dict[str, list[SourceReport]] = {}
    for r in sources:
        by_client.setdefault(r.client, []).append(r)
    parts = []
    for client, reports in sorted(by_client.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        states = _tally(_state(r) for r in reports if r.status != "unchanged")
        detail = ", ".join(f"{n} {s}" for s, n in states.items())
        parts.append(f"{client} {len(reports)}" + (f" ({detail})" if detail else ""))
    return " · ".join(parts)


def _state(report: SourceReport) -> str:
    return {"ok": "read", "empty": "read", "partial": "partial", "error": "failed"}.get(report.status, report.status)


def _events(result: ScanResult, info: RunInfo) -> Text:
    if result.dry_run:
        activity = sum(r.observations for r in result.sources)
        return Text(f"none written (dry run); {count(activity, 'activity event')} would be")
    where = "stdout" if info.log_path == STDOUT_LOG else shown(info.log_path)
    activity = sum(r.observations for r in result.sources)
    other = max(result.emitted_count - activity - result.detection_count, 0)
    if not activity and not result.detection_count:
        return Text(f"no new activity; {count(other, 'health event')} written to {where}")
    text = Text(f"{result.emitted_count:,} written to {where}")
    text.append(f"\n{activity:,} activity, {result.detection_count:,} detections, {other:,} health, rollups, inventory")
    return text


def _detections(result: ScanResult, info: RunInfo, width: int) -> RenderableType:
    by = result.detections_by_severity
    head = Text(f"{result.detection_count:,}")
    counted = [(s, by[s]) for s in SEVERITIES if by.get(s)]
    if counted:
        head.append(": ")
        for i, (severity, n) in enumerate(counted):
            head.append(("" if i == 0 else ", ") + f"{n} {severity}", style=_SEVERITY_STYLE.get(severity, ""))
    top = result.top_detections[: TOP_DETECTIONS if width >= 120 else TOP_DETECTIONS_NARROW]
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for brief in top:
        table.add_row(Text(brief.severity, style=_SEVERITY_STYLE.get(brief.severity, "")), _brief(brief, info))
    more = result.detection_count - len(top)
    parts: list[RenderableType] = [head, table]
    if more > 0:
        parts.append(Text(f"… and {more:,} more: telltale detections", style="dim"))
    return Group(*parts)


def _brief(brief: DetectionBrief, info: RunInfo) -> Text:
    """Two lines: the rule's title; the client, project and the redacted command or path."""
    text = Text(shown(brief.title), style="bold")
    if brief.count > 1:
        text.append(f" ×{brief.count}")
    where = [brief.client]
    if info.content == "none" and brief.session_id:
        where.append("session " + shown(brief.session_id)[:8])
    if info.content != "none":  # with --content none no command, path or cwd leaves the scan
        if brief.project:
            where.append(shown(brief.project))
        if brief.where:
            where.append(shown(_one_line(brief.where)))
    text.append("\n" + " · ".join(where))
    return text


def _one_line(value: str, limit: int = 160) -> str:
    flat = " ".join(value.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _skipped(sources: Sequence[SourceReport]) -> RenderableType:
    partial = [r for r in sources if r.quarantined]
    total = sum(r.quarantined for r in partial)
    reasons = _tally_many(r.quarantine_reasons for r in partial)
    head = Text(
        f"{count(total, 'record')} in {count(len(partial), 'store')} ("
        + ", ".join(f"{n} {why}" for why, n in reasons.items())
        + "); the rest of each store was read"
    )
    lines = Text()
    shown_n = 0
    for r in partial:
        for q in r.skipped:
            if shown_n == FIRST_SKIPPED:
                break
            lines.append(("\n" if shown_n else "") + f"{shown(q.path)}{_where(q)}  {q.reason}")
            shown_n += 1
    if total > shown_n:
        lines.append(f"\n… {total - shown_n:,} more: telltale status (health events)")
    return Group(head, lines) if shown_n else head


def _where(q: Any) -> str:
    if q.line is not None:
        return f":{q.line}"
    if q.row is not None:
        return f" row {shown(q.row)}"
    if q.offset is not None:
        return f" @{q.offset}"
    return ""


def _failed(failed: Sequence[SourceReport]) -> Text:
    text = Text(f"{count(len(failed), 'store')} failed this run (read again next run)")
    for r in failed[:FIRST_SKIPPED]:
        text.append(f"\n{shown(r.path)}  {r.error or 'error'}")
    if len(failed) > FIRST_SKIPPED:
        text.append(f"\n… {len(failed) - FIRST_SKIPPED} more: telltale status")
    return text


def _delivery_problems(delivery: dict[str, Any]) -> list[str]:
    return [name for name, out in (delivery.get("outputs") or {}).items() if out.get("state") != "ok"]


def _delivery(info: RunInfo) -> RenderableType:
    delivery = info.delivery
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for name, out in sorted((delivery.get("outputs") or {}).items()):
        state = out.get("state", "ok")
        line = Text()
        if state == "blocked":
            line.append(f"BLOCKED ({shown(str(out.get('reason')))})", style="bold red")
        elif state == "failing":
            line.append(f"failing ({shown(str(out.get('reason')))})", style="red")
        else:
            line.append("ok", style="green")
        line.append(f": {out.get('sent', 0):,} sent, {out.get('queued', 0):,} queued")
        fix = out.get("fix")
        if fix:
            line.append("\n" + shown(str(fix)))
        table.add_row(Text(shown(name)), line)
    waited = delivery.get("waited_s")
    tail = Text()
    if waited is not None:
        tail.append(f"waited {seconds(float(waited))} (--delivery-seconds {info.delivery_seconds:g})")
        if delivery.get("skipped"):
            tail.append("; skipped with Ctrl-C, events stay queued")
    return Group(table, tail) if tail else table


def _pack(items: Sequence[str], width: int, sep: str = "  ·  ") -> list[str]:
    """Items joined on as few lines as fit ``width`` (an item is never split)."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + len(sep) + len(item) <= width:
            lines[-1] += sep + item
        else:
            lines.append(item)
    return lines


def next_hints(result: ScanResult, info: RunInfo) -> list[str]:
    """What to run next, from what this run found."""
    hints: list[str] = []
    if result.dry_run or info.log_path == STDOUT_LOG:
        return hints
    if result.top_detections:
        hints.append("telltale detections")
        session = result.top_detections[0].session_id
        if session:
            hints.append(f"telltale show {shown(session)[:8]}")
    if result.quarantined_count or any(r.status == "error" for r in result.sources):
        hints.append("telltale status")
    if _delivery_problems(info.delivery):
        hints.append("telltale delivery status")
    if not hints and any(r.status not in ("unchanged", "unsupported") for r in result.sources):
        hints.append("telltale sessions --since today")
    return hints


def store_table(sources: Sequence[SourceReport]) -> Table:
    """One row per store read this run (``--verbose``); the path last, folded, so numbers
    stay aligned at 80 columns."""
    from rich import box

    table = Table(title="stores read", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  padding=(0, 1, 0, 0))
    for column in ("status", "recs", "events", "det", "skip", "size", "client"):
        table.add_column(column, justify="left" if column in ("status", "client") else "right", no_wrap=True)
    table.add_column("store", overflow="fold")
    for r in sources:
        if r.status == "unchanged":
            continue
        status = r.status + (f" ({r.error or r.unsupported})" if (r.error or r.unsupported) else "")
        table.add_row(status, f"{r.records_read:,}", f"{r.observations:,}", f"{r.detections:,}", f"{r.quarantined:,}",
                      size(r.bytes_read), r.client, Text(shown(r.path)))
    return table


def _tally(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _tally_many(maps: Iterable[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in maps:
        for k, v in m.items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))
