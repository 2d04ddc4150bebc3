"""Gemini CLI tool calls mapped to the canonical facets (command, file path, URL).

Tool names and argument keys are gemini-cli's built-in tools (``packages/core/src/tools``);
older builds used ``absolute_path``/``path``, newer ``file_path``/``dir_path``. An MCP
or extension tool keeps its arguments but gets no facet (its meaning is unknown).
"""

from __future__ import annotations

import re

from telltale.sources._jsonl_driver import first_str

_SHELL = frozenset({"run_shell_command"})
_FILES = frozenset(
    {"read_file", "write_file", "replace", "edit", "list_directory", "glob", "search_file_content",
     "grep_search", "grep", "read_many_files"}
)
_WRITES = frozenset({"write_file", "replace", "edit"})
_URLS = frozenset({"web_fetch"})
_PATH_KEYS = ("file_path", "absolute_path", "dir_path", "path", "directory")
#: Arguments that carry authored text (commands, written content, edit strings, prompts).
AUTHORED_KEYS = ("command", "content", "old_string", "new_string", "prompt", "fact")

#: The first http(s) URL in free text (web_fetch takes a prompt naming its URLs). Linear.
_URL_RE = re.compile(r"https?://[^\s<>\"'`)\]]{1,2048}")


def facets(tool: str | None, args: object) -> dict[str, str]:
    """The facets of one call: ``command``, ``file_path`` (with ``file_access``: ``write``
    for the editing tools, else ``read``) or ``url``."""
    if tool is None or not isinstance(args, dict):
        return {}
    if tool in _SHELL:
        command = first_str(args, ("command",))
        return {"command": command} if command else {}
    if tool in _FILES:
        path = first_str(args, _PATH_KEYS)
        if path is None:
            paths = args.get("paths")
            if isinstance(paths, list) and paths and isinstance(paths[0], str) and paths[0]:
                path = paths[0]
        if not path:
            return {}
        return {"file_path": path, "file_access": "write" if tool in _WRITES else "read"}
    if tool in _URLS:
        url = first_str(args, ("url",))
        if url is None:
            prompt = first_str(args, ("prompt",))
            match = _URL_RE.search(prompt) if prompt else None
            url = match.group(0) if match else None
        return {"url": url} if url else {}
    return {}
