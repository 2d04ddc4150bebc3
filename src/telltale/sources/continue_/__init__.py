"""Continue (continue.dev): sessions and the dev-data token log under ``~/.continue``.

The root is ``$CONTINUE_GLOBAL_DIR`` or ``~/.continue`` on every platform (the VS Code
and JetBrains extensions share it). ``continue.sessions`` reads the whole-file session
documents (:mod:`.sessions`); ``continue.dev_data`` the append-only token log
(:mod:`.dev_data`), Continue's only record of token counts.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec

SPECS = (
    SourceSpec(
        client="continue",
        kind="continue.sessions",
        root_type=RootType.HOME,
        relative_path=".continue/sessions",
        file_patterns=("*.json",),
        exclude_patterns=("sessions.json",),
        recursive=False,
        fixture_relative_path="continue/sessions",
        env_paths=(("CONTINUE_GLOBAL_DIR", "sessions"),),
        adapter="telltale.sources.continue_:ContinueSessionAdapter",
        description="Continue chat and agent sessions (~/.continue or CONTINUE_GLOBAL_DIR)",
    ),
    SourceSpec(
        client="continue",
        kind="continue.dev_data",
        root_type=RootType.HOME,
        relative_path=".continue/dev_data",
        file_patterns=("tokensGenerated.jsonl", "tokens_generated.jsonl"),
        recursive=True,
        fixture_relative_path="continue/dev_data",
        env_paths=(("CONTINUE_GLOBAL_DIR", "dev_data"),),
        adapter="telltale.sources.continue_:ContinueDevDataAdapter",
        description="Continue dev-data token usage log",
    ),
)


_LAZY = {"ContinueDevDataAdapter": ".dev_data", "ContinueSessionAdapter": ".sessions"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)

__all__ = ["SPECS", "ContinueDevDataAdapter", "ContinueSessionAdapter"]
