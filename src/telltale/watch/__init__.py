"""``telltale watch``: near-real-time, targeted scans driven by file-system events.

See ``docs/watch.md``. The pieces: :mod:`.paths` (event classification by name),
:mod:`.native` (directories to watch, the notifier thread), :mod:`.sampler` (metadata
sampling fallback), :mod:`.schedule` (debounce and minimum interval), :mod:`.loop`.
"""

from telltale.watch.loop import AlertQueue, ScanRequest, WatchConfig, WatchSession
from telltale.watch.native import DEFAULT_MAX_WATCHES, WatchPlan, plan_watches
from telltale.watch.paths import Action, Decision, PathFilter
from telltale.watch.sampler import MetadataSampler

__all__ = [
    "DEFAULT_MAX_WATCHES",
    "Action",
    "AlertQueue",
    "Decision",
    "MetadataSampler",
    "PathFilter",
    "ScanRequest",
    "WatchConfig",
    "WatchPlan",
    "WatchSession",
    "plan_watches",
]
