"""The report in a real browser: Debian's headless Chromium driven by selenium, opened from
``file://``. No console error, no network request, the counts the page shows equal the
index's, a prompt holding a script stays text, the filters filter, and screenshots at
desktop and phone width (kept under ``TELLTALE_SCREENSHOTS`` when set, for docs/).

``.ci/run`` installs chromium and chromium-driver when apt-get is there and then sets
``TELLTALE_REQUIRE_BROWSER=1``: a missing browser fails these tests instead of
skipping them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import browser
from report_fixture import HOSTILE, HOSTILE_PROMPT, build, cli_json, report

_REASON = browser.skip_reason()
if _REASON and os.environ.get("TELLTALE_REQUIRE_BROWSER"):
    raise RuntimeError(f"browser tests required (TELLTALE_REQUIRE_BROWSER) but cannot run: {_REASON}")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(_REASON is not None, reason=f"browser tests: {_REASON}")]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ctx = build(tmp_path_factory.mktemp("home"))
    out = tmp_path_factory.mktemp("report") / "report.html"
    report(ctx, out)
    return {**ctx, "html": out}


@pytest.fixture(scope="module")
def desktop() -> Iterator[Any]:
    with browser.chrome(browser.DESKTOP) as driver:
        yield driver


def _shot(driver: Any, name: str, tmp: Path) -> Path:
    path = tmp / f"{name}.png"
    driver.save_screenshot(str(path))
    keep = os.environ.get("TELLTALE_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)
    assert path.stat().st_size > 10_000  # a drawn page, not a blank one
    return path


def _go(driver: Any, page: dict[str, Any], fragment: str) -> None:
    driver.get(page["html"].resolve().as_uri() + fragment)
    driver.execute_script("window.dispatchEvent(new HashChangeEvent('hashchange'))")


def _text(driver: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def test_opens_from_file_without_errors_or_requests(page: dict[str, Any], desktop: Any, tmp_path: Path) -> None:
    desktop.get_log("performance")  # drop what the browser did before
    desktop.get_log("browser")
    browser.open_file(desktop, page["html"])
    count = desktop.execute_script(
        "return JSON.parse(document.getElementById('report-data').textContent).sessions.length"
    )
    views = ["#/sessions", "#/detections", "#/detection/0", "#/overview"] + [f"#/session/{i}" for i in range(count)]
    for fragment in views:
        _go(desktop, page, fragment)
        # A value the page lacks shows as nothing, never as "null", "undefined" or "NaN".
        assert browser.stray_values(desktop) == [], fragment
    assert browser.console_errors(desktop) == []
    own = page["html"].resolve().as_uri()
    seen = browser.network_requests(desktop)
    assert any(url.split("#")[0] == own for url, _ in seen)  # the log does see the page itself
    # The page asked for nothing but itself; nothing at all left for a network, from any page.
    assert [url for url, doc in seen if doc.split("#")[0] == own and url.split("#")[0] != own] == []
    assert [url for url, _ in seen if url.split(":", 1)[0] in ("http", "https", "ws", "wss", "ftp")] == []
    assert [n for n in browser.resource_entries(desktop) if not n.startswith(own)] == []
    ready = desktop.execute_script("return window.__telltaleReady")
    assert 0 < ready < 2000  # navigation start to the overview drawn, in the page's own clock
    _shot(desktop, "report-overview-desktop", tmp_path)
    desktop.execute_script("document.getElementById('main').append(null)")  # the check itself sees one
    assert browser.stray_values(desktop) == ["null"]


def test_counts_shown_equal_the_index(page: dict[str, Any], desktop: Any) -> None:
    browser.open_file(desktop, page["html"])
    sessions = cli_json(page, "sessions", "--limit", "0")
    detections = cli_json(page, "detections", "--limit", "0")
    usage = cli_json(page, "usage", "daily")
    assert _text(desktop, "#count-sessions") == str(len(sessions))
    assert _text(desktop, "#count-detections") == str(len(detections))
    assert "5 record(s) skipped" in _text(desktop, "#health")
    assert "qwen" in _text(desktop, "#sources-line") and "partial" in _text(desktop, "#sources-line")
    assert _text(desktop, "#count-events") == f"{sum(s['events'] for s in sessions):,}"
    assert f"({usage[-1]['totals']['total']:,})" in _text(desktop, "#count-tokens + span")
    _go(desktop, page, "#/sessions")
    assert _text(desktop, "#sessions-count") == f"{len(sessions)} of {len(sessions)} sessions"
    rows = desktop.find_elements("css selector", "#sessions-table tbody tr")
    assert len(rows) == len(sessions)
    _go(desktop, page, "#/detections")
    assert len(desktop.find_elements("css selector", "#detections-table tbody tr")) == len(detections)


def test_injected_script_is_inert(page: dict[str, Any], desktop: Any, tmp_path: Path) -> None:
    browser.open_file(desktop, page["html"])
    index = desktop.execute_script(
        "return JSON.parse(document.getElementById('report-data').textContent).sessions"
        f".findIndex(s => s.id === {HOSTILE!r})"
    )
    assert index >= 0
    _go(desktop, page, f"#/session/{index}")
    shown = desktop.execute_script(
        "return [...document.querySelectorAll('#timeline .text')].map(e => e.textContent)"
    )
    assert HOSTILE_PROMPT in shown  # the prompt shows as the text it is
    assert desktop.execute_script("return window.__pwned") is None
    assert "pwned" not in desktop.title
    assert desktop.execute_script("return document.querySelectorAll('img, iframe').length") == 0
    assert desktop.execute_script("return document.scripts.length") == 3
    # The result holding </script><script> is collapsed, and text when opened.
    desktop.execute_script("document.querySelectorAll('#timeline details').forEach(d => d.open = true)")
    pres = desktop.execute_script("return [...document.querySelectorAll('#timeline pre')].map(e => e.textContent)")
    assert "</script><script>window.__pwned=3</script>" in pres
    assert desktop.execute_script("return window.__pwned") is None
    assert browser.console_errors(desktop) == []
    _shot(desktop, "report-timeline-hostile", tmp_path)


def test_filters_work(page: dict[str, Any], desktop: Any) -> None:
    from selenium.webdriver.support.ui import Select

    browser.open_file(desktop, page["html"])
    _go(desktop, page, "#/sessions")
    codex = cli_json(page, "sessions", "--limit", "0", "--client", "codex")
    Select(desktop.find_element("css selector", "#sessions-client")).select_by_value("codex")
    rows = desktop.find_elements("css selector", "#sessions-table tbody tr")
    assert len(rows) == len(codex) == 1
    Select(desktop.find_element("css selector", "#sessions-client")).select_by_value("")
    high = cli_json(page, "sessions", "--limit", "0", "--severity", "high")
    Select(desktop.find_element("css selector", "#sessions-sev")).select_by_value("high")
    assert len(desktop.find_elements("css selector", "#sessions-table tbody tr")) == len(high)
    Select(desktop.find_element("css selector", "#sessions-sev")).select_by_value("")
    box = desktop.find_element("css selector", "#sessions-q")
    box.send_keys("/work/web")
    ids = desktop.execute_script(
        "return [...document.querySelectorAll('#sessions-table tbody td.id')].map(e => e.title)"
    )
    assert ids == [HOSTILE]
    box.clear()
    box.send_keys(" ")  # clear() fires no input event: type, then erase
    box.send_keys("\b")
    # Sorting from the keyboard: detections, most first.
    from selenium.webdriver.common.keys import Keys

    desktop.find_element("css selector", "#sessions-table th[data-key=detections]").send_keys(Keys.ENTER)
    top = desktop.execute_script(
        "return document.querySelector('#sessions-table tbody tr td:nth-child(8)').textContent"
    )
    assert int(top) == max(s["detections"] for s in cli_json(page, "sessions", "--limit", "0"))
    # Sorting by tokens, descending then ascending.
    desktop.find_element("css selector", "#sessions-table th[data-key=tokens]").click()
    first = desktop.execute_script("return document.querySelector('#sessions-table tbody tr').dataset.i")
    desktop.find_element("css selector", "#sessions-table th[data-key=tokens]").click()
    last = desktop.execute_script("return document.querySelector('#sessions-table tbody tr').dataset.i")
    assert first != last
    # Detections: by severity and category, and the overview's links land filtered.
    _go(desktop, page, "#/detections?category=execution")
    execution = [d for d in cli_json(page, "detections", "--limit", "0") if d["category"] == "execution"]
    assert len(desktop.find_elements("css selector", "#detections-table tbody tr")) == len(execution) > 0


def test_detection_view_links_back_to_the_timeline(page: dict[str, Any], desktop: Any) -> None:
    browser.open_file(desktop, page["html"])
    _go(desktop, page, "#/detections")
    desktop.find_element("css selector", "#detections-table tbody tr a").click()
    text = _text(desktop, "main").lower()
    for label in ("evidence", "where", "recommendation", "att&ck", "atlas"):
        assert label in text
    hrefs = desktop.execute_script("return [...document.querySelectorAll('main a')].map(a => a.href)")
    assert any(h.startswith("https://attack.mitre.org/techniques/") for h in hrefs)
    link = next(h for h in hrefs if "#/session/" in h and "?e=" in h)
    desktop.get(link)
    desktop.execute_script("window.dispatchEvent(new HashChangeEvent('hashchange'))")
    assert desktop.execute_script("return document.querySelectorAll('#timeline li.det.hit').length") == 1


def test_prints(page: dict[str, Any], desktop: Any, tmp_path: Path) -> None:
    import base64

    browser.open_file(desktop, page["html"])
    _go(desktop, page, "#/detection/0")
    desktop.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        assert desktop.execute_script("return getComputedStyle(document.getElementById('nav')).display") == "none"
    finally:
        desktop.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    pdf = base64.b64decode(desktop.print_page())
    assert pdf.startswith(b"%PDF") and len(pdf) > 5_000
    (tmp_path / "detection.pdf").write_bytes(pdf)


def test_phone_width_and_dark_mode(page: dict[str, Any], tmp_path: Path) -> None:
    with browser.chrome(browser.PHONE, dark=True) as phone:
        browser.open_file(phone, page["html"])
        assert browser.console_errors(phone) == []
        # Nothing wider than the screen but the tables' own scroll boxes.
        overflow = phone.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1
        dark = phone.execute_script("return matchMedia('(prefers-color-scheme: dark)').matches")
        background = phone.execute_script("return getComputedStyle(document.body).backgroundColor")
        if dark:
            assert background != "rgb(246, 247, 249)"
        _shot(phone, "report-overview-phone", tmp_path)
        index = phone.execute_script(
            "return JSON.parse(document.getElementById('report-data').textContent).sessions"
            f".findIndex(s => s.id === {page['parent']!r})"
        )
        _go(phone, page, f"#/session/{index}")
        assert phone.execute_script("return document.documentElement.scrollWidth - window.innerWidth") <= 1
        assert phone.execute_script("return document.querySelectorAll('#timeline details.sub').length") == 1
        _shot(phone, "report-timeline-phone", tmp_path)
