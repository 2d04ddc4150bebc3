"""Remote delivery around a scan: which outputs get events, and draining them afterwards.

The local JSONL write stays first and durable; remote outputs receive the same events
from the outbox in the state database (enqueued in the commit that advances cursors, see
:mod:`telltale.pipeline`). After a scan the outbox is drained for a bounded time; an output
that is blocked or gets nothing through raises a ``sink_delivery_failure`` alert, written
like any other event (so the healthy outputs carry it).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from telltale.config.roots import ConfigRoots
from telltale.errors import ConfigError
from telltale.events.envelope import utc_now
from telltale.events.health import operational_alert
from telltale.pipeline import Scanner
from telltale.sinks.config import LoadedOutputs, build_sink, load_outputs, policy_of, selector
from telltale.sinks.outbox import Deliverer, DeliveryReport, SinkReport, status
from telltale.sinks.select import Selector


@dataclass
class Delivery:
    """The remote outputs of a run, loaded once."""

    loaded: LoadedOutputs

    @classmethod
    def load(cls, path: str | None, roots: ConfigRoots | None = None) -> Delivery:
        return cls(load_outputs(path, roots))

    @property
    def names(self) -> tuple[str, ...]:
        """The outputs fed from the outbox: remote ones and additional JSONL files."""
        return tuple(sorted(self.loaded.delivered()))

    def selectors(self) -> dict[str, Selector]:
        """What each output takes, for the outputs that do not take everything."""
        chosen = {name: selector(out) for name, out in self.loaded.delivered().items()}
        return {name: sel for name, sel in chosen.items() if not sel.everything}

    def check_paths(self, log_path: str) -> None:
        """An additional JSONL output may not be the local log itself."""
        for name, out in self.loaded.jsonl().items():
            path = os.path.abspath(os.path.expanduser(out.path))
            if os.path.realpath(path) == os.path.realpath(log_path):
                raise ConfigError(
                    f"{self.loaded.sources.get(name, ['outputs'])[-1]}: outputs.{name}.path: is the local log "
                    f"({log_path}); the local log is set by log_path, an additional jsonl output needs its own file"
                )

    def drain(
        self, state_path: str, *, seconds: float, stop: Callable[[], bool] | None = None
    ) -> DeliveryReport | None:
        """Deliver what is due for up to ``seconds`` (or until ``stop``); ``None`` when no
        output is fed from the outbox."""
        remote = self.loaded.delivered()
        if not remote:
            return None
        sinks = [build_sink(self.loaded, name, out) for name, out in sorted(remote.items())]
        policies = {name: policy_of(out) for name, out in remote.items()}
        deliverer = Deliverer(state_path, sinks, policies=policies)
        try:
            return deliverer.run_until_idle(time.time() + seconds, stop=stop)
        finally:
            deliverer.close()


def failure_alerts(report: DeliveryReport) -> list[dict[str, Any]]:
    observed = utc_now()
    run = uuid.uuid4().hex
    alerts = []
    for rep in report.failures:
        alerts.append(
            operational_alert(
                scan_id=run,
                alert_type="sink_delivery_failure",
                severity="high" if rep.blocked_reason else "warning",
                summary=f"output {rep.sink} is not receiving events"
                + (f" (blocked: {rep.blocked_reason})" if rep.blocked_reason else ""),
                observed_at=observed,
                fields={
                    "sink": rep.sink,
                    "blocked_reason": rep.blocked_reason,
                    "retried": rep.retried,
                    "rejected": rep.rejected,
                    "errors": dict(rep.errors),
                },
            )
        )
    return alerts


def deliver_after_scan(
    delivery: Delivery, scanner: Scanner, state_path: str, *, seconds: float, stop: Callable[[], bool] | None = None
) -> dict[str, Any]:
    """Drain the outbox (until idle, ``seconds`` or ``stop``), write alerts for failing
    outputs, return what the summary shows: per output sent, queued, state, reason and the
    command that fixes it, and how long delivery waited."""
    started = time.monotonic()
    report = delivery.drain(state_path, seconds=seconds, stop=stop)
    if report is None:
        return {}
    waited = time.monotonic() - started
    alerts = failure_alerts(report)
    if alerts:
        scanner.emit(alerts)
    queued = {row.sink: row.pending + row.retrying + row.blocked for row in status(state_path, delivery.names)}
    outputs: dict[str, dict[str, Any]] = {}
    for name in delivery.names:
        rep = report.sinks.get(name) or SinkReport(name)
        out: dict[str, Any] = {"sent": rep.acked, "queued": queued.get(name, 0), "state": "ok"}
        if rep.blocked_reason:
            out.update(state="blocked", reason=rep.blocked_reason, fix=_fix_blocked(name, rep.blocked_reason))
        elif rep.failed:
            reason = max(rep.errors, key=lambda k: rep.errors[k]) if rep.errors else "failed"
            out.update(state="failing", reason=reason,
                       fix=f"events stay queued and are retried next run; check {name}'s endpoint, then: "
                       "telltale delivery run")
        outputs[name] = out
    return {
        "delivered": report.acked,
        "queued": report.queued,
        "failing_outputs": [rep.sink for rep in report.failures],
        "outputs": outputs,
        "waited_s": round(waited, 3),
        "skipped": bool(stop and stop()),
    }


def _fix_blocked(name: str, reason: str) -> str:
    """What a person does about a blocked output (it gets nothing until the block is lifted)."""
    what = "its credentials (token)" if any(k in reason for k in ("401", "403", "auth", "token")) else (
        "its endpoint or configuration")
    return f"fix {what}, then: telltale delivery retry-blocked --sink {name}"
