"""``telltale delivery status|run|retry-blocked`` against a loopback HEC collector."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from sink_receivers import event_id_of, make_event
from telltale.cli.main import main
from telltale.sinks.outbox import enqueue, ensure_schema


@pytest.fixture
def setup(
    tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, dict[str, str]]:
    db = tmp_path / "state.sqlite"
    conn = sqlite3.connect(db)
    with conn:
        ensure_schema(conn)
        events = [make_event(i) for i in range(5)]
        enqueue(conn, ["splunk"], [(event_id_of(e), e) for e in events])
    conn.close()
    outputs = tmp_path / "outputs.yaml"
    outputs.write_text(
        f"outputs:\n  splunk:\n    type: splunk_hec\n    url: {httpserver.url_for('/')}\n    token_env: TT_TOKEN\n"
    )
    monkeypatch.setenv("TT_TOKEN", "FAKE-good")
    auth = {"token": "FAKE-good"}

    def collector(request: Request) -> Response:
        if request.headers.get("Authorization") != f"Splunk {auth['token']}":
            return Response('{"text":"Invalid token","code":4}', status=403)
        return Response('{"text":"Success","code":0}')

    httpserver.expect_request("/services/collector/event").respond_with_handler(collector)
    return db, outputs, auth


Setup = tuple[Path, Path, dict[str, str]]


def test_delivery_run_then_status(setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    db, outputs, _ = setup
    assert main(["delivery", "status", "--state-path", str(db), "--outputs", str(outputs), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["sink"] == "splunk" and rows[0]["pending"] == 5
    assert main(["delivery", "run", "--state-path", str(db), "--outputs", str(outputs)]) == 0
    out = capsys.readouterr().out
    assert "splunk: 5 delivered" in out and "queued: 0" in out
    assert main(["delivery", "status", "--state-path", str(db), "--outputs", str(outputs)]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[:3] == ["output", "pending", "retrying"]
    assert table.splitlines()[1].split()[:6] == ["splunk", "0", "0", "0", "0", "5"]


def test_blocked_then_retry_blocked(setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    db, outputs, auth = setup
    auth["token"] = "FAKE-rotated"
    assert main(["delivery", "run", "--state-path", str(db), "--outputs", str(outputs), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["sinks"]["splunk"]["blocked_reason"] == "hec:invalid_token"
    assert report["sinks"]["splunk"]["failed"] is True
    assert main(["delivery", "status", "--state-path", str(db), "--outputs", str(outputs)]) == 0
    assert "BLOCKED (hec:invalid_token)" in capsys.readouterr().out
    auth["token"] = "FAKE-good"
    assert main(["delivery", "run", "--state-path", str(db), "--outputs", str(outputs)]) == 1  # still blocked
    capsys.readouterr()
    assert main(["delivery", "retry-blocked", "--sink", "splunk", "--state-path", str(db)]) == 0
    assert "splunk: 5 item(s) released" in capsys.readouterr().out
    assert main(["delivery", "run", "--state-path", str(db), "--outputs", str(outputs)]) == 0
    assert "splunk: 5 delivered" in capsys.readouterr().out


def test_missing_state_database_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.sqlite"
    assert main(["delivery", "status", "--state-path", str(missing), "--outputs", str(tmp_path / "o.yaml")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "no state database" in err
    assert main(["delivery", "retry-blocked", "--sink", "x", "--state-path", str(missing)]) == 2
    assert "no state database" in capsys.readouterr().err
    assert not missing.exists()
