"""``telltale scan``: one scan (``--once``) or periodic scans (``--interval-seconds``)."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.cli.common import (
    add_scan_arguments,
    add_threshold_arguments,
    add_wait_lock_argument,
    checked_discovery,
    default_log_path,
    is_stdout_log,
    is_tty,
    load_delivery,
    load_detector,
    make_scanner,
    scan_options,
    state_lock,
)
from telltale.config.settings import apply_settings, configurable
from telltale.errors import StateLocked, UsageError
from telltale.events.redaction import redact, redact_document
from telltale.exitcodes import ExitCode
from telltale.pipeline import STDOUT_LOG, ScanResult, StreamMemory


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "scan",
        help="scan session stores and emit events",
        description="Discover agent session stores, read what is new since the last scan, run detection rules "
        "and append redacted events to the JSONL log. Re-running emits nothing twice.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="run one scan and exit (default)")
    mode.add_argument("--interval-seconds", type=float, metavar="N", help="scan every N seconds")
    parser.add_argument("--iterations", type=int, metavar="N", help="with --interval-seconds: stop after N scans")
    parser.add_argument("--max-sources", type=int, metavar="N", help="scan at most N sources (in sorted order)")
    parser.add_argument(
        "--backfill", action="store_true", help="re-emit everything from the start without touching cursors"
    )
    parser.add_argument(
        "--history",
        choices=("incremental", "all"),
        default="incremental",
        help="incremental (default): only what is new since the last scan; all: every source from its earliest "
        "record, never reading or writing scan state and queueing nothing for remote outputs",
    )
    parser.add_argument(
        "--install-inventory-interval-seconds",
        type=float,
        default=86_400.0,
        metavar="S",
        help="take the installed-agent inventory at most this often (default 86400, a day; 0: every scan); "
        "emitted only on change",
    )
    parser.add_argument("--install-inventory-disabled", action="store_true", help="never take the inventory")
    add_threshold_arguments(parser)
    parser.add_argument(
        "--verbose", "-v", action="store_true",
        help="after the summary, list every store read this run (client, path, status, records, events, "
        "detections, skipped, bytes)",
    )
    parser.add_argument(
        "--fail-on-delivery", action="store_true",
        help="exit 3 when a remote output failed or is blocked (without it the run exits 0 and the failure is in "
        "the summary and a sink_delivery_failure health event)",
    )
    parser.add_argument(
        "--strict", action="store_true",
        help="exit 3 on any warning: skipped records, failed stores, discovery issues, failing outputs",
    )
    add_wait_lock_argument(parser, loop=True)
    add_scan_arguments(parser)
    configurable(parser, "scan")  # every flag above is also a config.yaml key and a TELLTALE_<KEY>
    parser.set_defaults(handler=run)


class _Stop:
    """SIGINT/SIGTERM stop the scan at its next batch or source boundary (what was read up
    to there is committed) and the loop after it. A second signal acts at once."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.scanner: Any = None
        self.signum: int | None = None
        #: ``--log-path -``: what this process has written, kept across loop iterations.
        self.stream = StreamMemory()

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signum = signum
        self.event.set()
        scanner = self.scanner
        if scanner is not None:
            scanner.stop_signal = signal.Signals(signum).name
            scanner.stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


#: Exit codes of a scan stopped by a signal (128 + signal number, as shells report them).
_INTERRUPTED_EXIT = {"SIGINT": ExitCode.SIGINT, "SIGTERM": ExitCode.SIGTERM}


