"""Issue 26's "done when": a fresh machine, `telltale service install --user --mode watch`, then a transcript
append reaches the local log and an OTLP receiver configured only through /etc-style and user config files;
the receiver gets detections and health, and no activity.

CI has no systemd user manager (DECISIONS): the unit is installed into a temporary XDG_CONFIG_HOME,
checked with `systemd-analyze verify`, and its ExecStart line is run directly.
"""

from __future__ import annotations

import json
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import cli_env, read_events, run_cli, write_claude_session
from sink_receivers import OtlpStore, attrs, otlp_http_receiver
from test_outputs_honoured import write_risky_session


def _exec_start(unit: Path) -> list[str]:
    lines = [line for line in unit.read_text().splitlines() if line.startswith("ExecStart=")]
    assert len(lines) == 1
    return shlex.split(lines[0].removeprefix("ExecStart=").replace("%%", "%"))


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_user_service_watch_sends_detections_and_health_but_no_activity_to_otlp(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.proto")
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 1)  # an ordinary session before the service starts
    etc, xdg = tmp_path / "etc" / "telltale", tmp_path / "xdg"
    store = OtlpStore()
    receiver = otlp_http_receiver(store).start()
    try:
        # configuration only through files: the system root names the output, the user root tunes the watch
        (etc / "outputs.d").mkdir(parents=True)
        (etc / "outputs.d" / "50-collector.yaml").write_text(
            f"outputs:\n  collector:\n    type: otlp\n    endpoint: {receiver.url}\n    include: [detection, health]\n"
            "    timeout: 5\n")
        (etc / "config.yaml").write_text("install_inventory_disabled: true\ndelivery_seconds: 10\n")
        (xdg / "telltale").mkdir(parents=True)
        (xdg / "telltale" / "config.yaml").write_text("debounce_ms: 100\nmin_scan_interval_ms: 200\n")
        env = {"TELLTALE_SYSTEM_CONFIG_DIR": str(etc), "XDG_CONFIG_HOME": str(xdg)}

        run_cli(["service", "install", "--user", "--mode", "watch", "--no-enable", "--init", "systemd"], home,
                extra_env=env)
        unit = xdg / "systemd" / "user" / "telltale.service"
        verify = subprocess.run([shutil.which("systemd-analyze") or "systemd-analyze", "verify", str(unit)],
                                capture_output=True, text=True, timeout=60, check=False)
        assert verify.returncode == 0 and verify.stderr == "", verify.stderr
        argv = _exec_start(unit)
        assert argv == [sys.executable, "-m", "telltale", "watch", "--profile", "user"]
        validate = json.loads(run_cli(["config", "validate", "--json"], home, extra_env=env).stdout)
        assert validate["outputs"]["collector"]["takes"] == {"include": ["detection", "health"]}
        assert validate["settings"]["debounce_ms"]["origin"].startswith("user ")

        proc = subprocess.Popen(argv, env=cli_env(home, env), cwd=str(home), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or ()], daemon=True).start()
        try:
            first = json.loads(lines.get(timeout=60))
            assert first["sources_scanned"] == 1 and first["detection_count"] == 0
            write_risky_session(home)  # the transcript grows: two more turns and a `curl … | bash`
            _wait(lambda: any(attrs(r).get("event.dataset") == "telltale.detection" for _, r in store.records),
                  60, "a detection at the receiver")
        finally:
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr  # watch stops cleanly on SIGTERM (what systemctl stop sends)
    finally:
        receiver.stop()

    log = home / ".state-out" / "telltale" / "telltale-events.jsonl"  # the user profile's default place
    events = read_events(log)
    in_log = Counter(e["event"]["dataset"] for e in events)
    assert in_log["telltale.activity"] > 0 and in_log["telltale.detection"] > 0
    assert any("curl" in json.dumps(e) for e in events if e["event"]["dataset"] == "telltale.activity")
    received = Counter(attrs(r)["event.dataset"] for _, r in store.records)
    assert received["telltale.detection"] == in_log["telltale.detection"]
    assert received["telltale.health"] > 0
    assert set(received) == {"telltale.detection", "telltale.health"}  # no activity, no inventory
    ids = store.event_ids()
    assert len(ids) == len(set(ids))
    # status: installed (files), and the last scan from the read side of the profile's state
    path = f"{tmp_path / 'nobin'}"
    status = json.loads(run_cli(["service", "status", "--json", "--init", "systemd"], home,
                                extra_env={**env, "PATH": path}).stdout)
    assert status["installed"] and status["mode"] == "watch"
    assert status["enabled"] == "unknown (systemctl not found)"
    assert status["last_scan"] is not None and status["last_scan"]["detections"] >= 1
