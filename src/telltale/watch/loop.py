"""The watch loop: one full scan, then targeted scans of what changed.

Wake-ups come from three places, all feeding one pending set:

* native notifications (:mod:`telltale.watch.native`), classified by path name alone
  (:mod:`telltale.watch.paths`): a changed known source is scanned on its own, a new or
  removed path makes the loop rediscover first;
* metadata sampling (:mod:`telltale.watch.sampler`) of indexed SQLite stores (macOS,
  ``--poll``) and, with ``--poll`` or past ``--max-watches``, of transcripts and
  directories;
* an optional periodic full rescan (``--rescan-interval-seconds``), the safety net for
  anything the others missed.

A :class:`~telltale.watch.schedule.Coalescer` turns bursts into one scan. Between scans
the loop blocks on the inbox with a timeout set to the next deadline (debounce, sampler
turn, rescan); with nothing pending and no sampling it blocks indefinitely, so an idle
watch costs no CPU beyond the notifier thread's 50 ms step.

The loop never reads a store itself: scanning, state and output stay in the pipeline
(``scan`` callable), so a watch-triggered scan is exactly a scan of fewer sources.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from telltale.discovery.api import DiscoveryIssue, DiscoveryResult
from telltale.errors import ConfigError
from telltale.events.envelope import path_hash
from telltale.events.health import operational_alert
from telltale.sources.spec import Source
from telltale.state import WindowCommit
from telltale.watch.native import (
    DEFAULT_MAX_WATCHES,
    Drained,
    Inbox,
    NativeWatcher,
    NotifyFactory,
    WatchPlan,
    anchor_directories,
    plan_watches,
)
from telltale.watch.paths import PathFilter, is_sqlite_kind
from telltale.watch.sampler import (
    DEFAULT_RATE,
    REJECTED,
    MetadataSampler,
    directory_item,
    file_item,
    signature,
    sqlite_item,
)
from telltale.watch.schedule import Coalescer

#: Discover-and-subscribe rounds before the watch set is taken as it is.
SETTLE_ATTEMPTS = 3
#: Items per second the transcript/directory sampler may stat (``--poll-rate``).
DEFAULT_POLL_RATE = 256

# Trigger names, as reported in each scan's summary line.
INITIAL = "initial"
NATIVE = "native"
SAMPLE = "sample"
REDISCOVERY = "rediscovery"
CONSERVATIVE = "conservative"
RESCAN = "rescan"


@dataclass(frozen=True)
class WatchConfig:
    debounce: float = 0.5
    min_interval: float = 2.0
    #: Stop after this many triggered scans (the initial full scan does not count).
    iterations: int | None = None
    max_watches: int = DEFAULT_MAX_WATCHES
    #: ``--poll``: sample SQLite pairs, transcripts and directories on every platform.
    poll: bool = False
    #: Subscribe to native notifications (``--no-native`` turns them off: sampling only).
    native: bool = True
    #: Sample indexed SQLite stores (the macOS open-WAL fallback; on by default there).
    sample_sqlite: bool = sys.platform == "darwin"
    sqlite_rate: int = DEFAULT_RATE
    poll_rate: int = DEFAULT_POLL_RATE
    #: Seconds between periodic full rescans; 0 disables them.
    rescan_interval: float = 0.0


@dataclass
class ScanRequest:
    """What the loop asks the pipeline for."""

    sources: list[Source]
    targeted: bool
    triggers: list[str]
    iteration: int
    discovery_errors: list[dict[str, str]] = field(default_factory=list)


class AlertQueue:
    """Operational alerts raised between scans, written with the next scan's events.

    :meth:`hook` wraps the pipeline's ``extra_events`` step (the inventory), so an alert is
    committed in the same window as that scan's summary, and dropped from the queue only
    once committed.
    """

    def __init__(self, watch_id: str | None = None) -> None:
        self.watch_id = watch_id or uuid.uuid4().hex
        self._queued: list[tuple[str, str, str, str, dict[str, Any]]] = []

    def add(self, alert_type: str, severity: str, summary: str, fields: dict[str, Any]) -> None:
        self._queued.append((uuid.uuid4().hex, alert_type, severity, summary, {**fields, "watch_id": self.watch_id}))

    def __len__(self) -> int:
        return len(self._queued)

    def hook(self, inner: Callable[..., Any] | None) -> Callable[[Any, str], tuple[list[dict[str, Any]], Any]]:
        def events(state: Any, observed: str) -> tuple[list[dict[str, Any]], Any]:
            docs: list[dict[str, Any]] = []
            inner_commit: Callable[[Any], None] | None = None
            if inner is not None:
                docs, inner_commit = inner(state, observed)
                docs = list(docs)
            sent = list(self._queued)
            for alert_id, alert_type, severity, summary, fields in sent:
                docs.append(
                    operational_alert(
                        scan_id=alert_id, alert_type=alert_type, severity=severity, summary=summary,
                        observed_at=observed, fields=fields,
                    )
                )
            if not sent:
                return docs, inner_commit

            def commit(conn: Any) -> None:
                if inner_commit is not None:
                    inner_commit(conn)
                for entry in sent:
                    if entry in self._queued:
                        self._queued.remove(entry)

            # The inner step's state still travels with the window's intent.
            return docs, WindowCommit(dict(getattr(inner_commit, "meta", {})), commit)

        return events


def issue_dicts(issues: Iterable[DiscoveryIssue]) -> list[dict[str, str]]:
    return [{"reason": i.reason, "path_hash": path_hash(i.path)} for i in issues]


class WatchSession:
    """Runs the loop; see the module docstring. ``run`` returns the exit code."""

    def __init__(
        self,
        config: WatchConfig,
        *,
        discover: Callable[[], DiscoveryResult],
        scan: Callable[[ScanRequest], Any],
        warn: Callable[[str], None] = lambda msg: print(f"telltale: watch: {msg}", file=sys.stderr),
        alerts: AlertQueue | None = None,
        changed: Callable[[Sequence[Source]], list[Source]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        notify_factory: NotifyFactory | None = None,
    ) -> None:
        self.config = config
        self.discover = discover
        self.scan = scan
        self.warn = warn
        self.alerts = alerts if alerts is not None else AlertQueue()
        #: Which of some sources changed since their last committed scan (the pipeline's
        #: stat fingerprints); None scans every targeted source.
        self.changed = changed
        self.clock = clock
        self.notify_factory = notify_factory
        self.inbox = Inbox(clock=clock)
        self.coalescer = Coalescer(config.debounce, config.min_interval)
        self.sqlite_sampler = MetadataSampler(config.sqlite_rate, clock=clock)
        self.file_sampler = MetadataSampler(config.poll_rate, clock=clock)
        #: Triggered scans run so far.
        self.iterations = 0
        self._native: NativeWatcher | None = None
        self._native_dirs: set[str] | None = None
        self._degraded = False
        self._partial_warned = False
        self._limited = False
        self._plan = WatchPlan(limit=config.max_watches)
        self._sources: dict[str, Source] = {}
        self._filter = PathFilter((), {})
        self._issues: set[DiscoveryIssue] = set()
        self._rejected: set[str] = set()
        # pending work
        self._targets: dict[str, set[str]] = {}
        self._rediscover = False
        self._full = False
        self._reasons: set[str] = set()
        self._next_rescan: float | None = None

    # -- public ------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Stop after the scan in progress (if any) has written and committed."""
        self.inbox.stop()

    @property
    def plan(self) -> WatchPlan:
        return self._plan

    @property
    def sources(self) -> dict[str, Source]:
        return dict(self._sources)

    def run(self, first: DiscoveryResult | None = None) -> int:
        """``first``: a discovery already made by the caller (saves walking the stores twice)."""
        try:
            result = self._settle(first)
            self._index(result, initial=True)
            self._report_issues(result.errors)
            self._run_scan(list(result.sources), targeted=False, triggers=[INITIAL],
                           errors=issue_dicts(result.errors), counted=False)
            self._schedule_rescan()
            return self._loop()
        finally:
            if self._native is not None:
                self._native.stop()
                self._native = None

    # -- the loop ----------------------------------------------------------------------
    def _loop(self) -> int:
        limit = self.config.iterations
        if limit is not None and limit <= 0:
            return 0
        while True:
            self.inbox.wait(self._timeout())
            drained = self.inbox.drain()
            if drained.stopped:
                return 0
            self._absorb(drained)
            self._sample()
            if self._next_rescan is not None and self.clock() >= self._next_rescan:
                self._full = True
                self._reasons.add(RESCAN)
                self.coalescer.note(self.clock())
                self._next_rescan = None
            if self.coalescer.ready(self.clock()) and self._run_pending() and limit is not None \
                    and self.iterations >= limit:
                return 0

    def _timeout(self) -> float | None:
        now = self.clock()
        deadlines = [
            t for t in (
                self.coalescer.ready_at(),
                self.sqlite_sampler.next_due(),
                self.file_sampler.next_due(),
                self._next_rescan,
            ) if t is not None
        ]
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - now)

    def _absorb(self, drained: Drained) -> None:
        at = drained.first_at if drained.first_at is not None else self.clock()
        if drained.errors:
            self._degrade(f"native notifications failed ({drained.errors[0]})")
            self._want_full(at)
        if drained.overflow:
            self.warn("more changes than the inbox holds; rescanning every source")
            self._want_full(at)
        if not drained.changes:
            return
        targets, rediscover = self._filter.targets(drained.changes)
        for path in targets:
            self._want(path, NATIVE, at)
        if rediscover:
            self._rediscover = True
            self._reasons.add(REDISCOVERY)
            self.coalescer.note(at)

    def _sample(self) -> None:
        now = self.clock()
        for key in self.sqlite_sampler.sample():
            if key in self._sources:
                self._want(key, SAMPLE, now)
        for key in self.file_sampler.sample():
            if key in self._sources:
                self._want(key, SAMPLE, now)
            else:  # a directory's entries changed
                self._rediscover = True
                self._reasons.update((SAMPLE, REDISCOVERY))
                self.coalescer.note(now)

    def _want(self, path: str, reason: str, at: float) -> None:
        self._targets.setdefault(path, set()).add(reason)
        self._reasons.add(reason)
        self.coalescer.note(at)

    def _want_full(self, at: float) -> None:
        self._full = True
        self._reasons.add(RESCAN)
        self.coalescer.note(at)

    def _schedule_rescan(self) -> None:
        if self.config.rescan_interval > 0:
            self._next_rescan = self.clock() + self.config.rescan_interval

    def _run_pending(self) -> bool:
        """Run the pending scan; False when it turned out to have nothing to scan."""
        targets, reasons = self._targets, self._reasons
        rediscover, full = self._rediscover, self._full
        self._targets, self._reasons = {}, set()
        self._rediscover = self._full = False
        self.coalescer.started()
        errors: list[dict[str, str]] = []
        new_sqlite: list[str] = []
        result: DiscoveryResult | None = None
        if rediscover or full:
            try:
                result = self._settle()
            except ConfigError as exc:
                # A project config edited into a bad state while watching: keep watching
                # what is known and retry on the next change. (Other usage errors, such as
                # state now inside a store, still stop the watch.)
                self.warn(f"rediscovery skipped: {exc}")
                full = False
        if result is not None:
            before = set(self._sources)
            new_sqlite = self._index(result, initial=False)
            self._report_issues(result.errors)
            errors = issue_dicts(result.errors)
            if full:
                selection = list(result.sources)
            else:
                added = [s for s in result.sources if s.path not in before]
                fresh = {s.path for s in added}
                selection = added + [self._sources[p] for p in targets if p in self._sources and p not in fresh]
        else:
            selection = [self._sources[p] for p in targets if p in self._sources]
        if not full and self.changed is not None and selection:
            # Events that changed nothing (metadata touched by our own reads of a live
            # SQLite store, a chmod) cost no scan. A conservative scan is never skipped.
            conservative = {p for p, why in targets.items() if CONSERVATIVE in why}
            changed = {s.path for s in self.changed([s for s in selection if s.path not in conservative])}
            selection = [s for s in selection if s.path in changed or s.path in conservative]
        if not selection and not full:
            return False
        selection.sort(key=Source.sort_key)
        self._run_scan(selection, targeted=not full, triggers=sorted(reasons), errors=errors, counted=True)
        if full:
            self._schedule_rescan()
        # WATCH-17: a store indexed after start gets one more, conservative scan.
        now = self.clock()
        for path in new_sqlite:
            self._want(path, CONSERVATIVE, now)
        return True

    def _run_scan(
        self, sources: list[Source], *, targeted: bool, triggers: list[str], errors: list[dict[str, str]],
        counted: bool,
    ) -> None:
        # Baselines before acquisition, never after (WATCH-11).
        paths = [s.path for s in sources]
        self.sqlite_sampler.baseline(paths)
        self.file_sampler.baseline(paths)
        if counted:
            self.iterations += 1
        self.scan(
            ScanRequest(
                sources=sources, targeted=targeted, triggers=triggers, iteration=self.iterations,
                discovery_errors=errors,
            )
        )
        self.coalescer.finished(self.clock())

    # -- discovery, watches and the sampling index ----------------------------------------
    def _settle(self, first: DiscoveryResult | None = None) -> DiscoveryResult:
        """Discover, subscribe the directories, and discover again if the set changed.

        The second discovery runs once the new watches are live, so a file created in a
        new directory before its watch existed is still found.
        """
        result = first if first is not None else self.discover()
        plan = plan_watches(result.store_roots, self.config.max_watches, anchor_directories(result.pending_roots))
        for attempt in range(SETTLE_ATTEMPTS):
            if self._degraded or not self.config.native or self._native_dirs == set(plan.directories):
                break
            self._swap_native(plan.directories, tolerant=attempt == SETTLE_ATTEMPTS - 1)
            result = self.discover()
            plan = plan_watches(
                result.store_roots, self.config.max_watches, anchor_directories(result.pending_roots)
            )
        self._plan = plan
        self._check_limit(plan)
        return result

    def _swap_native(self, directories: Sequence[str], *, tolerant: bool) -> None:
        """Start the new watcher before stopping the old one, so no change falls between."""
        watcher = NativeWatcher(directories, self.inbox, self.notify_factory)
        try:
            watcher.start(tolerant=tolerant)
        except FileNotFoundError:
            # A directory vanished between the walk and the subscription (or the OS
            # refused a watch; watchfiles reports both this way): the caller re-plans.
            watcher.stop()
            self._native_dirs = None
            return
        except Exception as exc:
            watcher.stop()
            self._degrade(f"native notifications unavailable ({type(exc).__name__})")
            return
        if watcher.partial and not self._partial_warned:
            self._partial_warned = True
            self.warn("some store directories could not be watched (unreadable or vanished); they are covered "
                      "by rediscovery when their parent changes")
        old, self._native = self._native, watcher
        self._native_dirs = set(directories)
        if old is not None:
            old.stop()

    def _degrade(self, why: str) -> None:
        if self._degraded:
            return
        self._degraded = True
        if self._native is not None:
            self._native.stop()
            self._native = None
        self._native_dirs = None
        self.warn(f"{why}; falling back to metadata sampling of every indexed file and directory")
        self.alerts.add(
            "native_watch_unavailable", "warning", f"watch: {why}; sampling metadata instead",
            {"reason": why},
        )

    def _check_limit(self, plan: WatchPlan) -> None:
        if plan.limited and not self._limited and not self._degraded:
            self.warn(
                f"watch limit reached: {len(plan.directories)} of {plan.total} directories watched natively "
                f"(--max-watches {plan.limit}); the other {len(plan.unwatched)} are sampled instead"
            )
            self.alerts.add(
                "watch_limit_reached", "warning",
                f"watch limit reached: {len(plan.unwatched)} of {plan.total} directories not watched natively",
                {"max_watches": plan.limit, "directories": plan.total, "unwatched": len(plan.unwatched)},
            )
        self._limited = plan.limited

    def _index(self, result: DiscoveryResult, *, initial: bool) -> list[str]:
        """Remember the sources, rebuild the path filter and the sampling index.

        Returns the SQLite stores newly indexed for sampling after start (WATCH-17).
        """
        self._sources = {s.path: s for s in result.sources}
        self._filter = PathFilter(
            result.store_roots, {s.path: s.kind for s in result.sources}, result.pending_roots
        )
        plan = self._plan
        sample_all = self.config.poll or self._degraded or not self.config.native
        sample_sqlite = self.config.sample_sqlite or sample_all
        unwatched = set(plan.unwatched) if not sample_all else set()
        new_sqlite: list[str] = []
        sqlite_keys: list[str] = []
        file_keys: list[str] = []
        for source in result.sources:
            uncovered = sample_all or os.path.dirname(source.path) in unwatched
            if is_sqlite_kind(source.kind):
                if not (sample_sqlite or uncovered):
                    continue
                item = sqlite_item(source.path)
                if source.path not in self.sqlite_sampler and signature(item, source.path) == REJECTED:
                    # WATCH-13/18: a linked component or a non-regular leaf is never sampled.
                    if source.path not in self._rejected:
                        self._rejected.add(source.path)
                        self.warn(f"not sampling {source.path}: a path component is a symbolic link")
                    continue
                if self.sqlite_sampler.add(item) and not initial:
                    new_sqlite.append(source.path)
                sqlite_keys.append(source.path)
            elif uncovered:
                self.file_sampler.add(file_item(source.path, source.store_root))
                file_keys.append(source.path)
        directories = plan.directories + plan.unwatched if sample_all else plan.unwatched
        for directory in directories:
            self.file_sampler.add(directory_item(directory, plan.owner.get(directory, directory)))
            file_keys.append(directory)
        self.sqlite_sampler.retain(sqlite_keys)
        self.file_sampler.retain(file_keys)
        return new_sqlite

    def _report_issues(self, issues: Iterable[DiscoveryIssue]) -> None:
        current = set(issues)
        for issue in sorted(current - self._issues, key=lambda i: (i.path, i.reason)):
            self.warn(f"discovery: {issue.reason}: {issue.path}")
        self._issues = current