def run(args: argparse.Namespace) -> int:
    settings = apply_settings(args)
    if args.once and settings.origin("interval_seconds") != "flag":
        args.interval_seconds = None  # --once on the command line beats a configured period
    if args.iterations is not None and args.interval_seconds is None:
        raise UsageError("--iterations needs --interval-seconds")
    if args.interval_seconds is not None and args.interval_seconds <= 0:
        raise UsageError("--interval-seconds must be positive")
    if args.max_sources is not None and args.max_sources < 0:
        raise UsageError("--max-sources must not be negative")
    if args.wait_lock is not None and args.wait_lock < 0:
        raise UsageError("--wait-lock must not be negative")
    history_all = args.history == "all"
    delivery = load_delivery(args)
    options = scan_options(
        args,
        delivery,
        backfill=args.backfill,
        history_all=history_all,
        max_sources=args.max_sources,
        scanner_error_threshold=args.scanner_error_threshold,
        scan_duration_threshold_seconds=args.scan_duration_threshold_seconds,
    )
    _warn_history_into_log(args, options.log_path)
    detector = load_detector(args, for_good=True)  # one detector for every scan of this process
    stop = _Stop()
    stop.install()
    iteration = 0
    while True:
        iteration += 1
        if args.interval_seconds is None:
            return _one_scan(args, options, detector, delivery, stop, wait=args.wait_lock or 0.0)
        try:
            # A periodic scan waits for another writer (a cron scan, a watch) to finish.
            code = _one_scan(args, options, detector, delivery, stop, wait=args.wait_lock,
                             stop_waiting=stop.event.is_set)
        except StateLocked as exc:
            if stop.event.is_set():
                return ExitCode.OK
            print(redact(f"telltale: error: {exc}"), file=sys.stderr)
            code = ExitCode.LOCKED  # this iteration only: the loop keeps running (DECISIONS)
        if code not in (ExitCode.OK, ExitCode.WARNINGS, ExitCode.LOCKED):
            return code
        if args.iterations is not None and iteration >= args.iterations:
            return code
        if stop.event.wait(args.interval_seconds):
            return ExitCode.OK


def _command(args: argparse.Namespace) -> str:
    return "scan --once" if args.interval_seconds is None else f"scan --interval-seconds {args.interval_seconds:g}"


def _one_scan(
    args: argparse.Namespace, options: Any, detector: Any, delivery: Any, stop: _Stop, *, wait: float | None,
    stop_waiting: Any = None,
) -> int:
    discovery = checked_discovery(args, options)
    # ``--log-path -`` writes no state: like a dry run, it takes no lock.
    lockless = options.dry_run or is_stdout_log(args)
    waited: list[bool] = []
    with state_lock(options.state_path, _command(args), dry_run=lockless, wait=wait, stop=stop_waiting,
                    on_wait=lambda: waited.append(True)):
        # The walk's ``lstat``s stand for the scan's own unless it waited for another writer:
        # a source may have changed meanwhile, so each is then ``stat``ed again.
        return _locked_scan(args, options, detector, delivery, discovery, stop, listed=not waited)


