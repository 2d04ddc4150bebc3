"""The adversarial corpus (tests/adversarial): recall per attack class, quiet hard-benign work.

Every session is written as a real transcript of its agent (Claude Code, Codex, Qwen
Code, Copilot CLI) and scanned through discovery, the adapters, the normalisation stage
and the default pack, as ``telltale scan`` does (``bench/bench_adversarial.py`` prints
the same figures, and with ``--all-formats`` writes every session in all four formats).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from bench_adversarial import RANK, run, severity_of

from adversarial.render import FORMATS, load_sessions

#: Goals of issue 20 (DECISIONS "Detection"): recall per class, benign alert rates.
RECALL_GOAL = 0.95
BENIGN_HIGH_GOAL = 0.01
BENIGN_ANY_GOAL = 0.10


@pytest.fixture(scope="module")
def results() -> tuple[list, list]:  # type: ignore[type-arg]
    return run(all_formats=False)


def test_the_corpus_is_large_and_varied_enough() -> None:
    attacks, benign = load_sessions()
    classes = Counter(a["class"] for a in attacks)
    assert len(attacks) >= 60 and len(benign) >= 60
    assert len(classes) == 8 and min(classes.values()) >= 8, classes
    assert {s["format"] for s in attacks + benign} == set(FORMATS)
    assert len({s["id"] for s in attacks + benign}) == len(attacks) + len(benign)


def test_recall_per_class_meets_the_goal(results: tuple[list, list]) -> None:
    attacks, _benign = results
    per_class: dict[str, list[int]] = {}
    missed = []
    for session, fmt, docs in attacks:
        hit = any(RANK[severity_of(d)] >= RANK["medium"] for d in docs)
        cell = per_class.setdefault(session["class"], [0, 0])
        cell[0] += 1
        cell[1] += hit
        if not hit:
            missed.append(f"{session['id']}@{fmt}")
    low = {name: f"{hit}/{n}" for name, (n, hit) in per_class.items() if hit < RECALL_GOAL * n}
    assert not low, (low, missed)


def test_hard_benign_sessions_stay_quiet(results: tuple[list, list]) -> None:
    _attacks, benign = results
    high = [s["id"] for s, _f, docs in benign if any(RANK[severity_of(d)] >= RANK["high"] for d in docs)]
    alerted = [s["id"] for s, _f, docs in benign if docs]
    assert len(high) <= BENIGN_HIGH_GOAL * len(benign), high
    assert len(alerted) <= BENIGN_ANY_GOAL * len(benign), alerted
