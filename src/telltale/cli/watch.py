"""``telltale watch``: a full scan, then targeted scans of what changed, as it changes.

The scan itself is the pipeline's (:mod:`telltale.pipeline`), wired exactly as ``scan``
wires it (fixture guard, refusal of state and log paths inside a store, inventory,
delivery); :mod:`telltale.watch` only decides *when* and *which sources*. One summary
line per scan: JSON with ``--json`` or when stdout is not a terminal.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from typing import Any

import msgspec

from telltale.cli.common import (
    add_scan_arguments,
    add_threshold_arguments,
    checked_discovery,
    is_stdout_log,
    is_tty,
    load_delivery,
    load_detector,
    make_scanner,
    scan_options,
    state_lock,
)
from telltale.config.settings import apply_settings, configurable
from telltale.errors import StateLocked, TelltaleError, UsageError
from telltale.events.redaction import redact, redact_document
from telltale.pipeline import ScanResult
from telltale.watch.loop import DEFAULT_POLL_RATE, AlertQueue, ScanRequest, WatchConfig, WatchSession
from telltale.watch.native import DEFAULT_MAX_WATCHES


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "watch",
        help="scan once, then scan changed sources as they change",
        description="Run a full scan, then watch the session stores' directories and scan only the sources "
        "that changed (new stores are discovered as they appear). File-system events only wake the scanner; "
        "stat fingerprints and cursors decide what is new, so nothing is emitted twice.",
    )
    parser.add_argument(
        "--debounce-ms", type=int, default=500, metavar="MS",
        help="after the first change, wait this long for more before scanning (default 500)",
    )
    parser.add_argument(
        "--min-scan-interval-ms", type=int, default=2000, metavar="MS",
        help="at least this long between the end of one scan and the start of the next (default 2000)",
    )
    parser.add_argument("--iterations", type=int, metavar="N", help="stop after N triggered scans")
    parser.add_argument(
        "--poll", action="store_true",
        help="also sample file metadata (SQLite stores, transcripts, directories), for file systems without "
        "native events; on macOS SQLite stores are sampled anyway",
    )
    parser.add_argument(
        "--no-native", action="store_true",
        help="subscribe to no native notifications; sample everything instead (implies --poll)",
    )
    parser.add_argument(
        "--poll-rate", type=int, default=DEFAULT_POLL_RATE, metavar="N",
        help=f"with --poll: transcripts and directories stat'ed per second (default {DEFAULT_POLL_RATE}; SQLite "
        "stores are sampled at 64 per second at most)",
    )
    parser.add_argument(
        "--max-watches", type=int, default=DEFAULT_MAX_WATCHES, metavar="N",
        help=f"native directory watches at most (default {DEFAULT_MAX_WATCHES}); directories beyond it are sampled",
    )
    parser.add_argument(
        "--rescan-interval-seconds", type=float, default=0.0, metavar="S",
        help="also rediscover and scan everything every S seconds, a safety net for missed events (default 0: off)",
    )
    parser.add_argument(
        "--install-inventory-interval-seconds", type=float, default=86_400.0, metavar="S",
        help="take the installed-agent inventory at most this often (default 86400, a day); emitted only on "
        "change",
    )
    parser.add_argument("--install-inventory-disabled", action="store_true", help="never take the inventory")
    add_threshold_arguments(parser)
    add_scan_arguments(parser)
    configurable(parser, "watch")  # every flag above is also a config.yaml key and a TELLTALE_<KEY>
    parser.set_defaults(handler=run)


def _config(args: argparse.Namespace) -> WatchConfig:
    if args.debounce_ms < 0 or args.min_scan_interval_ms < 0:
        raise UsageError("--debounce-ms and --min-scan-interval-ms must not be negative")
    if args.iterations is not None and args.iterations < 0:
        raise UsageError("--iterations must not be negative")
    if args.max_watches < 1:
        raise UsageError("--max-watches must be at least 1")
    if args.poll_rate < 1:
        raise UsageError("--poll-rate must be at least 1")
    if args.rescan_interval_seconds < 0:
        raise UsageError("--rescan-interval-seconds must not be negative")
    defaults = WatchConfig()
    return WatchConfig(
        debounce=args.debounce_ms / 1000,
        min_interval=args.min_scan_interval_ms / 1000,
        iterations=args.iterations,
        max_watches=args.max_watches,
        poll=args.poll or args.no_native,
        native=not args.no_native,
        sample_sqlite=defaults.sample_sqlite or args.poll or args.no_native,
        poll_rate=args.poll_rate,
        rescan_interval=args.rescan_interval_seconds,
    )


def run(args: argparse.Namespace) -> int:
    apply_settings(args)
    config = _config(args)
    delivery = load_delivery(args)
    options = scan_options(
        args,
        delivery,
        scanner_error_threshold=args.scanner_error_threshold,
        scan_duration_threshold_seconds=args.scan_duration_threshold_seconds,
    )
    detector = load_detector(args)
    out = sys.stderr if is_stdout_log(args) else sys.stdout  # with --log-path -, stdout carries the events
    as_json = args.json or not is_tty(out)
    alerts = AlertQueue()
    inventory = None if args.dry_run or is_stdout_log(args) else _inventory_hook(args)
    first = checked_discovery(args, options)  # fixture guard and path refusal before anything starts
    if not first.store_roots and first.pending_roots:
        print(
            redact(f"telltale: watch: no session store directory exists yet (root {args.root!r}); waiting for one ")
            + "to appear.",
            file=sys.stderr,
        )
    elif not first.store_roots:
        print(
            redact(f"telltale: watch: no session store directory can appear under root {args.root!r}; only the ")
            + "initial scan runs (use --rescan-interval-seconds to look again periodically).",
            file=sys.stderr,
        )
    stopping = threading.Event()

    lockless = options.dry_run or is_stdout_log(args)  # --log-path - writes no state

    def locked() -> Any:
        # One writer per state: each scan holds the lock from its first read of the state to
        # its last commit, waiting for a `scan` (cron) or another watch between iterations.
        return state_lock(options.state_path, "watch", dry_run=lockless, wait=None, stop=stopping.is_set)

    try:
        with locked():  # opening the state creates its schema: a write
            scanner = make_scanner(options, detector, extra_events=alerts.hook(inventory))
    except StateLocked:
        return 0  # stopped while waiting for the first lock
    base = scanner.options

    reload = _Reload(args)

    def scan(request: ScanRequest) -> ScanResult | None:
        try:
            with locked():
                reload.apply(scanner)  # SIGHUP: the rules as they are on disk now
                # Same options for every scan; only whether it is a targeted (watch-triggered) one differs.
                scanner.options = msgspec.structs.replace(base, targeted=request.targeted)
                result = scanner.scan(request.sources, discovery_errors=request.discovery_errors)
                delivered: dict[str, Any] = {}
                if options.remote_sinks and delivery is not None:
                    from telltale.delivery import deliver_after_scan

                    delivered = deliver_after_scan(  # a stop ends the wait; events stay queued
                        delivery, scanner, options.state_path, seconds=args.delivery_seconds, stop=stopping.is_set
                    )
        except StateLocked:
            return None  # stopped while waiting: the loop sees the stop next
        _print_line(result, request, as_json=as_json, delivery=delivered, out=out)
        return result

    session = WatchSession(
        config, discover=lambda: checked_discovery(args, options), scan=scan, alerts=alerts,
        changed=scanner.changed_sources,
    )
    restore = _install_stop(session, stopping, scanner)
    restore_hup = reload.install()
    try:
        return session.run(first)
    finally:
        restore_hup()
        restore()
        scanner.close()


class _Reload:
    """SIGHUP (``systemctl reload``): the rules, overrides, policies and allowlists are read
    again from disk at once (on a thread: the loop may be scanning), and the next scan uses
    them. A pack that does not load is reported in one line and the rules in use stay: a
    typo in a rule file must not blind a running sensor."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._lock = threading.Lock()  # one reload at a time; the last one wins
        self._pending: list[Any] = []  # the detector the next scan takes

    def install(self) -> Any:
        if not hasattr(signal, "SIGHUP"):  # pragma: no cover - Windows has no SIGHUP
            return lambda: None

        def handler(_sig: int, _frame: Any) -> None:
            threading.Thread(target=self._load, name="telltale-watch-reload", daemon=True).start()

        previous = signal.signal(signal.SIGHUP, handler)
        return lambda: signal.signal(signal.SIGHUP, previous)

    def _load(self) -> None:
        with self._lock:
            try:
                detector = load_detector(self.args)
            except TelltaleError as exc:
                print(redact(f"telltale: watch: rules not reloaded, the rules in use stay: {exc}"),
                      file=sys.stderr, flush=True)
                return
            self._pending[:] = [detector]
            what = "no rule is left: detection is off" if detector is None else "rules reloaded"
            print(f"telltale: watch: {what} (from the next scan on)", file=sys.stderr, flush=True)

    def apply(self, scanner: Any) -> None:
        """Called at the start of each scan, under the state lock."""
        with self._lock:
            if self._pending:
                scanner.detector = self._pending.pop()


