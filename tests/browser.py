"""Headless Chromium (Debian's ``chromium`` + ``chromium-driver``) driven by selenium, for
the report's tests and its benchmark.

``.ci/run`` installs both when apt-get is there, so in CI these tests run; ``skip_reason``
names what is missing where they cannot (no binary, no selenium) and the tests skip with
that reason, never silently.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)
DESKTOP = (1366, 900)
PHONE = (390, 844)


def _find(names: tuple[str, ...], extra: tuple[str, ...] = ()) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    for path in extra:
        if os.path.exists(path):
            return path
    return None


def chromium_path() -> str | None:
    return os.environ.get("TELLTALE_CHROMIUM") or _find(CHROMIUM_NAMES, ("/usr/lib/chromium/chromium",))


def driver_path() -> str | None:
    return os.environ.get("TELLTALE_CHROMEDRIVER") or _find(DRIVER_NAMES, ("/usr/lib/chromium/chromedriver",))


def skip_reason() -> str | None:
    """Why the browser tests cannot run here, or ``None`` when they can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if chromium_path() is None:
        return "no chromium binary (apt-get install chromium chromium-driver; .ci/run does this)"
    if driver_path() is None:
        return "no chromedriver (apt-get install chromium-driver; .ci/run does this)"
    return None


@contextmanager
def chrome(size: tuple[int, int] = DESKTOP, *, dark: bool = False, env_tz: str = "UTC") -> Iterator[Any]:
    """A headless Chromium with console and network logging, closed afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="telltale-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium_path())
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1",
        f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
    ):  # fmt: skip
        options.add_argument(arg)
    if dark:
        options.add_argument("--force-dark-mode")
        options.add_argument("--blink-settings=preferredColorScheme=0")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    env = {**os.environ, "TZ": env_tz}
    service = Service(executable_path=str(driver_path()), env=env)
    driver = webdriver.Chrome(service=service, options=options)
    try:
        driver.set_window_size(*size)
        driver.execute_cdp_cmd("Network.enable", {})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def open_file(driver: Any, path: Path) -> None:
    """Open a report from ``file://`` and wait for its first view to be drawn."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.resolve().as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return window.__telltaleReady !== undefined"))


def console_errors(driver: Any) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]


def network_requests(driver: Any) -> list[tuple[str, str]]:
    """(URL, document URL) of every request the browser made since the last call
    (DevTools ``Network.requestWillBeSent``): the report's own and the browser's own
    pages (``chrome://``) alike; the caller picks."""
    out: list[tuple[str, str]] = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            params = message["params"]
            out.append((str(params["request"]["url"]), str(params.get("documentURL", ""))))
    return out


def resource_entries(driver: Any) -> list[str]:
    """Resource timing entries the page itself saw (a fetch, an image, a font …)."""
    names: list[str] = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    return names


def stray_values(driver: Any) -> list[str]:
    """Text nodes of the page's main view that are a missing value drawn as text
    (``null``, ``undefined``, ``NaN``, ``[object Object]``): a whole node, so a transcript
    that says ``2>/dev/null`` is not one."""
    found: list[str] = driver.execute_script(
        "const out = []; const w = document.createTreeWalker(document.getElementById('main'), NodeFilter.SHOW_TEXT);"
        "for (let n = w.nextNode(); n; n = w.nextNode()) {"
        "  const t = n.nodeValue.trim();"
        "  if (['null', 'undefined', 'NaN', '[object Object]'].includes(t) || /\\b(NaN|undefined)\\b/.test(t)"
        "      && n.parentElement.closest('.text, pre, code, .what') === null) out.push(t);"
        "} return out;"
    )
    return found