def _locked_scan(
    args: argparse.Namespace, options: Any, detector: Any, delivery: Any, discovery: Any, stop: _Stop,
    *, listed: bool = True,
) -> int:
    started = dt.datetime.now()
    for issue in discovery.errors:
        print(redact(f"telltale: discovery: {issue.reason}: {issue.path}"), file=sys.stderr)
    if not discovery.sources and not discovery.errors:
        print(
            redact(f"telltale: no agent session stores found (root {args.root!r}); nothing to scan. ")
            + "Run `telltale sources` to see where Telltale looks.",
            file=sys.stderr,
        )
    errors = [{"reason": i.reason, "path_hash": _hash(i.path)} for i in discovery.errors]
    show_progress = not args.json and is_tty(sys.stderr) and bool(discovery.sources)
    extra = _inventory_hook(args)
    selected = discovery.sources if args.max_sources is None else discovery.sources[: args.max_sources]
    progress = _Progress(selected) if show_progress else None
    scanner = make_scanner(
        options, detector, extra_events=extra, progress=progress.tick if progress else None, stream=stop.stream
    )
    stop.scanner = scanner
    if stop.event.is_set():
        scanner.stop_signal = signal.Signals(stop.signum or signal.SIGINT).name
        scanner.stop.set()
    stats = discovery.stats if listed else None
    try:
        if progress is not None:
            with progress:
                result = scanner.scan(discovery.sources, discovery_errors=errors, stats=stats)
        else:
            result = scanner.scan(discovery.sources, discovery_errors=errors, stats=stats)
        delivered: dict[str, Any] = {}
        if options.remote_sinks and result.interrupted is None:
            from telltale.delivery import deliver_after_scan

            with _delivering(delivery.names, args.delivery_seconds, show=show_progress):
                delivered = deliver_after_scan(
                    delivery, scanner, options.state_path, seconds=args.delivery_seconds, stop=stop.event.is_set
                )
    finally:
        stop.scanner = None
        scanner.close()
    out = sys.stderr if is_stdout_log(args) else sys.stdout  # stdout carries the events
    if args.json or not is_tty(out):
        _print_json(result, delivered, out)
    else:
        from telltale.cli.summary import RunInfo  # rich is imported once there is something to show

        info = RunInfo(
            log_path=options.log_path, content=options.content, delivery=delivered,
            delivery_seconds=args.delivery_seconds, verbose=args.verbose,
            at=started if args.interval_seconds is not None else None,
        )
        _print_summary(result, info, out=out)
    if result.interrupted is not None:
        _say(_interrupted_line(result, options))
        return _INTERRUPTED_EXIT.get(result.interrupted["signal"], ExitCode.SIGINT)
    if discovery.errors and not discovery.sources:
        # Nothing usable, only rejected or unreadable candidates: the run could not do its job.
        print(
            f"telltale: error: no usable session store found and {len(discovery.errors)} discovery error(s); "
            "see `telltale sources`",
            file=sys.stderr,
        )
        return ExitCode.FAILED
    return _exit_code(args, result, discovery, delivered)


def _exit_code(args: argparse.Namespace, result: ScanResult, discovery: Any, delivered: dict[str, Any]) -> int:
    """0, or 3 with ``--fail-on-delivery`` (an output failed) or ``--strict`` (any warning)."""
    failing = bool(delivered.get("failing_outputs"))
    if failing and (args.fail_on_delivery or args.strict):
        return ExitCode.WARNINGS
    warned = result.quarantined_count or result.scanner_error_count or discovery.errors
    if args.strict and warned:
        return ExitCode.WARNINGS
    return ExitCode.OK


def _interrupted_line(result: ScanResult, options: Any) -> str:
    """What an interrupted run committed and how to continue."""
    from telltale.cli.summary import count, shown

    assert result.interrupted is not None
    total = max(int(result.interrupted["sources_total"]), len(result.sources))
    left = total - len(result.sources)
    where = "stdout" if options.log_path == STDOUT_LOG else shown(options.log_path)
    written = (
        "nothing written (dry run)" if result.dry_run
        else f"{result.emitted_count:,} events written to {where} and committed"
    )
    again = "telltale " + " ".join(shlex.quote(word) for word in sys.argv[1:]) if sys.argv[1:] else "the same command"
    return redact(
        f"telltale: interrupted ({result.interrupted['signal']}): {written}; {count(left, 'store')} of {total} "
        f"not reached; run `{again}` to continue where it stopped"
    )


def _say(line: str) -> None:
    """A line on stderr; on a terminal wrapped at words (a command in it stays readable)."""
    if not is_tty(sys.stderr):
        print(line, file=sys.stderr)
        return
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True).print(Text(line))


@contextlib.contextmanager
def _delivering(names: Any, seconds: float, *, show: bool) -> Iterator[None]:
    """A visible wait while delivery runs (a terminal only): the run is not stuck."""
    if not show or not names:
        yield
        return
    from rich.console import Console

    label = ", ".join(names)
    with Console(stderr=True).status(
        redact(f"delivering to {label}… up to {seconds:g}s (Ctrl-C skips; events stay queued)")
    ):
        yield


