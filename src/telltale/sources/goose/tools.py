"""Goose's tools are ``<extension>__<tool>`` (``developer__shell``); facets by tool name."""

from __future__ import annotations

from typing import Any

from telltale.sources._jsonl_driver import ToolFacets

AUTHORED_KEYS = ("command", "file_text", "new_str", "old_str", "content", "text")

_facets = ToolFacets(
    shell=frozenset({"shell", "bash", "run_command"}),
    files=frozenset({"text_editor", "read_file", "write_file", "list_directory", "view"}),
    urls=frozenset({"web_scrape", "fetch", "web_fetch"}),
    command_keys=("command", "cmd"),
    path_keys=("path", "file_path", "filepath"),
    url_keys=("url",),
    writes=frozenset({"write_file"}),
    reads=frozenset({"read_file", "list_directory", "view"}),
)


def facets(name: str | None, args: Any) -> dict[str, str]:
    """The facets of a call, by the tool part of ``extension__tool``."""
    if not name:
        return {}
    return _facets(name.rsplit("__", 1)[-1], args)
