"""Which Sigma log sources and fields agent tool calls can answer, and as which Telltale field.

An agent's tool request is not a process event, but its shell command is the command line
a process-creation event would carry, its file tools' paths are what a file event names,
and its fetches are what a proxy or connection event sees. Fields with no counterpart in
a transcript (a parent process, a user, a hash) are not guessed: a rule naming one is
reported as unsupported.
"""

from __future__ import annotations

from typing import Literal

#: What a Sigma field becomes:
#: ``command``/``cwd``/``written_path``/``read_path``: the Telltale field of that name;
#: ``program``: the resolved program name (a Sigma path value is cut to its base name);
#: ``host``/``port``: the host or port of the fetched URL, or of a URL in the command;
#: ``uri``: the fetched URL (path and query when anchored).
Target = Literal["command", "program", "cwd", "written_path", "read_path", "host", "port", "uri"]

_PROCESS: dict[str, Target] = {
    "CommandLine": "command",
    "Image": "program",
    "OriginalFileName": "program",
    "CurrentDirectory": "cwd",
}
_HOST: dict[str, Target] = {"DestinationHostname": "host", "DestinationIp": "host", "DestinationPort": "port"}

#: Supported ``logsource.category`` -> Sigma field (matched case-insensitively) -> target.
CATEGORIES: dict[str, dict[str, Target]] = {
    "process_creation": _PROCESS,
    "file_event": {"TargetFilename": "written_path"},
    "file_change": {"TargetFilename": "written_path"},
    "file_access": {"TargetFilename": "read_path", "FileName": "read_path"},
    "network_connection": _HOST,
    "proxy": {
        "c-uri": "uri",
        "c-uri-query": "uri",
        "c-uri-stem": "uri",
        "url": "uri",
        "cs-host": "host",
        "r-dns": "host",
        "DestinationHostname": "host",
    },
}
_LOWER: dict[str, dict[str, Target]] = {c: {k.lower(): t for k, t in m.items()} for c, m in CATEGORIES.items()}

#: ``logsource.product`` values whose process/file/network events agents' tool calls stand for.
PRODUCTS: frozenset[str | None] = frozenset({None, "linux", "macos", "windows"})

#: Why some common fields cannot be answered (the rest get a generic message).
UNOBSERVABLE: dict[str, str] = {
    "parentimage": "a transcript names no parent process of a tool's command",
    "parentcommandline": "a transcript names no parent process of a tool's command",
    "user": "a transcript does not say which account ran a tool",
    "hashes": "a transcript carries no file hashes",
    "processid": "a transcript carries no process ids",
}


def category_issue(category: str | None, product: str | None, service: str | None) -> str | None:
    """Why a log source cannot be evaluated on agent tool calls (``None``: it can)."""
    if category not in CATEGORIES:
        known = ", ".join(sorted(CATEGORIES))
        return f"log source category {category!r} is not supported (supported: {known})"
    if product not in PRODUCTS:
        return f"log source product {product!r} is not supported (linux, macos, windows or none)"
    if service is not None:
        return f"log source service {service!r} is not supported (agent tool calls come from no log service)"
    return None


def field_target(category: str, field: str) -> Target | str:
    """The target of ``field`` under ``category``, or why there is none (a message)."""
    key = field.lower()
    target = _LOWER[category].get(key)
    if target is not None:
        return target
    reason = UNOBSERVABLE.get(key, "agent tool calls carry no such value")
    known = ", ".join(sorted(CATEGORIES[category]))
    return f"field {field!r} is not supported for {category} ({reason}; mapped: {known})"
