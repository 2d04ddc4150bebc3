"""Amp (Sourcegraph, ampcode.com): ``~/.local/share/amp/threads/T-<id>.json``.

One JSON document per thread, rewritten whole as the thread grows (:mod:`.threads`, on
the shared whole-document driver). The folder is ``$AMP_DATA_DIR`` when set, else
``$XDG_DATA_HOME/amp`` or ``~/.local/share/amp`` on every platform (the CLI is a Node
program using XDG paths on macOS and Windows too). Threads are also kept server-side;
the local file is what this host did. No real sample was available: shapes come from
public third-party parsers (docs/sources/amp.md).
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec

CLIENT = "amp"
KIND = "amp.threads"

SPECS = (
    SourceSpec(
        client=CLIENT,
        kind=KIND,
        root_type=RootType.HOME,
        relative_path=".local/share/amp/threads",
        file_patterns=("T-*.json",),
        recursive=False,
        fixture_relative_path="amp/threads",
        env_paths=(("AMP_DATA_DIR", "threads"), ("XDG_DATA_HOME", "amp/threads")),
        adapter="telltale.sources.amp:AmpThreadAdapter",
        description="Amp threads (one JSON document per thread, rewritten whole)",
    ),
)

_LAZY = {"AmpThreadAdapter": ".threads"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)


__all__ = ["CLIENT", "KIND", "SPECS", "AmpThreadAdapter"]
