"""Patterns compiled on first use (telltale.lazyre): the same answers as ``re``, compiled once."""

from __future__ import annotations

import copy
import re

from hypothesis import given
from hypothesis import strategies as st

from telltale import lazyre

_PATTERNS = [(r"(?i)\[char\]\s*(0x[0-9a-f]+|\d{1,5})", 0), (r"'([^']*)'|\"([^\"]*)\"", 0), (r"a.b", re.S)]


def test_nothing_is_compiled_until_first_use() -> None:
    pattern = lazyre.compile(r"x(y)")
    assert "search" not in vars(pattern)  # not compiled yet
    assert pattern.search("axy") is not None
    assert "search" in vars(pattern) and "sub" in vars(pattern)  # compiled once, methods bound
    assert pattern.pattern == r"x(y)" and pattern.groups == 1


def test_copy_and_repr_do_not_recurse() -> None:
    pattern = lazyre.compile(r"\d+", re.I)
    assert "lazyre.compile" in repr(pattern)
    assert copy.copy(pattern).findall("a1b22") == ["1", "22"]


@given(st.text(alphabet="ab'\"[]char 0x1\n", max_size=40))
def test_same_answers_as_re(text: str) -> None:
    for source, flags in _PATTERNS:
        lazy, real = lazyre.compile(source, flags), re.compile(source, flags)
        assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
        assert lazy.sub("-", text) == real.sub("-", text)
        assert lazy.split(text) == real.split(text)
        assert (lazy.fullmatch(text) is None) == (real.fullmatch(text) is None)
