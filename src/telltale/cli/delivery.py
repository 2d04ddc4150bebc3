"""``telltale delivery``: look at and drive the outbox that feeds the remote outputs.

* ``status``: per-output queue counts, block reason and last error;
* ``retry-blocked --sink NAME``: lift a block after fixing credentials or the endpoint;
* ``run``: deliver what is due once (the scanner does this itself after each scan).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from dataclasses import asdict
from typing import Any

from telltale.cli.common import add_wait_lock_argument, state_lock
from telltale.config.roots import add_config_root_arguments
from telltale.errors import UsageError
from telltale.events.redaction import redact_document
from telltale.state import state_errors


def _state_path(args: argparse.Namespace) -> str:
    from telltale.cli.paths import profile_state_path

    if args.state_path:
        return os.path.abspath(os.path.expanduser(str(args.state_path)))
    return os.path.abspath(os.path.expanduser(profile_state_path(args.profile)))


def _outputs(args: argparse.Namespace) -> Any:
    from telltale.config.roots import roots_from_args
    from telltale.sinks.config import load_outputs

    return load_outputs(args.outputs, roots_from_args(args))


def _when(value: float | None) -> str:
    if value is None:
        return "-"
    return dt.datetime.fromtimestamp(value, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(args: argparse.Namespace) -> int:
    from telltale.sinks.outbox import status

    path = _state_path(args)
    configured: list[str] = []
    try:
        configured = list(_outputs(args).delivered())
    except UsageError as exc:
        print(f"telltale: warning: {exc}", file=sys.stderr)
    try:
        with state_errors(path):
            rows = status(path, configured)
    except FileNotFoundError:
        raise UsageError(f"no state database at {path} (use --state-path)") from None
    if args.json:
        print(json.dumps(redact_document([asdict(r) for r in rows]), indent=2))
        return 0
    if not rows:
        print("no remote outputs and nothing queued")
        return 0
    head = ("output", "pending", "retrying", "blocked", "dead", "delivered", "oldest queued", "state")
    table = [head]
    for r in rows:
        if r.blocked_reason:
            state = f"BLOCKED ({r.blocked_reason})"
        elif r.retry_at and r.retry_at > time.time():
            state = f"backing off until {_when(r.retry_at)} ({r.last_error})"
        elif r.last_error:
            state = f"ok (last error {r.last_error})"
        else:
            state = "ok"
        if configured and r.sink not in configured:
            state += " [not in outputs file]"
        table.append(
            (r.sink, str(r.pending), str(r.retrying), str(r.blocked), str(r.dead), str(r.delivered_total),
             _when(r.oldest_queued_at), state)
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(head) - 1)]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])
    return 0


def _retry_blocked(args: argparse.Namespace) -> int:
    from telltale.sinks.outbox import retry_blocked

    path = _state_path(args)
    if not os.path.exists(path):
        raise UsageError(f"no state database at {path} (use --state-path)")
    with state_lock(path, "delivery retry-blocked", wait=args.wait_lock or 0.0):
        try:
            n = retry_blocked(path, args.sink)
        except FileNotFoundError:
            raise UsageError(f"no state database at {path} (use --state-path)") from None
    print(f"{args.sink}: {n} item(s) released for delivery")
    return 0


def _report_json(report: Any) -> dict[str, Any]:
    return {
        "queued": report.queued,
        "capacity_exceeded": report.capacity_exceeded,
        "sinks": {name: {**asdict(rep), "failed": rep.failed} for name, rep in report.sinks.items()},
    }


def _run(args: argparse.Namespace) -> int:
    from telltale.sinks.config import build_sink, policy_of
    from telltale.sinks.outbox import Deliverer

    loaded = _outputs(args)
    for warning in loaded.warnings:
        print(f"telltale: warning: {warning}", file=sys.stderr)
    remote = loaded.delivered()
    if args.sink:
        unknown = sorted(set(args.sink) - set(remote))
        if unknown:
            raise UsageError(f"no enabled remote output named {', '.join(unknown)} in {loaded.path}")
        remote = {n: o for n, o in remote.items() if n in args.sink}
    if not remote:
        print(f"no remote outputs configured ({loaded.path})")
        return 0
    path = _state_path(args)
    if not os.path.exists(path):
        raise UsageError(f"no state database at {path} (use --state-path)")
    sinks = [build_sink(loaded, name, out) for name, out in remote.items()]
    policies = {name: policy_of(out) for name, out in remote.items()}
    with state_lock(path, "delivery run", wait=args.wait_lock or 0.0), \
            Deliverer(path, sinks, policies=policies) as deliverer:
        report = deliverer.run_once()
    if args.json:
        print(json.dumps(redact_document(_report_json(report)), indent=2))
    else:
        for name, rep in report.sinks.items():
            line = f"{name}: {rep.acked} delivered, {rep.retried} to retry, {rep.rejected} dead-lettered"
            if rep.blocked_reason:
                line += f"; BLOCKED ({rep.blocked_reason}); after fixing: telltale delivery retry-blocked --sink {name}"
            elif rep.errors:
                line += "; " + ", ".join(f"{k} x{v}" for k, v in sorted(rep.errors.items()))
            print(line)
        print(f"queued: {report.queued}" + (" (capacity exceeded)" if report.capacity_exceeded else ""))
    return 1 if report.failures else 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "delivery", help="remote outputs: queue status, unblock, deliver now",
        description="Look at and drive the outbox that feeds the remote outputs (OTLP, Splunk HEC, "
        "Elasticsearch). Scans deliver by themselves; these commands are for when an output was down or "
        "refused the credentials.",
    )
    sub = parser.add_subparsers(dest="delivery_command", metavar="SUBCOMMAND", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--state-path", help="state database (default: $TELLTALE_STATE_PATH or the user state dir)")
        p.add_argument("--outputs", metavar="FILE",
                       help="outputs file (default: every root's outputs.yaml and outputs.d/*.yaml)")
        add_config_root_arguments(p)

    p = sub.add_parser(
        "status", help="per-output queue counts and state",
        description="Per output: events pending, retrying, blocked and dead, delivered in total, the oldest queued "
        "event, and whether it is blocked (and why) or backing off. Read only.",
    )
    common(p)
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(handler=_status)

    p = sub.add_parser(
        "retry-blocked", help="lift an output's block after fixing its credentials or endpoint",
        description="An output that refused the credentials or the endpoint is blocked: nothing is sent to it "
        "until this command lifts the block. Its queued events are then delivered by the next scan or "
        "`telltale delivery run`.",
    )
    common(p)
    p.add_argument("--sink", required=True, metavar="NAME", help="the output's name in the outputs file")
    add_wait_lock_argument(p)
    p.set_defaults(handler=_retry_blocked)

    p = sub.add_parser(
        "run", help="deliver what is due now, once",
        description="Deliver the queued events that are due to the remote outputs, once, and print what was "
        "sent, retried and rejected per output.",
    )
    common(p)
    p.add_argument("--sink", action="append", metavar="NAME", help="only this output (repeatable; default: all)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_wait_lock_argument(p)
    p.set_defaults(handler=_run)
