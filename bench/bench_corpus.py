"""The scan on real shapes: trees built from the corpus, all-in against the parse-only limit.

Two trees are built from ``/work/shared/corpus`` (``gen_corpus_tree.py``), replicated to
``--size-mb``: every agent's format, and a Claude-only variant (tool results as Claude Code
really writes them). For each tree, measured side by side in one run:

* **parse-only limit**: every line of every transcript read and ``msgspec``-decoded
  (untyped), one core, in this process (SQLite stores are not counted: they have no lines);
  beside it, Telltale's own line reader splitting the same lines (bounded, with offsets);
* **cold all-in**: ``python -m telltale scan --once`` with the default rules, from process
  start to exit, into a fresh state, ``--repeat`` times (wall and CPU of the child, its peak
  RSS); alternating with ``--no-detect`` runs, whose difference is detection's cost;
* **no-change re-scan**: the same command again on the state the cold run left;
* **3x budget**: three limits less the floor every scan pays (the re-scan's fixed cost and
  the limit itself), per event, against what an event costs the scan with the pack cached;
* **stages**: one more cold scan through the CLI in a child process whose entry points are
  wrapped by timers (exclusive time: a nested stage's time is not its parent's):
  ``read`` (the JSONL line splitter), ``decode`` (the adapters' msgspec decoders),
  ``adapt`` (the rest of ``acquire``), ``normalise``, ``detect``, ``redact``, ``encode``
  (event building), ``commit`` (state transactions, read-side index) on the scanning
  thread, and ``write`` (``writev`` + fsync) on the writer thread, which overlaps. Each is
  shown in seconds and as MB/s of the tree's bytes; the timers themselves cost a few %;
* with ``--peer``, ``agent-session-otel inspect --json`` (0.2.0, the Python peer that
  normalises Claude Code and Codex stores) on the same tree, installed into ``WORK/peer``
  with pip when absent;
* with ``--big-mb``, peak RSS of a scan of one Claude transcript of that size made of the
  corpus's Claude lines repeated.

The page cache is warmed first; report the load average printed with the figures, and
prefer CPU time when the host is loaded (``--jobs`` runs use more than one core: wall).

    python bench/bench_corpus.py [--size-mb 54] [--repeat 3] [--variant all|claude|both]
                                 [--peer] [--big-mb 1000] [--work DIR] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from gen_corpus_tree import AGENTS, build, copies_for  # noqa: E402

PEER = "agent-session-otel==0.2.0"
STAGES = ("read", "decode", "adapt", "normalise", "detect", "redact", "encode", "commit", "other")


# -- the tree -------------------------------------------------------------------------
def tree(corpus: Path, work: Path, variant: str, size_mb: float) -> Path:
    home = work / f"{variant}-{size_mb:g}" / "home"
    if not home.exists():
        agents = ("claude",) if variant == "claude" else AGENTS
        copies = copies_for(corpus, size_mb, agents)
        build(corpus, home, copies, agents)
    return home


def files_of(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.is_file())


def warm(files: list[Path]) -> None:
    for path in files:
        with path.open("rb") as fh:
            while fh.read(1 << 20):
                pass


def line_files(files: list[Path]) -> Iterator[Path]:
    """The tree's files that hold lines (SQLite stores have none)."""
    return (path for path in files if path.suffix != ".db")


def parse_only(files: list[Path]) -> tuple[float, int]:
    """CPU seconds to read and decode every line (untyped msgspec), and the bytes read."""
    import msgspec

    decode = msgspec.json.Decoder().decode
    size = 0
    start = time.process_time()
    for path in line_files(files):
        size += path.stat().st_size
        with path.open("rb") as fh:
            for line in fh:
                try:  # noqa: SIM105 - zero-cost when nothing is raised
                    decode(line)
                except msgspec.DecodeError:
                    pass
    return time.process_time() - start, size


def reader_only(files: list[Path]) -> float:
    """CPU seconds for Telltale's JSONL reader (bounded lines with byte offsets) to split
    every line of the tree's line files, decoding none: its share of the limit's work."""
    from telltale.readers.jsonl import JsonlReader

    start = time.process_time()
    for path in line_files(files):
        with JsonlReader(str(path), None) as reader:
            for _ in reader.lines():
                pass
    return time.process_time() - start


