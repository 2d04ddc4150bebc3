"""Aider's chat-history Markdown, line by line: what each line is and what a block holds.

Aider appends to ``.aider.chat.history.md`` in whole writes (formats-more.md §4):

* ``\\n# aider chat started at 2025-05-04 17:02:36\\n\\n`` opens a run (local time, no zone);
* a user input is ``\\n#### line1  \\n#### line2  \\n`` (every line prefixed and ending in two
  spaces, a blank input as ``<blank>``);
* a tool/status message is ``> text  \\n`` (block-quoted, two trailing spaces); a message
  with newlines inside continues on unprefixed lines;
* the assistant's reply is written once it is complete: ``\\n<reply>\\n\\n``, then (almost
  always) a ``> Tokens: … sent, … received.`` line.

The two trailing spaces tell aider's own lines from Markdown the model wrote (an ``####``
heading or a ``>`` quote in a reply has none). Everything here is pure: no I/O.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass

HEADER_PREFIX = "# aider chat started at "
USER_PREFIX = "#### "
STATUS_PREFIX = "> "
TOKENS_PREFIX = "> Tokens: "
#: A confirmation answered from a remembered preference is logged as user input.
_CONFIRM = re.compile(r"\(Y\)es/\(N\)o.*\]: ?\S*\s*$")


class LineKind(enum.Enum):
    HEADER = "header"
    USER = "user"
    STATUS = "status"
    BLANK = "blank"
    TEXT = "text"


def classify(line: str) -> LineKind:
    """What one line (without its newline or ``\\r``) is."""
    if line.startswith(HEADER_PREFIX):
        return LineKind.HEADER
    if line.startswith(USER_PREFIX) and line.endswith("  "):
        return LineKind.USER
    if line.startswith(STATUS_PREFIX) and line.endswith("  "):
        return LineKind.STATUS
    if not line.strip():
        return LineKind.BLANK
    return LineKind.TEXT


def user_text(lines: Sequence[str]) -> str:
    """The user's input from its ``#### `` lines (``<blank>`` is an empty input)."""
    text = "\n".join(line[len(USER_PREFIX):-2] for line in lines)
    return "" if text == "<blank>" else text


def status_text(line: str) -> str:
    return line[len(STATUS_PREFIX):].rstrip()


def is_confirmation(text: str) -> bool:
    """A y/n question and its answer, logged as input (not the user's words)."""
    return "\n" not in text and _CONFIRM.search(text) is not None


# -- slash commands --------------------------------------------------------------------

#: Commands that run their argument in a shell (``!`` is ``/run``'s alias).
SHELL_COMMANDS = ("/run", "/test", "/lint", "/git")
WEB_COMMAND = "/web"


@dataclass(frozen=True)
class Command:
    """A user input that makes aider act: ``tool`` is ``shell``, ``git`` or ``web``."""

    tool: str
    argument: str


def user_command(text: str) -> Command | None:
    """The tool a user input invokes, if any (``/run ls``, ``!ls``, ``/web URL``)."""
    stripped = text.strip()
    if stripped.startswith("!") and len(stripped) > 1:
        return Command("shell", stripped[1:].strip())
    word, _, rest = stripped.partition(" ")
    rest = rest.strip()
    if word in ("/run", "/test") and rest:
        return Command("shell", rest)
    if word == "/git" and rest:
        return Command("shell", "git " + rest)
    if word == WEB_COMMAND and rest:
        return Command("web", rest.split()[0])
    return None


# -- status lines ------------------------------------------------------------------------

_TOKEN_ITEM = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([kKmM]?) (sent|received|cache write|cache hit)\.?$")
_COST = re.compile(r"Cost: \$([0-9]+(?:\.[0-9]+)?) message, \$([0-9]+(?:\.[0-9]+)?) session")
_MODEL = re.compile(r"^(?:Main model|Model): (\S+)(?: with .*)?$")


@dataclass(frozen=True)
class Tokens:
    """One ``> Tokens:`` report (aider rounds: ``3.2k``, ``13k``, ``1.1M``)."""

    sent: int | None
    received: int | None
    cache_write: int | None
    cache_hit: int | None
    cost_message: str | None
    cost_session: str | None


def _count(number: str, suffix: str) -> int:
    scale = {"": 1, "k": 1_000, "K": 1_000, "m": 1_000_000, "M": 1_000_000}[suffix]
    return round(float(number) * scale)