def _warn_history_into_log(args: argparse.Namespace, log_path: str) -> None:
    """``--backfill`` and ``--history all`` append every record again: say so when that is
    the production log (not one named on the command line for this purpose, not stdout)."""
    if args.dry_run or is_stdout_log(args) or not (args.backfill or args.history == "all"):
        return
    if args.log_path and os.path.abspath(os.path.expanduser(args.log_path)) != os.path.abspath(default_log_path()):
        return
    flag = "--backfill" if args.backfill else "--history all"
    print(
        redact(f"telltale: warning: {flag} appends every record again to the production log {log_path} ")
        + "(same event ids: deduplicate on event.id downstream); to read history without touching it, use "
        "--log-path FILE or --log-path - (stdout)",
        file=sys.stderr,
    )


def _inventory_hook(args: argparse.Namespace) -> Any:
    if args.dry_run or args.backfill or args.history == "all" or is_stdout_log(args):
        return None
    from telltale.inventory.scan_hook import inventory_hook

    return inventory_hook(args)


def _hash(path: str) -> str:
    from telltale.events.envelope import path_hash

    return path_hash(path)


class _Progress:
    """Progress on stderr (a terminal only): stores done/total, MB covered/total, rate, time
    left, and the store being read. A store skipped as unchanged counts as covered."""

    def __init__(self, sources: Any) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )
        from rich.text import Text

        self._sources = list(sources)
        self._sizes = [_stat_size(src.path) for src in self._sources]
        self._before = [0]
        for n in self._sizes:
            self._before.append(self._before[-1] + n)
        self._current: Any = None
        self._ticked = 0
        self._index = 0
        console = Console(stderr=True)
        owner = self

        class _Bar(Progress):
            def get_renderables(self) -> Any:
                yield from super().get_renderables()
                yield owner._reading(console.width, Text)

        self._bar: Any = _Bar(
            TextColumn("{task.fields[stores]}"),
            BarColumn(bar_width=None),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            transient=True,
            console=console,
            expand=True,
        )
        self._task = self._bar.add_task("scan", total=self._before[-1], stores=self._stores_field())

    def _stores_field(self) -> str:
        return f"{self._index}/{len(self._sources)} stores"

    def _reading(self, width: int, text: Any) -> Any:
        src = self._current
        if src is None:
            return text("")
        from telltale.cli.summary import shown

        head = f"reading {src.client}: "
        path = shown(src.path)
        room = max(width - len(head) - 1, 10)
        if len(path) > room:
            path = "…" + path[-(room - 1):]
        return text(head + path, no_wrap=True, overflow="ellipsis", style="dim")

    def __enter__(self) -> _Progress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def tick(self, kind: str, amount: int) -> None:
        if kind == "start":  # the pipeline starts store ``amount``: every store before it is covered
            self._index = min(amount, len(self._sources))
            self._current = self._sources[self._index] if self._index < len(self._sources) else None
            self._ticked = 0
            self._bar.update(self._task, completed=self._before[self._index], stores=self._stores_field())
        elif kind == "bytes" and self._current is not None:
            room = self._sizes[self._index] - self._ticked
            step = max(min(amount, room), 0)
            self._ticked += step
            self._bar.advance(self._task, step)
        elif kind == "source":
            self._bar.update(self._task, completed=self._before[min(self._index + 1, len(self._sources))],
                             stores=f"{min(self._index + 1, len(self._sources))}/{len(self._sources)} stores")


def _stat_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _print_json(result: ScanResult, delivered: dict[str, Any], out: Any) -> None:
    """The summary as one JSON line (``--json``, or not a terminal: cron, a pipe)."""
    summary = result.as_dict()
    if delivered:
        summary["delivery"] = delivered
    summary = redact_document(summary)  # what is printed passes the same redactor as events
    out.write(msgspec.json.encode(summary).decode() + "\n")


def _print_summary(result: ScanResult, info: Any, *, out: Any) -> None:
    from rich.console import Console

    from telltale.cli.summary import is_quiet, print_summary, quiet_line

    console = Console(file=out)
    if is_quiet(result, info) and not info.verbose:
        console.print(quiet_line(result, info), highlight=False)
        return
    print_summary(result, info, console)