def _inventory_hook(args: argparse.Namespace) -> Any:
    from telltale.inventory.scan_hook import inventory_hook

    return inventory_hook(args)


def _install_stop(session: WatchSession, stopping: threading.Event, scanner: Any) -> Any:
    """SIGINT/SIGTERM: the scan in progress stops at its next batch or source boundary
    (what was read up to there is written and committed, as with ``scan``), then the loop
    ends with exit 0 — a stop is how a watch (a service) normally ends. A second signal
    acts at once (SIGINT: exit 130, the pending window is finished by the next run).

    The handler only starts a thread that wakes the loop: it runs on the main thread,
    possibly while that thread holds the inbox lock, so it must not take the lock itself.
    """

    def handler(sig: int, _frame: Any) -> None:
        stopping.set()  # ends a wait for the state lock
        scanner.stop_signal = signal.Signals(sig).name
        scanner.stop.set()  # a long (initial, rescan) scan stops at the next boundary
        threading.Thread(target=session.request_stop, name="telltale-watch-stop", daemon=True).start()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def _print_line(
    result: ScanResult, request: ScanRequest, *, as_json: bool, delivery: dict[str, Any], out: Any
) -> None:
    summary = result.as_dict()
    summary["trigger"] = request.triggers
    summary["iteration"] = request.iteration
    summary["targeted"] = request.targeted
    if delivery:
        summary["delivery"] = delivery
    summary = redact_document(summary)  # what is printed passes the same redactor as events
    if as_json:
        out.write(msgspec.json.encode(summary).decode() + "\n")
    else:
        out.write(_human_line(result, request, summary, delivery) + "\n")
    out.flush()


