"""The static source registry: every SourceSpec, in registration order.

Order is the seed's (clients, then their kinds) and never changes at run time;
discovered sources are sorted separately (see ``telltale.discovery``).
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import cache

from telltale.errors import UsageError
from telltale.sources import (
    aider,
    amp,
    antigravity,
    claude,
    cline,
    codex,
    continue_,
    copilot,
    crush,
    cursor,
    droid,
    gemini,
    goose,
    kilo,
    kiro,
    openclaw,
    opencode,
    qwen,
    trae,
    windsurf,
    zed,
)
from telltale.sources.base import Adapter
from telltale.sources.spec import SourceSpec

#: Static registration order: the seed's table order, new kinds after their client's.
REGISTRY: tuple[SourceSpec, ...] = (
    *codex.SPECS,
    *claude.SPECS,
    *qwen.SPECS,
    *openclaw.SPECS,
    *opencode.SPECS,
    *copilot.SPECS,
    *cursor.SPECS,
    *gemini.SPECS,
    *kilo.SPECS,
    *antigravity.SPECS,
    *windsurf.SPECS,
    *trae.SPECS,
    *cline.SPECS,
    *continue_.SPECS,
    *aider.SPECS,
    *goose.SPECS,
    *crush.SPECS,
    *zed.SPECS,
    *amp.SPECS,
    *droid.SPECS,
    *kiro.SPECS,
)

CLIENTS: tuple[str, ...] = tuple(dict.fromkeys(spec.client for spec in REGISTRY))
KINDS: tuple[str, ...] = tuple(spec.kind for spec in REGISTRY)


def adapter_module(kind: str) -> str:
    """The module defining ``kind``'s adapter, found without importing it (an agent package
    names it in its ``_LAZY`` map): a ``--jobs`` forkserver imports it once for its workers."""
    package, _, attr = spec_for(kind).adapter.partition(":")
    lazy = getattr(importlib.import_module(package), "_LAZY", None)
    if isinstance(lazy, dict) and isinstance(lazy.get(attr), str):
        return importlib.util.resolve_name(lazy[attr], package)
    return package


def spec_for(kind: str) -> SourceSpec:
    for spec in REGISTRY:
        if spec.kind == kind:
            return spec
    raise KeyError(kind)


def select(clients: list[str] | None) -> tuple[SourceSpec, ...]:
    """Specs for the requested clients (or kinds), in registry order."""
    if not clients:
        return REGISTRY
    wanted = set(clients)
    unknown = sorted(w for w in wanted if w not in CLIENTS and w not in KINDS)
    if unknown:
        raise UsageError(
            f"unknown client {', '.join(unknown)}; valid clients: {', '.join(CLIENTS)}"
            f" (or a source kind: {', '.join(KINDS)})"
        )
    return tuple(s for s in REGISTRY if s.client in wanted or s.kind in wanted)


_UNSUPPORTED: dict[str, str] = {spec.kind: spec.unsupported for spec in REGISTRY if spec.unsupported}


def unsupported_reason(kind: str) -> str | None:
    """Why sources of ``kind`` are never read (``encrypted``...), or ``None`` when they are."""
    return _UNSUPPORTED.get(kind)


@cache
def adapter_for(kind: str) -> Adapter:
    """Instantiate the source-owned adapter of a kind (imported on first use)."""
    spec = spec_for(kind)
    module_name, _, attr = spec.adapter.partition(":")
    module = importlib.import_module(module_name)
    adapter: Adapter = getattr(module, attr)()
    return adapter
