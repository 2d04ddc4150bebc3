"""OpenAI Codex CLI rollouts under CodexHome (``$CODEX_HOME`` or ``~/.codex``).

``SPECS`` declares the three stores (live, archived and headless rollouts);
``CodexAdapter`` (in :mod:`.adapter`) maps one rollout file to canonical observations.
Codex field names live only in this package (:mod:`.wire`).
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec

_PATTERNS = ("*.jsonl", "*.jsonl.zst")
_ADAPTER = "telltale.sources.codex:CodexAdapter"

SPECS = (
    SourceSpec(
        client="codex",
        kind="codex.sessions",
        root_type=RootType.CODEX_HOME,
        relative_path="sessions",
        file_patterns=_PATTERNS,
        recursive=True,
        fixture_relative_path="codex/sessions",
        adapter=_ADAPTER,
        description="Codex live session rollouts",
    ),
    SourceSpec(
        client="codex",
        kind="codex.archived_sessions",
        root_type=RootType.CODEX_HOME,
        relative_path="archived_sessions",
        file_patterns=_PATTERNS,
        recursive=True,
        fixture_relative_path="codex/archived_sessions",
        adapter=_ADAPTER,
        description="Codex archived session rollouts",
    ),
    SourceSpec(
        client="codex",
        kind="codex.headless_sessions",
        root_type=RootType.CODEX_HOME,
        relative_path="headless",
        file_patterns=_PATTERNS,
        recursive=True,
        fixture_relative_path="codex/headless",
        adapter=_ADAPTER,
        description="Codex headless (exec) session rollouts",
    ),
)


_LAZY = {"CodexAdapter": ".adapter"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)

__all__ = ["SPECS", "CodexAdapter"]
