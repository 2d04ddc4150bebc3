"""Required-literal extraction: the prefilter must never hide a real regex match."""

from __future__ import annotations

import pytest
import re2
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from telltale.detect.literals import MIN_BYTES, required_factors, required_literals


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("abc", {"abc"}),
        ("ab(c|d)e", {"abce", "abde"}),
        ("a.*bcd", {"bcd"}),
        ("(foo|bar)baz", {"foobaz", "barbaz"}),
        (r"\bcurl\b", {"curl"}),
        (r"\d+abc", {"abc"}),
        ("a{2}bcd", {"abcd"}),
        (r"\Qa.b\E", {"a.b"}),
        ("(?i)hello", {"hello"}),
        (r"\.env(rc)?\b", {".env"}),
        ("gh[po]_x", {"ghp_x", "gho_x"}),
        (r"(secret|token)\s*=", {"secret", "token"}),
        (r"\x{202E}", {"\u202e"}),
    ],
)
def test_known_patterns(pattern: str, expected: set[str]) -> None:
    assert required_literals(pattern) == frozenset(expected)


@pytest.mark.parametrize("pattern", ["x?", "(a|bcd)", ".*", r"\w+", "[a-z]{3}", "(?=abc)", "ab", "a|bcdef", "(abc)?d"])
def test_patterns_without_a_usable_literal(pattern: str) -> None:
    assert required_literals(pattern) is None


def test_wide_non_ascii_class_is_kept() -> None:
    found = required_literals(r"[\x{E0001}-\x{E007F}]{4,}")
    assert found is not None and len(found) == 127


ATOMS = ["a", "b", "c", "ab", "abc", r"\.", ".", "[ab]", "[a-c]", r"\d", "^", "$", r"\b", "1"]