def parse_tokens(status: str) -> Tokens | None:
    """``Tokens: 2.4k sent, 104 received. Cost: $0.00042 message, $0.00042 session.``"""
    if not status.startswith("Tokens: "):
        return None
    body, _, cost = status[len("Tokens: "):].partition(" Cost: ")
    values: dict[str, int] = {}
    for item in body.split(", "):
        match = _TOKEN_ITEM.match(item.strip())
        if match is None:
            return None
        values[match.group(3)] = _count(match.group(1), match.group(2))
    if not values:
        return None
    cost_match = _COST.search("Cost: " + cost) if cost else None
    return Tokens(
        sent=values.get("sent"), received=values.get("received"), cache_write=values.get("cache write"),
        cache_hit=values.get("cache hit"),
        cost_message=cost_match.group(1) if cost_match else None,
        cost_session=cost_match.group(2) if cost_match else None,
    )


def parse_model(status: str) -> str | None:
    """The main model of ``Model: X with diff edit format`` (0.86) / ``Main model: X …`` (0.82)."""
    match = _MODEL.match(status)
    return match.group(1) if match else None


def provider_of(model: str) -> str | None:
    """litellm's provider prefix (``openrouter/openai/gpt-4o-mini`` -> ``openrouter``)."""
    head, sep, _ = model.partition("/")
    return head if sep and head else None


APPLIED_PREFIX = "Applied edit to "
RUNNING_PREFIX = "Running "
VERSION_PREFIX = "Aider v"


# -- the assistant's reply ---------------------------------------------------------------

_HEAD = re.compile(r"^<{5,9} SEARCH>?\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_UPDATED = re.compile(r"^>{5,9} REPLACE\s*$")
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)\s*$")
#: Fence languages aider runs as shell commands when the reply holds them.
SHELL_LANGUAGES = frozenset(
    {"bash", "sh", "shell", "zsh", "fish", "ksh", "csh", "tcsh", "cmd", "batch", "powershell", "ps1", "console"}
)


@dataclass(frozen=True)
class Edit:
    """One SEARCH/REPLACE block: ``line`` is the index of its ``<<<<<<< SEARCH`` line."""

    line: int
    path: str
    search: str
    replace: str


@dataclass(frozen=True)
class ShellCommand:
    """One command line of a shell-fenced block (``line``: its index in the reply)."""

    line: int
    command: str


def _filename(candidate: str) -> str:
    return candidate.strip().lstrip("#").strip().strip("*`:").strip()


def reply_actions(lines: Sequence[str]) -> tuple[list[Edit], list[ShellCommand]]:
    """The edit blocks and suggested shell commands of one reply, in order.

    A block's file name is the line before ``<<<<<<< SEARCH`` (or before the fence that
    opens it, the ``diff`` and ``diff-fenced`` formats); without one, the previous block's.
    Shell-fenced blocks inside an edit are file content, not commands.
    """
    edits: list[Edit] = []
    commands: list[ShellCommand] = []
    last_path = ""
    index = 0
    count = len(lines)
    while index < count:
        line = lines[index]
        if _HEAD.match(line):
            path = ""
            back = index - 1
            if back >= 0 and _FENCE.match(lines[back]):
                back -= 1
            if back >= 0 and lines[back].strip() and not _FENCE.match(lines[back]):
                path = _filename(lines[back])
            path = path or last_path
            search: list[str] = []
            replace: list[str] = []
            target = search
            end = index + 1
            closed = False
            while end < count:
                current = lines[end]
                if target is search and _DIVIDER.match(current):
                    target = replace
                elif target is replace and _UPDATED.match(current):
                    closed = True
                    break
                else:
                    target.append(current)
                end += 1
            if closed and path:
                edits.append(Edit(index, path, "\n".join(search), "\n".join(replace)))
                last_path = path
            index = end + 1
            if index < count and (closer := _FENCE.match(lines[index])) and not closer.group(2):
                index += 1  # the fence the block was written in
            continue
        fence = _FENCE.match(line)
        if fence and fence.group(2).lower() in SHELL_LANGUAGES:
            end = index + 1
            body: list[tuple[int, str]] = []
            while end < count and not lines[end].strip().startswith(fence.group(1)[0] * 3):
                body.append((end, lines[end]))
                end += 1
            if end < count:  # an unclosed fence is prose cut short, not a command
                for at, text in body:
                    command = text.strip()
                    if command and not command.startswith("#"):
                        commands.append(ShellCommand(at, command))
            index = end + 1
            continue
        if fence:  # any other fenced block: skip it whole (code is not a command)
            end = index + 1
            while end < count and not (lines[end].startswith(fence.group(1)) and not lines[end].strip("`~ ")):
                if _HEAD.match(lines[end]):
                    break  # diff-fenced: the fence holds an edit block, parse it
                end += 1
            if end < count and _HEAD.match(lines[end]):
                index += 1
                continue
            index = end + 1
            continue
        index += 1
    return edits, commands
