"""Token usage by day, month, session or model, in ccusage's columns.

Input excludes cached tokens; cache creation, cache read and output follow; total is
their sum (for Codex, the agent's own ``total_tokens``). Each provider response counts
once (see :mod:`telltale.index.upkeep`). Days and months are local to the filters' time
zone, summed from 15-minute UTC buckets.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from telltale.index import pricing
from telltale.index.filters import Filters

VIEWS = ("daily", "monthly", "session", "model")
_FIELDS = ("input", "cache_creation", "cache_read", "output", "total")


@dataclass
class UsageRow:
    key: str
    input: int = 0
    cache_creation: int = 0
    cache_read: int = 0
    output: int = 0
    total: int = 0
    responses: int = 0
    cost_usd: float = 0.0
    unpriced_tokens: int = 0
    models: dict[str, int] = field(default_factory=dict)  # model -> total tokens
    clients: set[str] = field(default_factory=set)
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, client: str, model: str, responses: int, tokens: tuple[int, int, int, int, int]) -> None:
        fresh, created, read, output, total = tokens
        self.input += fresh
        self.cache_creation += created
        self.cache_read += read
        self.output += output
        self.total += total
        self.responses += responses
        self.models[model] = self.models.get(model, 0) + total
        self.clients.add(client)
        price = pricing.cost(model, fresh, created, read, output) if model else None
        if price is None:
            self.unpriced_tokens += total
        else:
            self.cost_usd += price

    @property
    def cost(self) -> float | None:
        """USD, or ``None`` when no token of the row has a price."""
        if self.unpriced_tokens and not self.cost_usd and self.unpriced_tokens == self.total:
            return None
        return round(self.cost_usd, 6)

    def as_dict(self, view: str) -> dict[str, Any]:
        label = {"daily": "date", "monthly": "month", "session": "session_id", "model": "model"}.get(view, "key")
        out: dict[str, Any] = {label: self.key, **self.extra}
        out["clients"] = sorted(self.clients)
        out["models"] = sorted(self.models)
        for name in _FIELDS:
            out[name] = getattr(self, name)
        out["responses"] = self.responses
        out["cost_usd"] = self.cost
        out["cost_complete"] = self.unpriced_tokens == 0
        return out


def report(conn: sqlite3.Connection, view: str, filters: Filters) -> tuple[list[UsageRow], UsageRow]:
    """The rows of a view, oldest (or largest) first, and their total."""
    rows: dict[str, UsageRow] = {}
    if view == "session":
        for r in _session_rows(conn, filters):
            row = rows.get(r[0])
            if row is None:
                row = rows[r[0]] = UsageRow(r[0], extra={"client": r[1], "project": r[2], "last_at": r[3]})
            row.add(r[1], r[4], r[5], r[6:11])
        ordered = sorted(rows.values(), key=lambda x: (x.extra.get("last_at") or "", x.key))
    else:
        zone = filters.zone
        days: dict[int, str] = {}
        for bucket, client, model, responses, *tokens in _bucket_rows(conn, filters):
            if view == "model":
                key = model or "(unknown)"
            else:
                label = days.get(bucket)
                if label is None:
                    label = days[bucket] = zone.from_epoch(bucket).strftime("%Y-%m-%d")
                key = label[:7] if view == "monthly" else label
            row = rows.get(key)
            if row is None:
                row = rows[key] = UsageRow(key)
            row.add(client, model, responses, (tokens[0], tokens[1], tokens[2], tokens[3], tokens[4]))
        if view == "model":
            ordered = sorted(rows.values(), key=lambda x: (-x.total, x.key))
        else:
            ordered = [rows[k] for k in sorted(rows)]
    total = UsageRow("total")
    for row in ordered:
        total.input += row.input
        total.cache_creation += row.cache_creation
        total.cache_read += row.cache_read
        total.output += row.output
        total.total += row.total
        total.responses += row.responses
        total.cost_usd += row.cost_usd
        total.unpriced_tokens += row.unpriced_tokens
        total.clients |= row.clients
        for m, n in row.models.items():
            total.models[m] = total.models.get(m, 0) + n
    return ordered, total


def _epoch(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp())


def _filters(filters: Filters) -> tuple[list[str], list[Any]]:
    clause, args = filters.session_clause("s")
    return ([clause] if clause else []), args


def _bucket_rows(conn: sqlite3.Connection, filters: Filters) -> list[tuple[Any, ...]]:
    parts, args = _filters(filters)
    if filters.since:
        parts.append("u.bucket > ?")
        args.append(_epoch(filters.since) - 900)
    if filters.until:
        parts.append("u.bucket < ?")
        args.append(_epoch(filters.until))
    where = (" WHERE " + " AND ".join(parts)) if parts else ""
    sql = (
        "SELECT u.bucket, s.client, u.model, sum(u.responses), sum(u.input), sum(u.cache_creation),"
        " sum(u.cache_read), sum(u.output), sum(u.total)"
        f" FROM ix_usage u JOIN ix_sessions s ON s.id = u.session{where} GROUP BY u.bucket, s.client, u.model"
    )
    return conn.execute(sql, args).fetchall()


def _session_rows(conn: sqlite3.Connection, filters: Filters) -> list[tuple[Any, ...]]:
    parts, args = _filters(filters)
    if filters.since:
        parts.append("s.last_at >= ?")
        args.append(filters.since)
    if filters.until:
        parts.append("s.last_at < ?")
        args.append(filters.until)
    where = (" WHERE " + " AND ".join(parts)) if parts else ""
    sql = (
        "SELECT s.session_id, s.client, coalesce(s.cwd, s.cwd_hash), s.last_at, u.model, sum(u.responses),"
        " sum(u.input), sum(u.cache_creation), sum(u.cache_read), sum(u.output), sum(u.total)"
        f" FROM ix_usage u JOIN ix_sessions s ON s.id = u.session{where} GROUP BY u.session, u.model"
    )
    return conn.execute(sql, args).fetchall()