# -- telltale through its CLI -----------------------------------------------------------
def _env(home: Path) -> dict[str, str]:
    # An installed package has its bytecode compiled (pip does it); a shell that sets
    # PYTHONDONTWRITEBYTECODE would make every run compile every module again.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TELLTALE_") and k != "PYTHONDONTWRITEBYTECODE"}
    return dict(env, HOME=str(home), PYTHONPATH=str(REPO / "src"), XDG_CACHE_HOME=str(home.parent / "cache"))


def scan_args(home: Path, out: Path, *extra: str) -> list[str]:
    return ["scan", "--once", "--root", str(home), "--json", "--log-path", str(out / "events.jsonl"),
            "--state-path", str(out / "state.sqlite"), *extra]


@dataclass
class Run:
    """One child process: wall, CPU (user+sys) and peak RSS, its stdout; ``--jobs`` workers
    (and the forkserver that starts them) are its helpers: their CPU is in ``cpu`` and
    their largest peak RSS is ``helper_rss_mib``."""

    wall: float
    cpu: float
    rss_mib: float
    stdout: str
    helper_rss_mib: float = 0.0
    helpers: int = 0


#: Spawns the measured command and reports its wall time and rusage on stderr. A small
#: process of its own: on Linux a child's peak RSS starts from its parent's (the memory a
#: vfork'd or forked child shares before ``exec``), so a child of this benchmark, which
#: holds decoded trees, would report the benchmark's RSS, not its own. Its descendants
#: (``--jobs`` workers are children of a forkserver, never reaped by the scan, so not in
#: its rusage) are sampled from /proc every 20 ms: CPU (the last sample) and VmHWM.
_WRAP = """
import json, os, sys, threading, time
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
tick = os.sysconf("SC_CLK_TCK")
seen = {}
done = threading.Event()
def sample():
    while not done.wait(0.02):
        stats = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                stats[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
        tree, grew = {pid}, True
        while grew:
            grew = False
            for p, (pp, _) in stats.items():
                if pp in tree and p not in tree:
                    tree.add(p)
                    grew = True
        for p in tree - {pid}:
            try:
                with open(f"/proc/{p}/status") as fh:
                    hwm = next((int(line.split()[1]) for line in fh if line.startswith("VmHWM")), 0)
            except OSError:
                continue
            cpu, rss = seen.get(p, (0.0, 0))
            seen[p] = (max(cpu, stats[p][1]), max(rss, hwm))
if os.path.isdir("/proc"):
    threading.Thread(target=sample, daemon=True).start()
_, status, ru = os.wait4(pid, 0)
done.set()
wall = time.perf_counter() - start
helpers = [v for v in seen.values() if v[1]]
print("TT-RUSAGE " + json.dumps([wall, ru.ru_utime + ru.ru_stime + sum(c for c, _ in helpers), ru.ru_maxrss,
                                 os.waitstatus_to_exitcode(status), max((r for _, r in helpers), default=0),
                                 len(helpers)]), file=sys.stderr)
"""


def run_child(cmd: list[str], env: dict[str, str]) -> Run:
    """The command's own wall time (from spawn to exit), CPU (user+sys, its helpers' too) and peak RSS."""
    proc = subprocess.run([sys.executable, "-c", _WRAP, *cmd], env=env, capture_output=True, text=True)
    lines = proc.stderr.splitlines()
    report = [line for line in lines if line.startswith("TT-RUSAGE ")]
    if not report:
        raise SystemExit(f"{' '.join(cmd[:5])}... failed: {proc.stderr[-2000:]}")
    wall, cpu, rss_kib, code, helper_kib, helpers = json.loads(report[-1].split(" ", 1)[1])
    if code not in (0, 3):
        raise SystemExit(f"{' '.join(cmd[:5])}... exit {code}: {proc.stderr[-2000:]}")
    return Run(wall, cpu, rss_kib / 1024, proc.stdout, helper_kib / 1024, helpers)


def telltale(home: Path, out: Path, *extra: str) -> Run:
    return run_child([sys.executable, "-m", "telltale", *scan_args(home, out, *extra)], _env(home))


def median(values: list[float]) -> float:
    return statistics.median(values)


