"""DECISIONS #22 (issue 26): in the system profile discovery runs once per local account's home
from the account database, skipping system accounts, accounts without a login shell and
missing homes, and every event about a store carries that account's ``user.name``; the
users' own store variables (``CLAUDE_CONFIG_DIR``...) are invisible to the service.

The account database is replaced by an /etc-like directory (``TELLTALE_ACCOUNTS_ETC``: its
``passwd`` and ``login.defs``), the test seam :mod:`telltale.discovery.accounts` documents.
"""

from __future__ import annotations

import getpass
import json
import ntpath
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from scan_helpers import cli_env, read_events, run_cli, write_claude_session
from telltale.discovery import DiscoveryOptions, discover
from telltale.discovery.accounts import (
    ACCOUNTS_ETC_ENV,
    Account,
    parse_passwd,
    parse_uid_min,
    select_homes,
    windows_accounts,
)
from telltale.discovery.roots import EnvView, Flavour, Platform
from telltale.discovery.walk import Probe
from telltale.events.envelope import path_hash
from telltale.sinks.content import downgrade
from test_outputs_honoured import write_risky_session


def _host() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def _fake_host(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """An /etc with six accounts and their homes: root, alice and bob are scanned; daemon (a
    system uid), svc (``/usr/sbin/nologin``) and carol (no home) are not, although daemon's and
    svc's homes hold transcripts."""
    homes = {name: tmp_path / "home" / name for name in ("root", "alice", "bob", "daemon", "svc", "carol")}
    write_risky_session(homes["alice"])  # ordinary turns and one curl | bash
    write_claude_session(homes["bob"], "-work-p", "sess-1", 2)  # the same relative path as alice's
    write_claude_session(homes["root"], "-srv", "sess-root", 1)
    write_claude_session(homes["daemon"], "-x", "sess-daemon", 1)
    write_claude_session(homes["svc"], "-x", "sess-svc", 1)
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "login.defs").write_text("# comment\nUID_MIN\t\t\t 1000\nUID_MAX\t\t\t60000\n")
    (etc / "passwd").write_text("\n".join([
        f"root:x:0:0:root:{homes['root']}:/bin/bash",
        f"daemon:x:1:1:daemon:{homes['daemon']}:/bin/sh",
        f"alice:x:1001:1001:Alice:{homes['alice']}:/bin/bash",
        f"bob:x:1002:1002:Bob:{homes['bob']}:/usr/bin/zsh",
        f"carol:x:1003:1003:Carol:{homes['carol']}:/bin/bash",
        f"svc:x:1004:1004::{homes['svc']}:/usr/sbin/nologin",
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
        "+@netgroup::::::",
        "",
    ]))
    return etc, homes


def test_parse_passwd_and_login_defs() -> None:
    text = "root:x:0:0:root:/root:/bin/bash\n# c\nbad line\n+nis::::::\nu:x:notanumber:1::/h:/bin/sh\n"
    accounts = parse_passwd(text)
    assert accounts == [Account(name="root", uid=0, home="/root", shell="/bin/bash")]
    assert parse_uid_min("UID_MIN 500\n", Platform.LINUX) == 500
    assert parse_uid_min("# UID_MIN 10\n", Platform.LINUX) == 1000
    assert parse_uid_min("", Platform.DARWIN) == 500


def test_select_homes_skips_system_accounts_nologin_missing_and_duplicate_homes(tmp_path: Path) -> None:
    for name in ("root", "a", "b", "sys", "nl"):
        (tmp_path / name).mkdir()
    accounts = [
        Account("b", 1002, str(tmp_path / "b"), "/bin/bash"),
        Account("a", 1001, str(tmp_path / "a"), "/bin/bash"),
        Account("a-alias", 1005, str(tmp_path / "a") + "/", "/bin/bash"),  # the same directory
        Account("root", 0, str(tmp_path / "root"), "/bin/bash"),
        Account("sys", 999, str(tmp_path / "sys"), "/bin/bash"),
        Account("nl", 1003, str(tmp_path / "nl"), "/sbin/nologin"),
        Account("f", 1006, str(tmp_path / "nl"), "/bin/false"),
        Account("gone", 1004, str(tmp_path / "gone"), "/bin/bash"),
        Account("slash", 1007, "/", "/bin/bash"),
    ]
    probe = Probe(Flavour(Platform.LINUX))
    status = {h.user: h.status for h in select_homes(accounts, 1000, probe)}
    assert status == {
        "root": "scanned", "a": "scanned", "b": "scanned", "sys": "system_account", "nl": "no_login_shell",
        "f": "no_login_shell", "gone": "missing_home", "a-alias": "duplicate_home", "slash": "missing_home",
    }
    assert [h.user for h in select_homes(accounts, 1000, probe)][:3] == ["root", "sys", "a"]  # by uid


