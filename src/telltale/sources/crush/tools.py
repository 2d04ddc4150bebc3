"""Crush's built-in tools and the facets they carry (``internal/agent/tools``)."""

from __future__ import annotations

from telltale.sources._jsonl_driver import ToolFacets

#: Arguments holding authored text (content written, commands run) get the larger budget.
AUTHORED_KEYS = ("content", "new_string", "old_string", "command", "edits", "prompt")

facets = ToolFacets(
    shell=frozenset({"bash"}),
    files=frozenset({"view", "write", "edit", "multiedit", "ls", "glob", "grep"}),
    urls=frozenset({"fetch", "agentic_fetch", "download"}),
    command_keys=("command",),
    path_keys=("file_path", "path"),
    url_keys=("url",),
    writes=frozenset({"write", "edit", "multiedit"}),
    reads=frozenset({"view", "ls", "glob", "grep"}),
)