# -- stages: a cold scan with its entry points timed ------------------------------------
class _Clock:
    """Exclusive CPU time per stage and thread (``thread_time``: what the host's load does not
    inflate); entering a stage pauses the one it is nested in."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.local = threading.local()

    def _stack(self) -> list[str]:
        stack: list[str] | None = getattr(self.local, "stack", None)
        if stack is None:
            base = "other" if threading.current_thread() is threading.main_thread() else "thread"
            stack = self.local.stack = [base]
            self.local.last = time.thread_time()
        return stack

    def enter(self, stage: str) -> None:
        stack = self._stack()
        now = time.thread_time()
        self.spent[stack[-1]] += now - self.local.last
        stack.append(stage)
        self.local.last = now

    def leave(self) -> None:
        stack = self._stack()
        now = time.thread_time()
        self.spent[stack.pop()] += now - self.local.last
        self.local.last = now

    def call(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(stage)
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed

    def generator(self, stage: str, fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            self.enter(stage)
            try:
                it = fn(*args, **kwargs)
                while True:
                    try:
                        item = next(it)
                    except StopIteration:
                        return
                    self.leave()
                    try:
                        yield item
                    finally:
                        self.enter(stage)
            finally:
                self.leave()

        return timed


class _TimedDecoder:
    def __init__(self, clock: _Clock, inner: Any) -> None:
        self._inner = inner
        self.decode = clock.call("decode", inner.decode)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


_REDACTORS = ("redact", "redact_cached", "redact_excerpt", "redact_document", "redact_arguments", "redact_value")


def _instrument(clock: _Clock) -> None:
    import msgspec

    import telltale.cli.scan  # noqa: F401 - the modules whose names are patched
    from telltale import pipeline, state
    from telltale.events import redaction
    from telltale.readers.jsonl import JsonlReader
    from telltale.sinks.jsonl import JsonlSink

    originals = {name: getattr(redaction, name) for name in _REDACTORS if hasattr(redaction, name)}
    timed_redactors = {id(fn): clock.call("redact", fn) for fn in originals.values()}
    seen_decoders: set[int] = set()

    def sweep() -> None:
        """Swap redaction functions and adapters' decoders wherever a module holds them."""
        for name, module in list(sys.modules.items()):
            if not name.startswith("telltale.") or module is None or name == "telltale.events.redaction":
                continue
            for attr, value in list(vars(module).items()):
                if id(value) in timed_redactors and callable(value):
                    setattr(module, attr, timed_redactors[id(value)])
                elif (isinstance(value, msgspec.json.Decoder) and name.startswith("telltale.sources.")
                      and id(value) not in seen_decoders):
                    setattr(module, attr, _TimedDecoder(clock, value))
                    seen_decoders.add(id(value))

    adapter_for = pipeline.adapter_for

    def timed_adapter_for(kind: str) -> Any:
        adapter = adapter_for(kind)
        sweep()
        if not getattr(adapter, "_bench_timed", False):
            adapter.acquire = clock.generator("adapt", adapter.acquire)
            adapter._bench_timed = True
        return adapter

    pipeline.adapter_for = timed_adapter_for  # type: ignore[assignment]
    from telltale.normalize import stage

    stage.normalize_batch = clock.call("normalise", stage.normalize_batch)  # type: ignore[assignment]
    scanner = pipeline.Scanner
    scanner._detect = clock.call("detect", scanner._detect)  # type: ignore[method-assign]
    from telltale.events import activity

    activity.activity_lines = clock.call("encode", activity.activity_lines)  # type: ignore[assignment]
    JsonlReader._lines = clock.generator("read", JsonlReader._lines)  # type: ignore[method-assign]
    JsonlSink.write = clock.call("write", JsonlSink.write)  # type: ignore[method-assign]
    for method in ("begin_window", "commit_window", "recover"):
        setattr(state.StateStore, method, clock.call("commit", getattr(state.StateStore, method)))
    sweep()


def _stage_child(args: list[str], out_json: str) -> int:
    clock = _Clock()
    _instrument(clock)
    from telltale.cli.main import main

    clock._stack()
    clock.enter("other")
    cpu0 = time.process_time()
    code = main(args)
    clock.leave()  # close the main thread's base stage
    spent = dict(clock.spent)
    spent["cpu"] = time.process_time() - cpu0
    Path(out_json).write_text(json.dumps(spent))
    return code


def stages(home: Path, work: Path) -> dict[str, float]:
    out = work / "out-stages"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    report = out / "stages.json"
    # One job: the stages are timed in the scanning process.
    cmd = [sys.executable, __file__, "--stage-child", str(report), "--", *scan_args(home, out, "--jobs", "1")]
    run_child(cmd, _env(home))
    result: dict[str, float] = json.loads(report.read_text())
    return result


# -- the peer ---------------------------------------------------------------------------
def peer_command(work: Path) -> list[str] | None:
    venv = work / "peer"
    exe = venv / "bin" / "agent-session-otel"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        proc = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", PEER], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{PEER}: not installable ({proc.stderr.strip().splitlines()[-1:]})")
            return None
    return [str(exe), "inspect", "--json"]


