"""``telltale report`` over the real corpus (every agent with samples, real formats and
real text): the page's counts equal the index's, every session's timeline holds each of
its messages and tool calls once, and in headless Chromium every view and every
session's timeline draws with no console error, no request and no "null" left.

Runs only when ``TELLTALE_CORPUS`` names the corpus folder (copied into a temporary home,
never into the repository).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import browser
from conftest import corpus_dir
from report_fixture import cli_json, embedded
from scan_helpers import run_cli
from test_corpus_scan import _build_home

CORPUS = corpus_dir()
pytestmark = [pytest.mark.corpus, pytest.mark.skipif(CORPUS is None, reason="TELLTALE_CORPUS is not set")]


@pytest.fixture(scope="module")
def corpus_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    assert CORPUS is not None
    home = tmp_path_factory.mktemp("corpus-home")
    _build_home(CORPUS, home)
    out = home / ".state-out"
    paths = ["--state-path", str(out / "state.sqlite")]
    run_cli(["scan", "--once", "--root", str(home), "--log-path", str(out / "events.jsonl"), *paths,
             "--content", "full", "--json"], home, timeout=600)  # fmt: skip
    page = out / "report.html"
    run_cli(["report", "-o", str(page), *paths], home, extra_env={"TZ": "UTC"}, timeout=300)
    return {"home": home, "paths": paths, "page": page, "data": embedded(page.read_text(encoding="utf-8"))}


def test_corpus_report_counts_equal_the_index(corpus_report: dict[str, Any]) -> None:
    data = corpus_report["data"]
    sessions = cli_json(corpus_report, "sessions", "--limit", "0")
    detections = cli_json(corpus_report, "detections", "--limit", "0")
    counts = data["overview"]["counts"]
    assert counts["sessions"] == len(sessions) > 10
    assert len({s["client"] for s in sessions}) >= 4  # several agents' real formats
    assert counts["detections"] == len(detections)
    assert counts["tokens"] == cli_json(corpus_report, "usage", "daily")[-1]["totals"]["total"]
    by_id = {(s["client"], s["session_id"]): s for s in sessions}
    for entry in data["sessions"]:
        if not entry["m"] or entry["tl"] is None:
            continue
        index = by_id[(entry["client"], entry["id"])]
        rows = entry["tl"]
        assert sum(1 for r in rows if r[0] == "m") == index["messages"], entry["id"]
        assert sum(1 for r in rows if r[0] == "c") == index["tool_calls"], entry["id"]
        assert [r[1] for r in rows] == sorted(r[1] for r in rows), entry["id"]


@pytest.mark.slow
@pytest.mark.skipif(browser.skip_reason() is not None, reason=f"browser tests: {browser.skip_reason()}")
def test_corpus_report_draws_every_view(corpus_report: dict[str, Any]) -> None:
    page: Path = corpus_report["page"]
    own = page.resolve().as_uri()
    views = ["#/overview", "#/sessions", "#/detections"]
    views += [f"#/detection/{k}" for k in range(len(corpus_report["data"]["detections"]))]
    views += [f"#/session/{i}" for i in range(len(corpus_report["data"]["sessions"]))]
    with browser.chrome(browser.DESKTOP) as driver:
        browser.open_file(driver, page)
        for fragment in views:
            driver.get(own + fragment)
            driver.execute_script("window.dispatchEvent(new HashChangeEvent('hashchange'))")
            assert browser.stray_values(driver) == [], fragment
        assert browser.console_errors(driver) == []
        seen = browser.network_requests(driver)
        assert [u for u, doc in seen if doc.split("#")[0] == own and u.split("#")[0] != own] == []
        assert driver.execute_script("return window.__pwned") is None
