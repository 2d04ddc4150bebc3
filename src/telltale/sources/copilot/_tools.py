"""Copilot tool names and the facets their arguments carry (shared by both Copilot kinds)."""

from __future__ import annotations

from telltale.sources._jsonl_driver import ToolFacets

CLIENT = "copilot"
#: Copilot is GitHub's service whatever model it routes to (``claude-sonnet-4.6`` stays as is).
PROVIDER = "github"

_SHELL_TOOLS = frozenset({"bash", "shell", "run_in_terminal", "powershell", "run_shell_command"})
_FILE_TOOLS = frozenset(
    {"view", "edit", "create", "str_replace", "str_replace_editor", "read_file", "write_file", "insert"}
)
_URL_TOOLS = frozenset({"web_fetch", "fetch"})
#: Arguments that carry authored text (commands, written content, edit strings, prompts).
AUTHORED_KEYS = ("command", "cmd", "file_text", "old_str", "new_str", "content", "new_content", "prompt")


#: ``command`` / ``file_path`` / ``url`` of a Copilot tool call, by tool name.
#: ``str_replace_editor`` also has a ``command`` argument, but it names the editor
#: operation (``view``, ``create``), not a shell command: only shell tools give one.
facets = ToolFacets(
    shell=_SHELL_TOOLS, files=_FILE_TOOLS, urls=_URL_TOOLS,
    # ``str_replace_editor`` views or edits by its own ``command`` argument: left to the stage.
    writes=frozenset({"edit", "create", "str_replace", "write_file", "insert"}),
    reads=frozenset({"view", "read_file"}), path_keys=("path", "file_path", "filePath"),
)