def big_transcript(corpus: Path, work: Path, size_mb: int) -> Path:
    """One Claude project holding one transcript of ``size_mb``: the corpus's lines, repeated."""
    home = work / f"big-{size_mb}" / "home"
    path = home / ".claude" / "projects" / "-big" / "big.jsonl"
    if path.exists():
        return home
    lines = [line for p in sorted((corpus / "claude-code").rglob("*.jsonl")) for line in p.read_bytes().splitlines()
             if line.strip()]
    path.parent.mkdir(parents=True)
    target = size_mb * 1_000_000
    with path.open("wb") as fh:
        while fh.tell() < target:
            fh.write(b"\n".join(lines) + b"\n")
    return home


# -- the report -------------------------------------------------------------------------
def load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def budget(limit: float, fixed: float, cached_cpu: float, events: int) -> None:
    """What ``3x the parse-only limit`` leaves for each event, against what one costs now.

    The least any scan pays: its fixed cost (process start, imports, discovery, the state:
    the no-change re-scan's CPU) and every line read and decoded (the limit itself). What is
    left of three limits is the budget for the per-event work (adapting, redacting, building
    and encoding the event, detection, the write and its commit), shared by the events.
    """
    if events <= 0:
        return
    floor = fixed + limit
    left = 3 * limit - floor
    head = f"3x budget: {3 * limit:.2f}s CPU; floor {floor:.2f}s (re-scan {fixed:.2f}s + limit {limit:.2f}s)"
    if left <= 0:
        print(f"{head}: nothing left for the events")
        return
    per_left, per_now = 1e6 * left / events, 1e6 * (cached_cpu - floor) / events
    print(f"{head}; {left:.2f}s left for {events} events = {per_left:.1f} us/event; the scan (pack cached) "
          f"spends {per_now:.1f} us/event = {per_now / per_left:.1f}x that")


