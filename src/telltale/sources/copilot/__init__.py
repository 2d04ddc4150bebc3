"""GitHub Copilot CLI: project-local process logs and the session-state event logs.

``copilot.process_log`` reads the ``Accumulated output items`` text logs exactly as the
upstream format describes them (COP-5); ``copilot.session_state`` reads the
``session-state/<id>/events.jsonl`` event logs (and the older flat ``<id>.jsonl``).
``session-store.db`` and the per-session ``session.db`` are never acquired (COP-6): no
spec matches them.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec

SPECS = (
    SourceSpec(
        client="copilot",
        kind="copilot.process_log",
        root_type=RootType.PROJECT_LOCAL,
        relative_path="logs/copilot",
        file_patterns=("*.log",),
        recursive=False,
        fixture_relative_path="copilot",
        adapter="telltale.sources.copilot:CopilotProcessLogAdapter",
        description="Copilot process logs in a project's logs/copilot (project-local only)",
    ),
    SourceSpec(
        client="copilot",
        kind="copilot.session_state",
        root_type=RootType.HOME,
        relative_path=".copilot/session-state",
        file_patterns=("events.jsonl", "*.jsonl"),
        recursive=True,
        fixture_relative_path="copilot/session-state",
        # COPILOT_HOME replaces ~/.copilot for the CLI; both are searched.
        env_paths=(("COPILOT_HOME", "session-state"),),
        adapter="telltale.sources.copilot:CopilotSessionStateAdapter",
        description="Copilot CLI session-state event logs (~/.copilot or COPILOT_HOME)",
    ),
)


_LAZY = {"CopilotProcessLogAdapter": ".process_log", "CopilotSessionStateAdapter": ".session_state"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)

__all__ = ["SPECS", "CopilotProcessLogAdapter", "CopilotSessionStateAdapter"]
