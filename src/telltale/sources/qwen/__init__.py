"""Qwen Code: ``~/.qwen/projects/<project>/chats/<session>.jsonl``.

Every line is one ``ChatRecord``: ``user``, ``assistant``, ``tool_result`` or ``system``.
Message content is a Gemini-API ``Content`` (``role`` + ``parts``). The adapter is
modeled (QWEN-3/4): a record whose ``type`` is unknown, or whose shape does not match
its type, gets a terminal classification of its own (quarantine) and is never
re-read as another kind; the rest of the transcript is still acquired (QWEN-5, see
docs/sources/qwen.md).
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec

SPECS = (
    SourceSpec(
        client="qwen",
        kind="qwen.projects",
        root_type=RootType.HOME,
        relative_path=".qwen/projects",
        file_patterns=("*.jsonl",),
        recursive=True,
        parent_dir="chats",
        fixture_relative_path="qwen/projects",
        adapter="telltale.sources.qwen.adapter:QwenAdapter",
        description="Qwen Code chat transcripts",
    ),
)


def __getattr__(name: str) -> Any:
    """Everything else of the package is its adapter module's (imported on first use)."""
    return export(__name__, name, {}, ".adapter")
