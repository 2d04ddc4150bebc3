"""Codex facets: the fast header scan gives what the plain line-by-line scan gives.

``exit_code_from_text`` searches the lines before ``Output:`` with one multi-line regex
when that line is among the first eight; ``patch_paths`` tries its header pattern only at
lines that open with ``*** ``; ``is_string_list`` checks in C. Each is compared with its
plain definition on generated headers (the exit code comes from the header
only, never from the command's own output).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.sources.codex.facets import exit_code_from_text, is_string_list, patch_paths

_EXIT_LINE = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)\s*$")
_PATCH_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


def _oracle_exit_code(text: str) -> int | None:
    if not text.startswith(("Chunk ID: ", "Exit code: ", "Wall time: ")):
        return None
    for line in text[:1024].split("\n")[:8]:
        if line.startswith("Output:"):
            break
        match = _EXIT_LINE.match(line)
        if match:
            return int(match.group(1))
    return None


_LINES = st.sampled_from(
    [
        "Chunk ID: ab12cd",
        "Wall time: 0.0500 seconds",
        "Exit code: 3",
        "Exit code: -12  ",
        "Exit code:  4",
        "Exit code: 5\r",
        "Exit code: 9\x0b",
        "Exit code: 8\u2028",
        "Process exited with code 0",
        "Process exited with code 7 and more",
        "Original token count: 120",
        "Output:",
        "Output: inline",
        "Output",
        "exit code: 1",
        "",
        "   ",
        "\t",
        "x" * 400,
    ]
)
_HEADERS = st.builds(
    lambda first, rest, tail: "\n".join([first, *rest]) + tail,
    st.sampled_from(["Chunk ID: ab12cd", "Wall time: 0.01 seconds", "Exit code: 2", "Process exited with code 1"]),
    st.lists(_LINES, max_size=14),
    st.sampled_from(["", "\n", "\nOutput:\nExit code: 1\n", "\nOutput:\nProcess exited with code 4"]),
)


@settings(max_examples=500)
@given(_HEADERS)
def test_exit_code_header_scan_matches_line_by_line(text: str) -> None:
    assert exit_code_from_text(text) == _oracle_exit_code(text)


@given(st.text(max_size=200))
def test_exit_code_of_any_text(text: str) -> None:
    assert exit_code_from_text(text) == _oracle_exit_code(text)
    assert exit_code_from_text("Exit code: 0\n" + text) == _oracle_exit_code("Exit code: 0\n" + text)


def test_exit_code_examples() -> None:
    assert exit_code_from_text("Chunk ID: a\nWall time: 1\nProcess exited with code 3\nOutput:\nExit code: 9") == 3
    assert exit_code_from_text("Exit code: 2\nWall time: 1\nOutput:\nok") == 2
    # Only the header counts: an exit line after "Output:" is the command's own output.
    assert exit_code_from_text("Chunk ID: a\nWall time: 1\nOutput:\nExit code: 9") is None
    # The "Output:" line past the eighth line: the first eight lines are scanned.
    late = "Chunk ID: a\n" + "w\n" * 8 + "Exit code: 5\nOutput:\n"
    assert exit_code_from_text(late) is None
    assert exit_code_from_text("Chunk ID: a\n" + "w\n" * 5 + "Exit code: 6\n" + "w\n" * 3 + "Output:\n") == 6
    assert exit_code_from_text("plain output\nExit code: 1") is None


@given(st.one_of(st.none(), st.integers(), st.lists(st.one_of(st.text(max_size=3), st.integers(), st.none()))))
def test_is_string_list(value: object) -> None:
    expected = isinstance(value, list) and all(isinstance(v, str) for v in value)
    assert is_string_list(value) is expected


def _oracle_patch_paths(patch: str) -> list[str]:
    seen: dict[str, None] = {}
    for match in _PATCH_HEADER.finditer(patch):
        seen.setdefault(match.group(1), None)
    return list(seen)


_PATCH_LINES = st.sampled_from(
    [
        "*** Begin Patch",
        "*** Update File: a.py",
        "*** Add File: b/c.txt  ",
        "*** Delete File: d",
        "*** Move to: e",
        "*** Update File:  f",
        "*** Update File: ",
        "***Update File: g",
        " *** Add File: h",
        "*** Add File: a.py",
        "*** Update File: i\r",
        "*** Add File: k\u2028z",
        "*** ",
        "@@",
        "-old",
        "+new",
        "",
        "  ",
        "*** End Patch",
    ]
)


@settings(max_examples=500)
@given(st.lists(_PATCH_LINES, max_size=12), st.sampled_from(["", "\n"]), st.sampled_from(["", "\n", "\n\n"]))
def test_patch_paths_match_a_full_scan(lines: list[str], head: str, tail: str) -> None:
    patch = head + "\n".join(lines) + tail
    assert patch_paths(patch) == _oracle_patch_paths(patch)


def test_patch_paths_examples() -> None:
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: b.txt  \n+z\n*** End Patch\n"
    assert patch_paths(patch) == ["src/a.py", "b.txt"]
    assert patch_paths("*** Add File: only") == ["only"]
    assert patch_paths("text *** Add File: not a header") == []
