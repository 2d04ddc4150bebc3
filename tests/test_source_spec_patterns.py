"""A spec's file patterns match exactly as ``fnmatch.fnmatchcase`` would.

``SourceSpec.matches`` answers ``*suffix``, exact names and other ``*``-only patterns with
``str`` methods (compiling regexes was ~12 ms of every scan); the answer must not change.
"""

from __future__ import annotations

import fnmatch

from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.sources.registry import REGISTRY
from telltale.sources.spec import _matcher

SPEC_PATTERNS = sorted({spec.file_patterns for spec in REGISTRY}
                       | {spec.exclude_patterns for spec in REGISTRY if spec.exclude_patterns})
PIECES = ["*", "?", "[ab]", ".", "json", "jsonl", "l", "-", "T", "session", "a", "b", ".deleted", "*.*"]
NAMES = ["", ".", ".jsonl", "a.jsonl", "a.jsonl.deleted", "a.jsonl.deleted.1", "x.jsonl.reset.2", "T-1.json",
         "T-.json", "T-json", "session-9.json", "session-.json", ".aider.chat.history.md", "state.vscdb", "ab",
         "a.trajectory.jsonl.gz", "events.jsonl", "tokens_generated.jsonl", "x.settings.json", "a.jsonl.zst"]


def _expected(patterns: tuple[str, ...], name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def test_every_spec_pattern_set_matches_as_fnmatch_on_store_like_names() -> None:
    assert SPEC_PATTERNS
    for patterns in SPEC_PATTERNS:
        for name in NAMES:
            assert _matcher(patterns)(name) is _expected(patterns, name), (patterns, name)


@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("".join),
                         min_size=1, max_size=4).map(tuple),
       name=st.lists(st.sampled_from([*PIECES[1:], *NAMES]), max_size=4).map("".join))
def test_any_pattern_set_matches_as_fnmatch(patterns: tuple[str, ...], name: str) -> None:
    assert _matcher(patterns)(name) is _expected(patterns, name)


def test_overlapping_head_and_tail_and_repeated_middles() -> None:
    cases = [(("a*a",), "a"), (("a*a",), "aa"), (("ab*ba",), "aba"), (("*.json*.json",), "x.json"),
             (("*.json*.json",), "x.json.json"), (("T-*.json",), "T-.json"), (("*a*a*",), "a"), (("*a*a*",), "aba"),
             (("*",), ""), (("?",), ""), (("[ab]*",), "b.jsonl"), (("x",), "X")]
    for patterns, name in cases:
        assert _matcher(patterns)(name) is _expected(patterns, name), (patterns, name)
