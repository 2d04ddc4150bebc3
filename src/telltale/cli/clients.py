"""One ``--client`` option for every command that selects agents.

``--client claude --client Codex,qwen`` and ``--client claude.projects`` mean the same
everywhere: repeatable, comma-separated, case-insensitive, an agent name or a source
kind. ``sources``, ``scan`` and ``watch`` check the names against the registry before
they look anywhere; the read-side commands check them against the index first (see
:func:`read_side_clients`) so that they need not import every adapter to start.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any

from telltale.errors import UsageError


def split_names(values: Iterable[str]) -> list[str]:
    """``["Claude, codex", "claude"]`` -> ``["claude", "codex"]`` (order kept, no duplicates)."""
    names = (item.strip().lower() for value in values for item in value.split(","))
    return list(dict.fromkeys(name for name in names if name))


def check_names(given: Iterable[str]) -> tuple[str, ...]:
    """The names normalised; a usage error naming every unknown client and the valid ones."""
    from telltale.sources.registry import CLIENTS, KINDS

    names = split_names(given)
    unknown = [n for n in names if n not in CLIENTS and n not in KINDS]
    if unknown:
        raise UsageError(
            f"unknown client {', '.join(unknown)}; valid clients: {', '.join(CLIENTS)} "
            "(or a source kind, e.g. claude.projects: see `telltale sources`)"
        )
    return tuple(names)


class ClientList(argparse._AppendAction):
    """Accumulate ``--client`` values, split on commas and lower-cased. Names are checked by
    the command (:func:`check_names`, :func:`read_side_clients`): a usage error, exit 2.

    An append action, so ``client:`` in config.yaml is a list key like any other repeatable
    flag; values from there are normalised where they are used (:func:`split_names`)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        names = split_names([str(values)])
        current = list(getattr(namespace, self.dest, None) or [])
        setattr(namespace, self.dest, list(dict.fromkeys([*current, *names])))


CLIENT_HELP = (
    "only these agents or source kinds: repeatable or comma-separated, case-insensitive "
    "(e.g. --client claude,codex or --client claude.projects; `telltale sources` lists them); default: all"
)


def add_client_argument(parser: Any, *, help: str = CLIENT_HELP) -> None:
    """Add ``--client`` to a parser or argument group."""
    parser.add_argument("--client", action=ClientList, metavar="NAME[,NAME]", help=help)


def read_side_clients(given: Sequence[str], indexed: Iterable[str]) -> tuple[str, ...]:
    """The client ids a read-side filter matches: names the index knows pass as they are;
    a source kind becomes its client; an unknown name is a usage error (the registry is
    only imported when a name is not in the index)."""
    names = split_names(given)
    known = set(indexed)
    if all(n in known for n in names):
        return tuple(names)
    from telltale.sources.registry import CLIENTS, REGISTRY

    check_names([n for n in names if n not in known])
    kinds = {spec.kind: spec.client for spec in REGISTRY}
    out = [n if (n in known or n in CLIENTS) else kinds[n] for n in names]
    return tuple(dict.fromkeys(out))
