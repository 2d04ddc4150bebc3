"""Remote delivery around a scan: which outputs get events, and draining them afterwards.

The local JSONL write stays first and durable; remote outputs receive the same events
from the outbox in the state database (enqueued in the commit that advances cursors, see
:mod:`telltale.pipeline`). After a scan the outbox is drained for a bounded time; an output
that is blocked or gets nothing through raises a ``sink_delivery_failure`` alert, written
like any other event (so the healthy outputs carry it).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from telltale.events.envelope import utc_now
from telltale.events.health import operational_alert
from telltale.pipeline import Scanner
from telltale.sinks.config import LoadedOutputs, build_sink, load_outputs, policy_of
from telltale.sinks.outbox import Deliverer, DeliveryReport


@dataclass
class Delivery:
    """The remote outputs of a run, loaded once."""

    loaded: LoadedOutputs

    @classmethod
    def load(cls, path: str | None) -> Delivery:
        return cls(load_outputs(path))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.loaded.remote()))

    def jsonl_override(self) -> tuple[str | None, int | None, int | None]:
        """Path and rotation of a ``jsonl`` output, used when ``--log-path`` is not given."""
        for out in self.loaded.jsonl().values():
            rotation = getattr(out, "rotation", None)
            return (
                str(out.path),
                getattr(rotation, "max_bytes", None) if rotation else None,
                getattr(rotation, "max_files", None) if rotation else None,
            )
        return None, None, None

    def drain(self, state_path: str, *, seconds: float) -> DeliveryReport | None:
        """Deliver what is due for up to ``seconds``; ``None`` when no remote output exists."""
        remote = self.loaded.remote()
        if not remote:
            return None
        sinks = [build_sink(self.loaded, name, out) for name, out in sorted(remote.items())]
        policies = {name: policy_of(out) for name, out in remote.items()}
        deliverer = Deliverer(state_path, sinks, policies=policies)
        try:
            return deliverer.run_until_idle(time.time() + seconds)
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


def deliver_after_scan(delivery: Delivery, scanner: Scanner, state_path: str, *, seconds: float) -> dict[str, Any]:
    """Drain the outbox, write alerts for failing outputs, return a summary for the CLI."""
    report = delivery.drain(state_path, seconds=seconds)
    if report is None:
        return {}
    alerts = failure_alerts(report)
    if alerts:
        scanner.emit(alerts)
    return {
        "delivered": report.acked,
        "queued": report.queued,
        "failing_outputs": [rep.sink for rep in report.failures],
    }
