"""``watch`` and SIGHUP (``systemctl reload``): the rules on disk are read again and the
next scan uses them; a pack that does not load leaves the rules in use, said in one line."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest
import yaml

from adversarial.render import session_uuid, write_claude
from scan_helpers import cli_env, read_events

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on this platform")

ENV_READ = [{"user": "go"}, {"shell": "cat .env", "result": "A=1"}]


def _lines(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


def _next(lines: queue.Queue[str], what: str, timeout: float = 30.0) -> str:
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no {what} within {timeout}s") from None


def _alerted_sessions(log: Path) -> set[str]:
    return {e["gen_ai"]["conversation"]["id"] for e in read_events(log)
            if e["event"]["dataset"] == "telltale.detection" and e["rule"]["id"] == "secret.env.read"}


def test_sighup_reloads_the_rules_and_a_broken_pack_keeps_the_rules_in_use(tmp_path: Path) -> None:
    home, conf, out = tmp_path / "home", tmp_path / "conf", tmp_path / "out"
    home.mkdir()
    conf.mkdir()
    write_claude(home, "before", ENV_READ)
    log = out / "e.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "telltale", "watch", "--root", str(home), "--log-path", str(log), "--state-path",
         str(out / "s.sqlite"), "--config-dir", str(conf), "--json", "--install-inventory-disabled",
         "--debounce-ms", "50", "--min-scan-interval-ms", "100"],
        env=cli_env(home), cwd=str(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    stdout: queue.Queue[str] = queue.Queue()
    stderr: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None and proc.stderr is not None
    threading.Thread(target=_lines, args=(proc.stdout, stdout), daemon=True).start()
    threading.Thread(target=_lines, args=(proc.stderr, stderr), daemon=True).start()

    def scanned() -> dict[str, Any]:
        line: dict[str, Any] = json.loads(_next(stdout, "watch scan"))
        return line

    try:
        scanned()  # the initial scan: the rule fires
        assert _alerted_sessions(log) == {session_uuid("before")}

        (conf / "overrides.d").mkdir()
        (conf / "overrides.d" / "50-ci.yaml").write_text(yaml.safe_dump(
            {"overrides": [{"rule": "secret.env.read", "enabled": False, "reason": "CI reads .env (TICKET-1)"}]}))
        proc.send_signal(signal.SIGHUP)
        assert "telltale: watch: rules reloaded" in _next(stderr, "reload line")
        write_claude(home, "after-reload", ENV_READ)
        scanned()
        assert _alerted_sessions(log) == {session_uuid("before")}  # the rule is off now

        (conf / "overrides.d" / "60-bad.yaml").write_text("overrides: [rule: {\n")
        proc.send_signal(signal.SIGHUP)
        refused = _next(stderr, "refusal line")
        assert refused.startswith("telltale: watch: rules not reloaded, the rules in use stay:")
        where = _next(stderr, "the error's place")  # each rule error on its own line, with its file
        assert "60-bad.yaml" in where and "Traceback" not in refused + where
        write_claude(home, "after-broken", ENV_READ)
        scanned()
        assert _alerted_sessions(log) == {session_uuid("before")}  # still the reloaded rules
        assert proc.poll() is None  # a broken pack does not stop the sensor

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