def measure(label: str, home: Path, work: Path, repeat: int, jobs: int, peer: list[str] | None) -> None:
    files = files_of(home)
    warm(files)
    total = sum(p.stat().st_size for p in files)
    mb = total / 1e6
    limit, parsed = min((parse_only(files) for _ in range(2)), key=lambda r: r[0])
    print(f"\n== {label}: {mb:.1f} MB, {len(files)} files (load {load()})")
    reader = min(reader_only(files) for _ in range(2))
    print(f"parse-only limit: {limit:.2f}s CPU = {parsed / 1e6 / limit:.0f} MB/s ({parsed / 1e6:.1f} MB of lines); "
          f"telltale's line reader alone {reader:.2f}s")
    # "rules, pack cached": a fresh state beside the compiled pack a previous scan left
    # (rules.cache): what every later scan with changes pays for detection.
    # One job unless named: the CPU figures compare with the one-core parse-only limit.
    # "rules, jobs N": the default rules with N worker processes (wall is its figure).
    many = f"rules, jobs {jobs}"
    runs: dict[str, list[Run]] = {"rules": [], "no-detect": [], "rules, pack cached": [], many: []}
    rescans: list[Run] = []
    for _ in range(repeat):
        for name, extra in (("rules", ()), ("no-detect", ("--no-detect",)), ("rules, pack cached", ()),
                            (many, ())):
            out = work / f"out-{name.split(',')[0]}"
            if name.endswith("cached"):
                for path in out.iterdir():
                    if path.name != "rules.cache":
                        path.unlink()
            else:
                shutil.rmtree(out, ignore_errors=True)
            runs[name].append(telltale(home, out, "--jobs", str(jobs if name == many else 1), *extra))
            if name == "rules":
                rescans.append(telltale(home, out))
    summary = json.loads(runs["rules"][-1].stdout.strip().splitlines()[-1])
    for name, series in runs.items():
        wall, cpu = median([r.wall for r in series]), median([r.cpu for r in series])
        helpers = max(r.helpers for r in series)
        workers = (f", {helpers} helper processes (forkserver and workers), largest peak RSS "
                   f"{max(r.helper_rss_mib for r in series):.0f} MiB" if helpers else "")
        print(f"cold all-in ({name}): wall {wall:.2f}s = {wall / limit:.1f}x limit, CPU {cpu:.2f}s = "
              f"{cpu / limit:.1f}x limit, {mb / wall:.1f} MB/s; peak RSS {max(r.rss_mib for r in series):.0f} MiB"
              f"{workers}; runs wall {[round(r.wall, 2) for r in series]} CPU {[round(r.cpu, 2) for r in series]}")
    rules_cpu, plain_cpu, cached_cpu, _ = (median([r.cpu for r in runs[n]]) for n in runs)
    rules_wall, plain_wall, cached_wall, many_wall = (median([r.wall for r in runs[n]]) for n in runs)
    print(f"--jobs {jobs} against one job (medians, same run): wall {many_wall:.2f}s vs {rules_wall:.2f}s = "
          f"{rules_wall / many_wall:.2f}x")
    print(f"detection cost (A/B medians): CPU +{100 * (rules_cpu - plain_cpu) / plain_cpu:.0f}%, "
          f"wall +{100 * (rules_wall - plain_wall) / plain_wall:.0f}% of the scan without detection; "
          f"with the pack cached CPU +{100 * (cached_cpu - plain_cpu) / plain_cpu:.0f}%, "
          f"wall +{100 * (cached_wall - plain_wall) / plain_wall:.0f}%")
    print(f"events {summary.get('emitted_count')}, detections {summary.get('detection_count')}, "
          f"sources {len(summary.get('sources', []))}")
    rescan_wall, rescan_cpu = median([r.wall for r in rescans]), median([r.cpu for r in rescans])
    print(f"no-change re-scan: wall {rescan_wall:.3f}s, CPU {rescan_cpu:.3f}s "
          f"(runs {[round(r.wall, 3) for r in rescans]})")
    budget(limit, rescan_cpu, cached_cpu, int(summary.get("emitted_count") or 0))
    spent = stages(home, work)
    inside = sum(spent.get(s, 0.0) for s in STAGES)
    print(f"stages (one instrumented cold scan, exclusive CPU seconds per thread; scanning thread {inside:.2f}s, "
          f"process CPU {spent['cpu']:.2f}s):")
    for stage in (*STAGES, "write"):
        sec = spent.get("write" if stage == "write" else stage, 0.0)
        rate = f"{mb / sec:8.0f} MB/s" if sec > 0 else "       - MB/s"
        where = " (writer thread, overlaps)" if stage == "write" else f" {100 * sec / inside:5.1f}%"
        print(f"  {stage:<10}{sec:7.3f}s {rate}{where}")
    if peer is not None:
        peer_runs = [run_child(peer, _env(home)) for _ in range(repeat)]
        pw, pc = median([r.wall for r in peer_runs]), median([r.cpu for r in peer_runs])
        print(f"{PEER} inspect --json: wall {pw:.2f}s, CPU {pc:.2f}s; telltale all-in (one job) is "
              f"{pw / rules_wall:.1f}x faster (wall), {pc / rules_cpu:.1f}x (CPU); with --jobs {jobs} "
              f"{pw / many_wall:.1f}x (wall); peak RSS {max(r.rss_mib for r in peer_runs):.0f} MiB")


def main() -> int:
    if len(sys.argv) > 3 and sys.argv[1] == "--stage-child":
        return _stage_child(sys.argv[4:], sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path(os.environ.get("TELLTALE_CORPUS", "/work/shared/corpus")))
    ap.add_argument("--size-mb", type=float, default=54)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--variant", choices=("all", "claude", "both"), default="both")
    ap.add_argument("--peer", action="store_true", help=f"compare with {PEER} (pip-installed into WORK/peer)")
    ap.add_argument("--big-mb", type=int, default=0, help="peak RSS of one Claude transcript of this size")
    ap.add_argument("--jobs", type=int, default=2, help="the scans with N worker processes (default 2)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "telltale-bench-corpus")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src")], check=True, stdout=subprocess.DEVNULL)
    jobs = args.jobs
    peer = peer_command(args.work) if args.peer else None
    print(f"host: {os.cpu_count()} cores, load {load()}; python {sys.version.split()[0]}")
    variants = ("all", "claude") if args.variant == "both" else (args.variant,)
    for variant in variants:
        home = tree(args.corpus, args.work, variant, args.size_mb)
        label = "every agent's format" if variant == "all" else "Claude Code only"
        measure(label, home, args.work, args.repeat, jobs, peer)
    if args.big_mb:
        home = big_transcript(args.corpus, args.work, args.big_mb)
        out = args.work / "out-big"
        shutil.rmtree(out, ignore_errors=True)
        run = telltale(home, out, "--jobs", "1")
        print(f"\none {args.big_mb} MB Claude transcript: peak RSS {run.rss_mib:.0f} MiB, wall {run.wall:.1f}s, "
              f"CPU {run.cpu:.1f}s (load {load()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