@st.composite
def regexes(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 2 and draw(st.integers(0, 4)) == 0:
            inner = "|".join(draw(regexes(depth + 1)) for _ in range(draw(st.integers(1, 3))))
            atom = draw(st.sampled_from(["({})", "(?:{})", "(?i:{})"])).format(inner)
        else:
            atom = draw(st.sampled_from(ATOMS))
        if atom not in ("^", "$", r"\b"):
            atom += draw(st.sampled_from(["", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,2}"]))
        parts.append(atom)
    return "".join(parts)


@settings(max_examples=500, deadline=None)
@given(pattern=regexes(), text=st.text(alphabet="abcABC.1 x", max_size=24))
def test_a_match_always_contains_a_required_literal(pattern: str, text: str) -> None:
    try:
        rx = re2.compile(pattern, re2.Options())
    except re2.error:
        assume(False)
        return
    options = re2.Options()
    options.case_sensitive = False
    rx = re2.compile(pattern, options)
    literals = required_literals(pattern)
    if literals is None:
        return
    assert all(len(lit.encode()) >= MIN_BYTES for lit in literals)
    if rx.search(text) is not None:
        assert any(lit.lower() in text.lower() for lit in literals), (pattern, text, literals)


# (regex, a string it matches) built together, so every example exercises a real match.
SAMPLED_ATOMS: list[tuple[str, list[str]]] = [
    ("a", ["a", "A"]),
    ("bc", ["bc", "BC", "bC"]),
    ("abc", ["abc", "ABC"]),
    (r"\.", ["."]),
    (".", ["a", "x", "1", " "]),
    ("[ab]", ["a", "b", "B"]),
    ("[a-c]", ["a", "c"]),
    (r"\d", ["1", "7"]),
    (r"\s", [" "]),
]


@st.composite
def sampled(draw: st.DrawFn, depth: int = 0) -> tuple[str, str]:
    regex, sample = [], []
    for _ in range(draw(st.integers(1, 5))):
        if depth < 2 and draw(st.integers(0, 4)) == 0:
            branches = [draw(sampled(depth + 1)) for _ in range(draw(st.integers(1, 3)))]
            chosen = draw(st.sampled_from(branches))[1]
            wrap = draw(st.sampled_from(["({})", "(?:{})"]))
            atom, text = wrap.format("|".join(b[0] for b in branches)), chosen
            reps_text = [text]
        else:
            atom, options = draw(st.sampled_from(SAMPLED_ATOMS))
            reps_text = [draw(st.sampled_from(options)) for _ in range(3)]
        quant, lo, hi = draw(st.sampled_from([("", 1, 1)] * 3 + [("*", 0, 3), ("+", 1, 3), ("?", 0, 1), ("{2}", 2, 2)]))
        count = draw(st.integers(lo, hi))
        if quant and atom in ("bc", "abc"):
            atom = f"(?:{atom})"
        regex.append(atom + quant)
        sample.append("".join(reps_text[i % len(reps_text)] for i in range(count)))
    return "".join(regex), "".join(sample)


@settings(max_examples=500, deadline=None)
@given(case=sampled(), prefix=st.text(alphabet="abcx. 1", max_size=6), suffix=st.text(alphabet="abcx. 1", max_size=6))
def test_sampled_matches_contain_a_required_literal(case: tuple[str, str], prefix: str, suffix: str) -> None:
    pattern, sample = case
    options = re2.Options()
    options.case_sensitive = False
    text = prefix + sample + suffix
    assert re2.compile(pattern, options).search(text) is not None, (pattern, text)
    literals = required_literals(pattern)
    if literals is not None:
        assert any(lit.lower() in text.lower() for lit in literals), (pattern, text, literals)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_input_never_raises(pattern: str) -> None:
    result = required_literals(pattern)
    assert result is None or all(result)


# ---------------------------------------------------------------- conjunctive factors


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("abc", [{"abc"}]),
        (r"(?i)ignore\s+previous\s+instructions", [{"instructions"}, {"previous"}, {"ignore"}]),
        (
            r"\b(drop\s+(database|schema|table)|truncate\s+table)\b",
            [{"database", "schema", "table", "truncate"}, {"drop", "table"}],
        ),
        (r"curl\s+.*\|\s*(ba)?sh", [{"curl"}]),
        (r"x?", []),
    ],
)
def test_known_factors(pattern: str, expected: list[set[str]]) -> None:
    assert [set(f) for f in required_factors(pattern)] == expected


def test_the_first_factor_is_the_required_literal_set() -> None:
    for pattern in (r"\.env(rc)?\b", r"(secret|token)\s*=", "a.*bcd", r"\bcurl\b.*\bsh\b"):
        factors = required_factors(pattern)
        assert factors and factors[0] == required_literals(pattern)
        assert all(min(len(s.encode()) for s in f) >= MIN_BYTES for f in factors)


@settings(max_examples=500, deadline=None)
@given(case=sampled(), prefix=st.text(alphabet="abcx. 1", max_size=6), suffix=st.text(alphabet="abcx. 1", max_size=6))
def test_sampled_matches_contain_a_member_of_every_factor(case: tuple[str, str], prefix: str, suffix: str) -> None:
    pattern, sample = case
    options = re2.Options()
    options.case_sensitive = False
    text = prefix + sample + suffix
    assert re2.compile(pattern, options).search(text) is not None, (pattern, text)
    for factor in required_factors(pattern):
        assert any(lit.lower() in text.lower() for lit in factor), (pattern, text, factor)


@settings(max_examples=500, deadline=None)
@given(pattern=regexes(), text=st.text(alphabet="abcABC.1 x", max_size=24))
def test_a_match_always_contains_every_factor(pattern: str, text: str) -> None:
    options = re2.Options()
    options.case_sensitive = False
    try:
        rx = re2.compile(pattern, options)
    except re2.error:
        assume(False)
        return
    if rx.search(text) is not None:
        for factor in required_factors(pattern):
            assert any(lit.lower() in text.lower() for lit in factor), (pattern, text, factor)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_factors_of_arbitrary_input_never_raise(pattern: str) -> None:
    assert all(f and all(f) for f in required_factors(pattern))