def test_windows_homes_are_the_profile_directories_but_the_shared_ones(tmp_path: Path) -> None:
    users = tmp_path / "Users"
    for name in ("alice", "Public", "Default", "All Users", "bob"):
        (users / name).mkdir(parents=True)
    (users / "desktop.ini").write_text("")

    def host(path: str) -> str:
        assert path.upper().startswith("D:\\USERS")
        return str(users.joinpath(*ntpath.relpath(path, "D:\\Users").split("\\")))

    probe = Probe(Flavour(Platform.WINDOWS), host_path=host)
    accounts = windows_accounts(probe, EnvView({"SYSTEMDRIVE": "D:"}, Platform.WINDOWS))
    assert [(a.name, a.home) for a in accounts] == [("alice", "D:\\Users\\alice"), ("bob", "D:\\Users\\bob")]
    assert [h.status for h in select_homes(accounts, 0, probe)] == ["scanned", "scanned"]


def test_discovery_runs_per_home_and_tags_each_source_with_its_account(tmp_path: Path) -> None:
    etc, homes = _fake_host(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    write_claude_session(elsewhere, "-e", "sess-env", 1)
    env = {ACCOUNTS_ETC_ENV: str(etc), "HOME": str(homes["alice"]),
           "CLAUDE_CONFIG_DIR": str(elsewhere / ".claude")}  # the service's environment, never read for stores
    result = discover(DiscoveryOptions(root=".", env=env, user_homes=True, platform="linux"))
    by_user = sorted((s.user, str(Path(s.path).relative_to(tmp_path))) for s in result.sources)
    assert by_user == [
        ("alice", "home/alice/.claude/projects/-work-p/sess-1.jsonl"),
        ("bob", "home/bob/.claude/projects/-work-p/sess-1.jsonl"),
        ("root", "home/root/.claude/projects/-srv/sess-root.jsonl"),
    ]
    assert {h.user: h.status for h in result.homes} == {
        "root": "scanned", "daemon": "system_account", "alice": "scanned", "bob": "scanned",
        "carol": "missing_home", "svc": "no_login_shell", "nobody": "no_login_shell",
    }
    # without the system profile the same environment is one user's: no account, CLAUDE_CONFIG_DIR read
    user = discover(DiscoveryOptions(root=".", env=env, platform="linux"))
    assert {s.user for s in user.sources} == {""} and any("elsewhere" in s.path for s in user.sources)


def test_no_account_with_a_home_is_a_discovery_issue(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text("daemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n")
    result = discover(DiscoveryOptions(root=".", env={ACCOUNTS_ETC_ENV: str(etc)}, user_homes=True, platform="linux"))
    assert result.sources == [] and [i.reason for i in result.errors] == ["no_user_homes"]


def _scan(tmp_path: Path, etc: Path, *extra: str) -> list[dict[str, Any]]:
    """A system-profile scan through the CLI; the events it appended to the log."""
    out = tmp_path / "out"
    before = len(read_events(out / "events.jsonl"))
    run_cli(["scan", "--profile", "system", "--state-path", str(out / "state.sqlite"),
             "--log-path", str(out / "events.jsonl"), "--json", *extra],
            tmp_path / "service-home",
            extra_env={ACCOUNTS_ETC_ENV: str(etc), "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / "daemon" / ".claude")})
    return read_events(out / "events.jsonl")[before:]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_system_scan_gives_every_event_its_accounts_user_name(tmp_path: Path, jobs: str) -> None:
    """With worker processes too: a worker's events carry its source's account."""
    etc, homes = _fake_host(tmp_path)
    (tmp_path / "service-home").mkdir()
    pool = ("--jobs", jobs, "--jobs-min-bytes", "0")
    events = _scan(tmp_path, etc, *pool)
    owner = {path_hash(str(p)): name for name, home in homes.items() for p in home.rglob("*.jsonl")}
    by_dataset: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_dataset.setdefault(event["event"]["dataset"], []).append(event)

    activity = by_dataset["telltale.activity"]
    assert {e["user"]["name"] for e in activity} == {"root", "alice", "bob"}
    for event in activity:
        assert event["user"]["name"] == owner[event["telltale"]["source"]["path_hash"]]
    # the skipped accounts' stores (daemon's also named by CLAUDE_CONFIG_DIR) are not read
    assert not {owner[e["telltale"]["source"]["path_hash"]] for e in activity} & {"daemon", "svc"}
    # alice's and bob's stores share a relative path: two sources, two cursors, each read once
    per_user = {name: sum(e["user"]["name"] == name for e in activity) for name in ("alice", "bob")}
    assert per_user["alice"] > per_user["bob"] > 0

    detections = by_dataset["telltale.detection"]
    assert detections and {e["user"]["name"] for e in detections} == {"alice"}
    assert {e["user"]["name"] for e in by_dataset["telltale.session_risk"]} == {"alice"}
    # run-wide health (the summary) is about the service: the account it runs as
    summary = [e for e in by_dataset["telltale.health"] if e["event"]["action"] == "scan_summary"]
    assert [e["user"]["name"] for e in summary] == [_host()]
    sources = summary[0]["telltale"]["scan"]["sources"]
    assert sorted(s["user"] for s in sources) == ["alice", "bob", "root"]
    assert summary[0]["telltale"]["scan"].get("worker_processes", 0) == (0 if jobs == "1" else 2)

    # a second scan reads nothing again; an append to bob's store is bob's
    assert [e for e in _scan(tmp_path, etc, *pool) if e["event"]["dataset"] == "telltale.activity"] == []
    write_claude_session(homes["bob"], "-work-p", "sess-1", 1, start=5)
    again = [e for e in _scan(tmp_path, etc, *pool) if e["event"]["dataset"] == "telltale.activity"]
    assert again and {e["user"]["name"] for e in again} == {"bob"}


def test_quarantines_and_source_health_carry_the_account(tmp_path: Path) -> None:
    etc, homes = _fake_host(tmp_path)
    (tmp_path / "service-home").mkdir()
    with (homes["bob"] / ".claude" / "projects" / "-work-p" / "sess-1.jsonl").open("a") as fh:
        fh.write("{not json\n")
    events = _scan(tmp_path, etc)
    quarantined = [e for e in events if e["event"]["action"] == "record_quarantined"]
    assert quarantined and {e["user"]["name"] for e in quarantined} == {"bob"}


def test_sources_lists_each_store_with_its_user_and_the_skipped_accounts(tmp_path: Path) -> None:
    etc, _ = _fake_host(tmp_path)
    (tmp_path / "service-home").mkdir()
    proc = run_cli(["sources", "--profile", "system", "--json"], tmp_path / "service-home",
                   extra_env={ACCOUNTS_ETC_ENV: str(etc)})
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    homes = {r["user"]: r["status"] for r in records if r["type"] == "home"}
    assert homes["alice"] == "scanned" and homes["daemon"] == "system_account" and homes["carol"] == "missing_home"
    assert sorted(r["user"] for r in records if r["type"] == "source") == ["alice", "bob", "root"]


@pytest.mark.parametrize("content", ["none", "redacted"])
def test_user_name_is_identity_kept_under_every_content_mode(tmp_path: Path, content: str) -> None:
    """``user.name`` says whose store an event is about, not what the agent did: a ``none``
    scan and a ``content: none`` output keep it (the allowlist of ``telltale.sinks.content``)."""
    etc, _ = _fake_host(tmp_path)
    (tmp_path / "service-home").mkdir()
    events = _scan(tmp_path, etc, "--content", content)
    activity = [e for e in events if e["event"]["dataset"] in ("telltale.activity", "telltale.detection")]
    assert {e["user"]["name"] for e in activity} == {"root", "alice", "bob"}
    for event in activity:
        assert downgrade(event, "none")["user"] == event["user"]


def test_system_scan_takes_one_inventory_per_account(tmp_path: Path) -> None:
    etc, homes = _fake_host(tmp_path)
    (tmp_path / "service-home").mkdir()
    events = _scan(tmp_path, etc)
    summaries = [e for e in events if e["event"]["action"] == "inventory_summary"]
    assert sorted(e["user"]["name"] for e in summaries) == ["alice", "bob", "root"]
    assert len({e["event"]["id"] for e in summaries}) == 3  # equal inventories, one event each
    per_agent = [e for e in events if e["event"]["action"] == "inventory"]
    assert {e["user"]["name"] for e in per_agent} == {"alice", "bob", "root"}
    # unchanged: nothing again; a change in bob's home is bob's inventory only
    assert [e for e in _scan(tmp_path, etc) if e["event"]["dataset"] == "telltale.inventory"] == []
    (homes["bob"] / ".vscode" / "extensions" / "openai.chatgpt-1.2.3").mkdir(parents=True)  # Codex installed
    again = [e for e in _scan(tmp_path, etc, "--install-inventory-interval-seconds", "0")
             if e["event"]["dataset"] == "telltale.inventory"]
    assert again and {e["user"]["name"] for e in again} == {"bob"}


def test_a_removed_store_is_reported_with_its_account(tmp_path: Path) -> None:
    etc, homes = _fake_host(tmp_path)
    (tmp_path / "service-home").mkdir()
    _scan(tmp_path, etc)
    (homes["bob"] / ".claude" / "projects" / "-work-p" / "sess-1.jsonl").unlink()
    removed = [e for e in _scan(tmp_path, etc) if e["event"]["action"] == "source_removed"]
    assert [e["user"]["name"] for e in removed] == ["bob"]


def test_account_of_picks_the_deepest_home() -> None:
    from telltale.pipeline import _account_of

    homes = (("/home", "x"), ("/home/al", "al"), ("/home/alice/", "alice"))
    assert _account_of("/home/alice/.claude/p.jsonl", homes) == "alice"
    assert _account_of("/home/alicex/p.jsonl", homes) == "x"
    assert _account_of("/srv/p.jsonl", homes) == ""


def test_system_watch_attributes_appends_and_new_sessions_to_their_account(tmp_path: Path) -> None:
    """``watch --profile system`` (what the system service runs): the stores of every scanned
    home are watched, an append is read as its account's, and a session created in a new
    project directory of another home is found by rediscovery and is that account's."""
    from test_watch_cli import FAST

    etc, homes = _fake_host(tmp_path)
    service_home, out = tmp_path / "service-home", tmp_path / "out"
    service_home.mkdir()
    cmd = [sys.executable, "-m", "telltale", "watch", "--profile", "system", "--log-path", str(out / "e.jsonl"),
           "--state-path", str(out / "s.sqlite"), "--install-inventory-disabled", "--json", "--iterations", "2", *FAST]
    proc = subprocess.Popen(cmd, env=cli_env(service_home, {ACCOUNTS_ETC_ENV: str(etc)}), cwd=str(service_home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or ()], daemon=True).start()

    def next_scan() -> dict[str, Any]:
        try:
            summary: dict[str, Any] = json.loads(lines.get(timeout=30))
        except queue.Empty:
            proc.kill()
            raise AssertionError(f"no scan within 30s: {proc.communicate()[1]}") from None
        return summary

    def new_activity(before: int) -> list[dict[str, Any]]:
        return [e for e in read_events(out / "e.jsonl")[before:] if e["event"]["dataset"] == "telltale.activity"]

    try:
        assert next_scan()["trigger"] == ["initial"]
        initial = new_activity(0)
        assert {e["user"]["name"] for e in initial} == {"root", "alice", "bob"}
        seen = len(read_events(out / "e.jsonl"))
        write_claude_session(homes["bob"], "-work-p", "sess-1", 1, start=5)
        assert next_scan()["targeted"] is True
        appended = new_activity(seen)
        assert appended and {e["user"]["name"] for e in appended} == {"bob"}
        seen = len(read_events(out / "e.jsonl"))
        write_claude_session(homes["alice"], "-work-new", "sess-new", 1)
        assert "rediscovery" in next_scan()["trigger"]
        created = new_activity(seen)
        assert created and {(e["user"]["name"], e["gen_ai"]["conversation"]["id"]) for e in created} == {
            ("alice", "sess-new")}
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_system_service_unit_scans_every_home_and_the_siem_gets_each_users_detections(tmp_path: Path) -> None:
    """The ``--system`` timer unit's ExecStart, run as it is (CI has no systemd, DECISIONS), over
    a host of several accounts: the local log gets every account's activity, an OTLP output
    configured in the system root with ``content: none`` gets alice's detection with her
    ``user.name``, and no activity."""
    pytest.importorskip("opentelemetry.proto")
    from sink_receivers import OtlpStore, attrs, otlp_http_receiver
    from test_service_e2e import _exec_start

    etc, _ = _fake_host(tmp_path)
    service_home, units, config = tmp_path / "service-home", tmp_path / "units", tmp_path / "etc-telltale"
    service_home.mkdir()
    run_cli(["service", "install", "--system", "--mode", "timer", "--init", "systemd", "--dest", str(units),
             "--no-enable"], service_home)
    argv = _exec_start(units / "telltale.service")
    assert argv[-4:] == ["scan", "--once", "--profile", "system"]
    store = OtlpStore()
    receiver = otlp_http_receiver(store).start()
    try:
        (config / "outputs.d").mkdir(parents=True)
        (config / "outputs.d" / "50-siem.yaml").write_text(
            f"outputs:\n  siem:\n    type: otlp\n    endpoint: {receiver.url}\n    include: [detection, health]\n"
            "    content: none\n    timeout: 5\n")
        (config / "config.yaml").write_text("install_inventory_disabled: true\n")
        log, state = tmp_path / "var-log" / "events.jsonl", tmp_path / "var-lib" / "state.sqlite"
        env = {ACCOUNTS_ETC_ENV: str(etc), "TELLTALE_SYSTEM_CONFIG_DIR": str(config),
               "TELLTALE_LOG_PATH": str(log), "TELLTALE_STATE_PATH": str(state)}
        proc = subprocess.run(argv, env=cli_env(service_home, env), cwd=str(service_home), capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
    finally:
        receiver.stop()
    events = read_events(log)
    assert {e["user"]["name"] for e in events if e["event"]["dataset"] == "telltale.activity"} == {
        "root", "alice", "bob"}
    received = [attrs(record) for _, record in store.records]
    assert {a["event.dataset"] for a in received} == {"telltale.detection", "telltale.health"}
    detections = [a for a in received if a["event.dataset"] == "telltale.detection"]
    assert detections and {a["user.name"] for a in detections} == {"alice"}
    assert not any("get.example.com" in json.dumps(a) for a in detections)  # content none: no command text
    assert any("get.example.com" in json.dumps(e) for e in events if e["event"]["dataset"] == "telltale.detection")


def test_sources_table_shows_the_accounts_and_each_stores_user(tmp_path: Path) -> None:
    import io

    from telltale.cli.sources import write_table

    etc, _ = _fake_host(tmp_path)
    result = discover(DiscoveryOptions(root=".", env={ACCOUNTS_ETC_ENV: str(etc)}, user_homes=True, platform="linux"))
    out, err = io.StringIO(), io.StringIO()
    write_table(result, out, err)
    text = out.getvalue()
    assert "Local accounts" in text and "system_account" in text and "missing_home" in text
    stores = text[text.index("Session stores"):]
    first_cells = {line.split("│")[1].strip() for line in stores.splitlines() if line.count("│") > 2}
    assert stores.splitlines()[2].split("┃")[1].strip() == "user"
    assert {"alice", "bob", "root"} <= first_cells
