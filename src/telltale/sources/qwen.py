"""Qwen Code: ``~/.qwen/projects/<project>/chats/<session>.jsonl``."""

from __future__ import annotations

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
        adapter="telltale.sources.qwen:QwenAdapter",
        description="Qwen Code chat transcripts",
    ),
)
