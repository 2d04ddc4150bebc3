"""``telltale scan``: one scan (``--once``) or periodic scans (``--interval-seconds``)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any

import msgspec

from telltale.cli.common import (
    add_scan_arguments,
    add_wait_lock_argument,
    checked_discovery,
    is_tty,
    load_delivery,
    load_detector,
    make_scanner,
    scan_options,
    state_lock,
)
from telltale.config.settings import apply_settings, configurable
from telltale.delivery import deliver_after_scan
from telltale.errors import StateLocked, UsageError
from telltale.events.redaction import redact, redact_document
from telltale.exitcodes import ExitCode
from telltale.pipeline import ScanResult


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
        help="'all' reads every source from its earliest record and never reads or writes scan state",
    )
    parser.add_argument(
        "--install-inventory-interval-seconds",
        type=float,
        default=86_400.0,
        metavar="S",
        help="take the installed-agent inventory at most this often (0: every scan); emitted only on change",
    )
    parser.add_argument("--install-inventory-disabled", action="store_true", help="never take the inventory")
    parser.add_argument("--scanner-error-threshold", type=int, default=10, metavar="N")
    parser.add_argument("--scan-duration-threshold-seconds", type=float, default=300.0, metavar="S")
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
    detector = load_detector(args)
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
    with state_lock(options.state_path, _command(args), dry_run=options.dry_run, wait=wait, stop=stop_waiting):
        return _locked_scan(args, options, detector, delivery, discovery, stop)


def _locked_scan(
    args: argparse.Namespace, options: Any, detector: Any, delivery: Any, discovery: Any, stop: _Stop
) -> int:
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
    progress = _Progress(discovery.sources) if show_progress else None
    scanner = make_scanner(options, detector, extra_events=extra, progress=progress.tick if progress else None)
    stop.scanner = scanner
    if stop.event.is_set():
        scanner.stop_signal = signal.Signals(stop.signum or signal.SIGINT).name
        scanner.stop.set()
    try:
        if progress is not None:
            with progress:
                result = scanner.scan(discovery.sources, discovery_errors=errors)
        else:
            result = scanner.scan(discovery.sources, discovery_errors=errors)
        delivered: dict[str, Any] = {}
        if options.remote_sinks and result.interrupted is None:
            delivered = deliver_after_scan(delivery, scanner, options.state_path, seconds=args.delivery_seconds)
    finally:
        stop.scanner = None
        scanner.close()
    _print_summary(result, as_json=args.json or not is_tty(sys.stdout), delivery=delivered)
    if result.interrupted is not None:
        done, total = result.interrupted["sources_done"], result.interrupted["sources_total"]
        print(
            f"telltale: interrupted after {done}/{total} stores; everything written is committed; "
            "run the same command to continue",
            file=sys.stderr,
        )
        return _INTERRUPTED_EXIT.get(result.interrupted["signal"], ExitCode.SIGINT)
    if discovery.errors and not discovery.sources:
        # Nothing usable, only rejected or unreadable candidates: the run could not do its job.
        print(
            f"telltale: error: no usable session store found and {len(discovery.errors)} discovery error(s); "
            "see `telltale sources`",
            file=sys.stderr,
        )
        return ExitCode.FAILED
    return ExitCode.OK


def _inventory_hook(args: argparse.Namespace) -> Any:
    if args.dry_run or args.backfill or args.history == "all":
        return None
    from telltale.inventory.scan_hook import inventory_hook

    return inventory_hook(args)


def _hash(path: str) -> str:
    from telltale.events.envelope import path_hash

    return path_hash(path)


class _Progress:
    """A progress bar over sources and bytes, on a terminal only (stderr)."""

    def __init__(self, sources: Any) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

        total_bytes = 0
        for src in sources:
            try:
                total_bytes += os.stat(src.path).st_size
            except OSError:
                continue
        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:.0f}/{task.total:.0f}"),
            DownloadColumn(),
            TimeElapsedColumn(),
            transient=True,
            console=Console(stderr=True),
        )
        self._sources = self._bar.add_task("sources", total=len(sources))
        self._bytes = self._bar.add_task("bytes", total=total_bytes)

    def __enter__(self) -> _Progress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def tick(self, kind: str, amount: int) -> None:
        self._bar.advance(self._sources if kind == "source" else self._bytes, amount)


def _print_summary(result: ScanResult, *, as_json: bool, delivery: dict[str, Any] | None = None) -> None:
    summary = result.as_dict()
    if delivery:
        summary["delivery"] = delivery
    summary = redact_document(summary)  # what is printed passes the same redactor as events
    if as_json:
        sys.stdout.write(msgspec.json.encode(summary).decode() + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title="telltale scan" + (" (dry run)" if result.dry_run else ""))
    for col in ("kind", "status", "records", "observations", "detections", "quarantined", "bytes"):
        table.add_column(col, justify="right" if col not in ("kind", "status") else "left")
    for src in summary["sources"]:
        detail = src.get("error") or src.get("reason")
        status = src["status"] + (f" ({detail})" if detail else "")
        table.add_row(
            src["kind"],
            status,
            str(src["records_read"]),
            str(src["observations"]),
            str(src["detections"]),
            str(src["quarantined"]),
            str(src["bytes_read"]),
        )
    console.print(table)
    console.print(
        f"emitted {summary['emitted_count']} events, {summary['detection_count']} detections, "
        f"{summary['quarantined_count']} quarantined, {summary['scanner_error_count']} source errors, "
        f"{summary['sources_unchanged']} unchanged sources, {summary['duration_s']:.2f}s"
        + (f", {n} unreadable (unsupported) stores" if (n := summary["sources_unsupported"]) else "")
    )
