"""GitHub Copilot CLI: project-local process logs and the session-state event logs."""

from __future__ import annotations

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
        adapter="telltale.sources.copilot:CopilotSessionStateAdapter",
        description="Copilot CLI session-state event logs (~/.copilot or COPILOT_HOME)",
    ),
)
