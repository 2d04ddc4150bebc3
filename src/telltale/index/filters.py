"""The read-side filters, shared by every command: time range, client, project, session,
severity. Days are local days (``TZ``, or ``--timezone``), as ccusage counts them."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from telltale.errors import UsageError

SEVERITIES = {"informational": 1, "info": 1, "low": 21, "medium": 47, "high": 73, "critical": 99}
SEVERITY_NAMES = {1: "informational", 21: "low", 47: "medium", 73: "high", 99: "critical"}

_RELATIVE = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class Zone:
    """A time zone: a named one (``--timezone``) or the host's local rules (``None``)."""

    tz: dt.tzinfo | None = None
    name: str = "local"

    def localize(self, moment: dt.datetime) -> dt.datetime:
        return moment.astimezone(self.tz) if self.tz is not None else moment.astimezone()

    def from_epoch(self, seconds: float) -> dt.datetime:
        moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
        return self.localize(moment)

    def midnight(self, day: dt.date) -> dt.datetime:
        naive = dt.datetime.combine(day, dt.time())
        return naive.replace(tzinfo=self.tz) if self.tz is not None else naive.astimezone()


def zone(name: str | None) -> Zone:
    if not name:
        return Zone()
    if name.upper() == "UTC":
        return Zone(dt.UTC, "UTC")
    try:
        from zoneinfo import ZoneInfo

        return Zone(ZoneInfo(name), name)
    except (KeyError, ValueError, ImportError) as exc:
        raise UsageError(f"unknown time zone {name!r} (an IANA name such as Europe/Paris, or UTC)") from exc
    except Exception as exc:  # ZoneInfoNotFoundError is a KeyError, but be explicit for odd names
        raise UsageError(f"unknown time zone {name!r}") from exc


def iso(moment: dt.datetime) -> str:
    """The index's time text (UTC, milliseconds, ``Z``)."""
    utc = moment.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_time(text: str, z: Zone, *, end: bool, now: dt.datetime | None = None) -> dt.datetime:
    """``today``, ``yesterday``, ``7d``/``12h``/``30m``/``2w`` (ago), a date (``2026-03-01`` or
    ``20260301``, a whole local day: its start, or with ``end`` its end) or an ISO time."""
    now = now or dt.datetime.now(dt.UTC)
    value = text.strip().lower()
    today = z.localize(now).date()
    if value in ("today", "yesterday"):
        day = today if value == "today" else today - dt.timedelta(days=1)
        return z.midnight(day + dt.timedelta(days=1)) if end else z.midnight(day)
    if value == "now":
        return now
    match = _RELATIVE.match(value)
    if match:
        return now - dt.timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    for fmt in ("%Y-%m-%d", "%Y%m%d", "%Y-%m"):
        try:
            parsed = dt.datetime.strptime(value, fmt)
        except ValueError:
            continue
        day = parsed.date()
        if end:
            if fmt == "%Y-%m":
                day = (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
                return z.midnight(day)
            return z.midnight(day + dt.timedelta(days=1))
        return z.midnight(day)
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise UsageError(
            f"not a time: {text!r} (use today, yesterday, 7d, 12h, 2026-03-01, 20260301 or an ISO time)"
        ) from exc
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=z.tz) if z.tz else moment.astimezone()


def severity_number(name: str) -> int:
    try:
        return SEVERITIES[name.lower()]
    except KeyError as exc:
        raise UsageError(f"unknown severity {name!r} (one of {', '.join(SEVERITY_NAMES.values())})") from exc


@dataclass(frozen=True)
class Filters:
    """What every read-side query accepts. Times are UTC index text; ``until`` is exclusive."""

    since: str | None = None
    until: str | None = None
    clients: tuple[str, ...] = ()
    project: str | None = None
    session: str | None = None
    severity: int | None = None
    zone: Zone = field(default_factory=Zone)

    @classmethod
    def build(
        cls,
        *,
        since: str | None = None,
        until: str | None = None,
        clients: tuple[str, ...] | list[str] | None = None,
        project: str | None = None,
        session: str | None = None,
        severity: str | None = None,
        timezone: str | None = None,
        now: dt.datetime | None = None,
    ) -> Filters:
        z = zone(timezone)
        start = iso(parse_time(since, z, end=False, now=now)) if since else None
        stop = iso(parse_time(until, z, end=True, now=now)) if until else None
        if start and stop and stop <= start:
            raise UsageError(f"--until ({until}) is not after --since ({since})")
        return cls(
            since=start,
            until=stop,
            clients=tuple(clients or ()),
            project=project or None,
            session=session or None,
            severity=severity_number(severity) if severity else None,
            zone=z,
        )

    def session_clause(self, alias: str = "s", client_column: str | None = None) -> tuple[str, list[Any]]:
        """SQL conditions on a session row (client, project, session prefix); the client
        is read from ``client_column`` when given (a row that may have no session)."""
        parts: list[str] = []
        args: list[Any] = []
        if self.clients:
            parts.append(f"{client_column or alias + '.client'} IN ({','.join('?' * len(self.clients))})")
            args.extend(self.clients)
        if self.project:
            parts.append(f"(instr({alias}.cwd, ?) > 0 OR {alias}.cwd_hash = ?)")
            args.extend((self.project, self.project))
        if self.session:
            parts.append(f"substr({alias}.session_id, 1, ?) = ?")
            args.extend((len(self.session), self.session))
        return " AND ".join(parts), args
