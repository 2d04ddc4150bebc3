"""The common envelope every event document shares (ECS names)."""

from __future__ import annotations

import getpass
import os
import time
from functools import cache, lru_cache
from typing import Any

import msgspec

from telltale import __version__
from telltale.digest import blake2b
from telltale.hostname import hostname

SCHEMA_VERSION = "1.0"


class ContentMode:
    """How much text activity events carry (``--content``)."""

    NONE = "none"  # ids, names, sizes and hashes only
    REDACTED = "redacted"  # commands, paths, URLs, arguments redacted and bounded; text as size + hash
    FULL = "full"  # bounded text too, still redacted
    ALL = (NONE, REDACTED, FULL)


#: The last second :func:`utc_now` formatted, and its text up to the milliseconds.
_second: tuple[int, str] = (-1, "")


def utc_now() -> str:
    """Now in UTC, ``YYYY-MM-DDTHH:MM:SS.mmmZ``. The date and time part is formatted once
    per second (``strftime`` was 7 us a call, paid per batch and per alert item)."""
    global _second
    millis = time.time_ns() // 1_000_000
    second, milli = divmod(millis, 1000)
    known, prefix = _second
    if second != known:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second))
        _second = (second, prefix)
    return f"{prefix}{milli:03d}Z"


@lru_cache(maxsize=16_384)
def path_hash(path: str) -> str:
    """Identify a path without disclosing it (16 hex digits, unkeyed for correlation)."""
    return blake2b(path.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


@cache
def process_user() -> str:
    """The account Telltale runs as: ``user.name`` of every event not about a store found in
    another account's home (the system profile tags those with their account)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"


@cache
def host_fields(user: str = "") -> dict[str, Any]:
    """The host, user and observer objects; ``user`` empty means :func:`process_user`.
    Shared between documents: never modify them in place."""
    name = hostname()
    return {
        "host": {"name": name, "hostname": name},
        "user": {"name": user or process_user()},
        "observer": {
            "vendor": "Telltale",
            "product": "telltale",
            "type": "sensor",
            "version": __version__,
            "hostname": name,
        },
    }


def base_event(
    *,
    event_id: str,
    dataset: str,
    action: str,
    kind: str = "event",
    timestamp: str | None,
    observed_at: str,
    user: str = "",
) -> dict[str, Any]:
    """A fresh envelope. ``timestamp`` is source time; without it, observed time is used.
    ``user``: the account of the store the event is about (empty: :func:`process_user`)."""
    doc: dict[str, Any] = {
        "@timestamp": timestamp or observed_at,
        "event": {
            "id": event_id,
            "kind": kind,
            "dataset": dataset,
            "module": "telltale",
            "action": action,
            "created": observed_at,
        },
        "telltale": {
            "schema_version": SCHEMA_VERSION,
            "time_source": "source" if timestamp else "observed",
        },
    }
    doc.update(host_fields(user))
    return doc


def with_user(doc: dict[str, Any], user: str) -> dict[str, Any]:
    """``doc`` with ``user.name`` set to ``user`` (unchanged when ``user`` is empty): the
    pipeline stamps what it emits about a store with the store's account."""
    if user:
        doc["user"] = host_fields(user)["user"]
    return doc


@cache
def host_raw(user: str = "") -> tuple[msgspec.Raw, msgspec.Raw, msgspec.Raw]:
    """The host, user and observer objects pre-encoded, for documents that embed them as
    ``msgspec.Raw`` fields (one encode of the whole line, no splice)."""
    fields = host_fields(user)
    host, account, observer = (msgspec.Raw(msgspec.json.encode(fields[k])) for k in ("host", "user", "observer"))
    return host, account, observer
