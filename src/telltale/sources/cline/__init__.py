"""The Cline family of VS Code extensions: Cline, Roo Code and Kilo Code (legacy store).

The three forks keep the same task layout, ``globalStorage/<extension id>/tasks/<taskId>/``
below every VS Code-family editor's ``User`` directory; their differences are data
(:mod:`.forks`). One adapter (:mod:`.adapter`) reads a task's two whole-file documents:
``api_conversation_history.json`` for messages and tool calls, ``ui_messages.json`` (or
its old name ``claude_messages.json``) for token usage and cost.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.cline.forks import FORKS
from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec

_PATTERNS = ("api_conversation_history.json", "ui_messages.json", "claude_messages.json")
_ADAPTERS = {
    "cline.tasks": "ClineTaskAdapter",
    "roo.tasks": "RooTaskAdapter",
    "kilo.legacy_tasks": "KiloLegacyTaskAdapter",
}

SPECS = tuple(
    SourceSpec(
        client=fork.client,
        kind=fork.kind,
        root_type=RootType.EDITOR_USER,
        relative_path=f"globalStorage/{fork.extension_ids[0]}/tasks",
        also_relative_paths=tuple(f"globalStorage/{ext}/tasks" for ext in fork.extension_ids[1:]),
        file_patterns=_PATTERNS,
        recursive=True,
        fixture_relative_path=fork.fixture,
        adapter=f"telltale.sources.cline:{_ADAPTERS[fork.kind]}",
        description=fork.description,
    )
    for fork in FORKS
)


_LAZY = {"ClineTaskAdapter": ".adapter", "KiloLegacyTaskAdapter": ".adapter", "RooTaskAdapter": ".adapter"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)

__all__ = ["SPECS", "ClineTaskAdapter", "KiloLegacyTaskAdapter", "RooTaskAdapter"]
