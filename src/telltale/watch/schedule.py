"""When the next triggered scan may run: debounce after the first change, and a floor
between scans (``--debounce-ms``, ``--min-scan-interval-ms``).

Debounce is a fixed window opened by the first change after a scan, not a quiet period
that every further change extends: an agent streaming a long answer writes continuously,
and a trailing debounce would postpone its scan until it stopped. So a change is scanned
at most ``debounce + min_interval + scan time`` after it happened.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Coalescer:
    debounce: float
    min_interval: float
    #: Clock time the last scan finished (None: no scan yet).
    last_end: float | None = None
    #: Clock time of the first change not yet scanned (None: nothing pending).
    first_at: float | None = None

    def note(self, at: float) -> None:
        """A relevant change was seen at ``at``."""
        if self.first_at is None or at < self.first_at:
            self.first_at = at

    @property
    def pending(self) -> bool:
        return self.first_at is not None

    def ready_at(self) -> float | None:
        if self.first_at is None:
            return None
        ready = self.first_at + self.debounce
        if self.last_end is not None:
            ready = max(ready, self.last_end + self.min_interval)
        return ready

    def ready(self, now: float) -> bool:
        at = self.ready_at()
        return at is not None and now >= at

    def started(self) -> None:
        """A scan is starting: what was pending is being handled."""
        self.first_at = None

    def finished(self, at: float) -> None:
        self.last_end = at