def _human_line(result: ScanResult, request: ScanRequest, summary: dict[str, Any], delivery: dict[str, Any]) -> str:
    """One timestamped line per watch scan: what changed, what the rules found, what failed."""
    at = time.strftime("%H:%M:%S")
    head = f"{at} watch #{request.iteration} ({', '.join(request.triggers)}): "
    if summary["sources_scanned"] == 0 and not summary["error_count"]:
        return head + f"no changes, {summary['duration_s']:.2f}s"
    read = summary["sources_scanned"]
    parts = [f"{read} store{'' if read == 1 else 's'} read", f"{summary['emitted_count']} events"]
    by = summary.get("detections_by_severity") or {}
    if summary["detection_count"]:
        order = ("critical", "high", "medium", "low", "informational")
        parts.append(f"{summary['detection_count']} detections ("
                     + ", ".join(f"{by[s]} {s}" for s in order if by.get(s)) + ")")
    if summary["quarantined_count"]:
        parts.append(f"{summary['quarantined_count']} records skipped")
    if summary["scanner_error_count"]:
        parts.append(f"{summary['scanner_error_count']} stores failed")
    failing = (delivery or {}).get("failing_outputs") or []
    if failing:
        parts.append("failing outputs: " + ", ".join(failing) + " (telltale delivery status)")
    line = head + ", ".join(parts) + f", {summary['duration_s']:.2f}s" + (" (dry run)" if result.dry_run else "")
    return redact(line)
