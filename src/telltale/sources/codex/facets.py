"""Facets of Codex tool calls: command lines, patch target paths, URLs.

Nothing downstream parses vendor arguments, so the adapter extracts what detection needs
here: the command line a shell tool ran, the files a patch touches, the URL a web tool
opened. Pure functions over already-decoded values; no I/O.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from itertools import repeat
from typing import Any, TypeGuard

#: Shells whose ``<shell> -lc "<script>"`` wrapper is unwrapped to the script itself.
_POSIX_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
_POSIX_FLAGS = frozenset({"-c", "-lc", "-cl", "-ic", "-ci", "-lic", "-ilc"})
_POWERSHELLS = frozenset({"powershell", "pwsh"})
_POWERSHELL_FLAGS = frozenset({"-command", "-c"})

#: ``*** Add File: path`` style headers of the apply_patch grammar.
_PATCH_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)

#: At most this many patch paths are listed in attributes (all must fit the string bound).
MAX_LISTED_PATHS = 32


def _basename(program: str) -> str:
    name = program.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name[:-4] if name.endswith(".exe") else name


def command_line(argv: list[str]) -> str:
    """A command line from an argv array: ``bash -lc "<cmd>"`` gives ``<cmd>``.

    Any other array is joined shell-style (``shlex.join``), so the result is a command a
    person could paste back into a POSIX shell.
    """
    if len(argv) == 3:
        shell, flag, script = argv
        name = _basename(shell)
        if name in _POSIX_SHELLS and flag in _POSIX_FLAGS:
            return script
        if name in _POWERSHELLS and flag.lower() in _POWERSHELL_FLAGS:
            return script
    return shlex.join(argv)


def is_string_list(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(map(isinstance, value, repeat(str, len(value))))


def shell_command(arguments: Mapping[str, Any]) -> str | None:
    """The command line of a shell-like tool's decoded arguments.

    ``shell`` / ``container.exec`` pass an argv array in ``command`` (or ``cmd``);
    ``shell_command`` passes a string in ``command``; unified ``exec_command`` a string
    in ``cmd``.
    """
    for key in ("command", "cmd"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
        if is_string_list(value) and value:
            return command_line(value)
    return None


def patch_paths(patch: str) -> list[str]:
    """Target paths named by an apply_patch document, in order, without duplicates."""
    seen: dict[str, None] = {}
    # Only a line that opens with "*** " can be a header: the pattern is tried at those line
    # starts alone (a header match ends before a newline, so the lines are independent and
    # this finds what a scan of every position finds, in the same order).
    match = _PATCH_HEADER.match
    starts = [0] if patch.startswith("*** ") else []
    newline = patch.find("\n*** ")
    while newline >= 0:
        starts.append(newline + 1)
        newline = patch.find("\n*** ", newline + 1)
    for start in starts:
        found = match(patch, start)
        if found is not None:
            seen.setdefault(found.group(1), None)
    return list(seen)


def listed_paths(paths: list[str], bound: int) -> str | None:
    """All paths, newline-separated, when there are few enough to fit ``bound`` bytes."""
    if not paths or len(paths) > MAX_LISTED_PATHS:
        return None
    joined = "\n".join(paths)
    return joined if len(joined.encode("utf-8", "surrogatepass")) <= bound else None


_EXIT_LINE = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)\s*$")
_EXIT_OPENINGS = ("Process exited with code ", "Exit code: ")
#: ``_EXIT_LINE`` on every line at once: ``\s*`` can run past a line's end only over blanks,
#: where the line alone matches too.
_EXIT_LINES = re.compile(_EXIT_LINE.pattern, re.M)


def exit_code_from_text(text: str) -> int | None:
    """The exit code stated in the header of a unified-exec / shell_command output.

    Codex writes ``Chunk ID: …\\nWall time: …\\nProcess exited with code N\\n…\\nOutput:\\n…``
    (``exec_command``) or ``Exit code: N\\nWall time: …\\nOutput:\\n…`` (``shell_command``).
    Only the header before ``Output:`` is inspected, never the command's own output.
    """
    if not text.startswith(("Chunk ID: ", "Exit code: ", "Wall time: ")):
        return None
    head = text[:1024]
    cut = head.find("\nOutput:")
    if cut >= 0 and head.count("\n", 0, cut) < 7:
        # The usual header: one search over the lines before "Output:" (all among the first 8),
        # the same first match as the line-by-line loop below.
        match = _EXIT_LINES.search(head, 0, cut)
        return int(match.group(1)) if match else None
    for line in head.split("\n", 8)[:8]:
        # Only a line with one of the two openings can match: the others cost no regex.
        if line.startswith(_EXIT_OPENINGS):
            match = _EXIT_LINE.match(line)
            if match:
                return int(match.group(1))
        elif line.startswith("Output:"):
            break
    return None
