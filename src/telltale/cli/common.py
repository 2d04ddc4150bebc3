"""Options shared by ``scan`` and ``watch``, and the wiring from options to a Scanner."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from telltale.cli.clients import add_client_argument, check_names
from telltale.cli.paths import (
    default_log_path,
    default_state_dir,
    default_state_path,
    profile_log_path,
    profile_state_path,
)
from telltale.config.roots import add_config_root_arguments, roots_from_args
from telltale.discovery import DiscoveryOptions, DiscoveryResult, check_root, discover
from telltale.errors import UsageError
from telltale.events.envelope import ContentMode
from telltale.lock import LockHolder, writer_lock
from telltale.pipeline import POOL_MIN_BYTES, STDOUT_LOG, WINDOW_BYTES, Detector, Scanner, ScanOptions, StreamMemory
from telltale.placement import check_write_paths
from telltale.state import check_state_file, state_errors

if TYPE_CHECKING:  # the loader imports YAML and RE2: a no-change scan never needs them
    from telltale.delivery import Delivery
    from telltale.detect.loader import LoadIssue, RuleSet

__all__ = ["default_log_path", "default_state_dir", "default_state_path"]


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    value = text.strip().lower().removesuffix("b")
    try:
        if value and value[-1] in units:
            return int(float(value[:-1]) * units[value[-1]])
        return int(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 100M)") from exc


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # not Linux
        return max(os.cpu_count() or 1, 1)


def default_jobs() -> int:
    """``--jobs`` default: a worker per core beyond the one the scanning process keeps for
    detection and writing. On two cores that is one job: measured on a 2-core host, two
    workers beside the writer made a cold scan 0.6-1.0x as fast for +30% CPU (the workers'
    start-up and the batches' transfer are not paid back when three busy processes share two
    cores; docs/performance.md). At most ``MAX_DEFAULT_JOBS``: each worker holds its own
    ~30 MiB, and the one writer bounds the speed-up long before."""
    return max(min(cores() - 1, MAX_DEFAULT_JOBS), 1)


#: ``--jobs`` default on a host with many cores (a larger ``--jobs`` may still be given).
MAX_DEFAULT_JOBS = 8


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of processes: {text!r}") from None
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"--jobs must be between 1 and 256, not {value}")
    return value


def add_discovery_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        default=".",
        help="'.' (default) resolves stores from this host's environment; a directory is treated as a home "
        "directory or a fixture tree",
    )
    add_client_argument(parser)
    parser.add_argument(
        "--project-config",
        action="append",
        metavar="FILE",
        help="YAML project roots (repeatable; default: $TELLTALE_PROJECT_CONFIG, else ~/github and ~/projects)",
    )


def add_scan_arguments(parser: argparse.ArgumentParser) -> None:
    add_discovery_arguments(parser)
    parser.add_argument(
        "--log-path",
        help="JSONL event log (default: $TELLTALE_LOG_PATH, else the jsonl output of the outputs file, else "
        "events.jsonl in the user state dir). '-' writes the events to stdout and the summary to stderr; it "
        "reads the state but writes none: no cursor advances (the next scan reads the same records again), "
        "nothing is queued for remote outputs, nothing is indexed",
    )
    parser.add_argument("--state-path", help="state database (default: $TELLTALE_STATE_PATH or the user state dir)")
    parser.add_argument(
        "--content",
        choices=ContentMode.ALL,
        default=ContentMode.REDACTED,
        help="what activity events carry. none: ids, names, sizes and hashes only (no command, path, URL or "
        "text); redacted (default): commands, paths, URLs, tool arguments and cwd, redacted and cut to 2,048 "
        "characters, but message and tool-output text only as length and hash; full: that plus message and "
        "tool-output text, redacted and cut to 8,192 characters",
    )
    parser.add_argument("--dry-run", action="store_true", help="read and summarise; write nothing")
    parser.add_argument(
        "--allow-fixtures", action="store_true", help="allow an emitting scan of a checked-in fixture tree"
    )
    parser.add_argument(
        "--log-rotate-max-size", type=_size, default=100 << 20, metavar="SIZE",
        help="rotate the JSONL log when it would grow past SIZE (e.g. 100M, 1G; default 100M)",
    )
    parser.add_argument(
        "--log-rotate-keep", type=int, default=5, metavar="N", help="rotated log files kept (default 5)"
    )
    parser.add_argument(
        "--log-group",
        metavar="GROUP",
        help="group (name or id) of the log files Telltale creates, so a forwarder in that group can read "
        "them (mode 0640 in a 0750 directory)",
    )
    parser.add_argument("--rules", action="append", metavar="FILE", help="extra rule file (repeatable, additive)")
    parser.add_argument("--no-default-rules", action="store_true", help="do not load the default rule pack")
    add_sigma_argument(parser)
    parser.add_argument("--allowlist", action="append", metavar="FILE", help="allowlist file (repeatable)")
    parser.add_argument("--no-detect", action="store_true", help="emit activity only; run no rules")
    parser.add_argument(
        "--outputs",
        metavar="FILE",
        help="remote outputs (OTLP, Splunk HEC, Elasticsearch) YAML; default: outputs.yaml in the user config dir",
    )
    parser.add_argument(
        "--delivery-seconds",
        type=float,
        default=30.0,
        metavar="S",
        help="after each scan, deliver queued events to remote outputs for at most S seconds (default 30); "
        "what is not delivered stays queued for the next run or `telltale delivery run`",
    )
    parser.add_argument("--json", action="store_true", help="print the scan summary as JSON")
    parser.add_argument(
        "--jobs", type=_jobs, default=default_jobs(), metavar="N",
        help=f"worker processes that read, normalise and encode changed stores in parallel (default: the CPU "
        f"cores available minus the scanning process's own, at most 8: {default_jobs()} here); the scanning process "
        f"still runs detection and writes and commits everything in order. Used when at least two changed stores hold "
        f"{POOL_MIN_BYTES >> 20} MiB or more to read; 1: everything in the scanning process",
    )
    # Unread bytes from which the workers are used; small values exercise them in tests.
    parser.add_argument("--jobs-min-bytes", type=_size, default=POOL_MIN_BYTES, help=argparse.SUPPRESS)
    # Size of a write window in bytes of events; small values exercise crash recovery in tests.
    parser.add_argument("--window-bytes", type=_size, default=WINDOW_BYTES, help=argparse.SUPPRESS)
    add_config_root_arguments(parser)


def add_sigma_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sigma",
        action="append",
        metavar="FILE|DIR",
        help="Sigma rule file or directory (repeatable; needs the telltale[sigma] extra): process_creation, "
        "file_event/file_access and network_connection/proxy rules run on agent tool calls; a rule Telltale "
        "cannot evaluate is reported and not loaded",
    )


def sigma_ruleset(
    args: argparse.Namespace, rule_files: Sequence[str], *, include_default: bool, report: bool = True
) -> RuleSet:
    """Rule files plus ``--sigma`` rules; with ``report``, each Sigma rule not loaded gets one
    line on stderr."""
    from telltale.detect.loader import load_rule_files
    from telltale.detect.sigma.load import add_sigma
    from telltale.events.redaction import redact

    ruleset = load_rule_files(rule_files, include_default=include_default)
    for issue in add_sigma(ruleset, tuple(getattr(args, "sigma", None) or ())):
        if report and issue.level == "warning":
            print(redact(f"telltale: sigma: {issue}"), file=sys.stderr)
    return ruleset


def add_threshold_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scanner-error-threshold", type=int, default=10, metavar="N",
        help="raise a scanner_error_threshold_exceeded alert when N or more sources fail in one scan "
        "(default 10; 0: never)",
    )
    parser.add_argument(
        "--scan-duration-threshold-seconds", type=float, default=300.0, metavar="S",
        help="raise a scan_duration_threshold_exceeded alert when a scan takes longer than S seconds "
        "(default 300; 0: never)",
    )


def discovery_options(args: argparse.Namespace) -> DiscoveryOptions:
    clients = check_names(args.client or ())
    check_root(args.root)
    return DiscoveryOptions(
        root=args.root,
        clients=clients,
        project_configs=tuple(args.project_config or ()),
        # The system profile watches every local account's home (DECISIONS #22).
        user_homes=getattr(args, "profile", None) == "system" and args.root == ".",
    )


def pack_inputs(args: argparse.Namespace) -> Any:
    """The effective pack's files: ``rules.d``, ``overrides.d``, ``policies.d`` and
    ``allowlists.d`` of the configuration roots, then ``--rules`` and ``--allowlist``."""
    from telltale.config.roots import roots_from_args
    from telltale.detect.inputs import inputs_from_roots

    return inputs_from_roots(
        roots_from_args(args),
        rule_files=tuple(getattr(args, "rules", None) or ()),
        allowlist_files=tuple(getattr(args, "allowlist", None) or ()),
        sigma_files=tuple(getattr(args, "sigma", None) or ()),
        include_default=not getattr(args, "no_default_rules", False),
    )


def load_pack(args: argparse.Namespace) -> Any:
    """The effective pack, its notices printed (a user rule replacing a default one);
    raises ``ConfigError`` (exit 2) on any error in it."""
    from telltale.detect.pack import load_pack as load
    from telltale.events.redaction import redact

    pack = load(pack_inputs(args))
    for issue in pack.sigma_issues:
        if issue.level == "warning":
            print(redact(f"telltale: sigma: {issue}"), file=sys.stderr)  # a Sigma rule reported, not loaded
    pack.raise_for_errors()
    for notice in pack.notices():
        print(f"telltale: {notice}", file=sys.stderr)
    return pack


def load_detector(args: argparse.Namespace, *, for_good: bool = False) -> Detector | None:
    """The scan's detector (``None``: ``--no-detect``); ``for_good``: it lives as long as
    the process (a scan, not a watch that reloads its rules), so the collector may leave
    its objects alone once built (``detect.lazy.building``)."""
    if getattr(args, "no_detect", False):
        return None
    # The compiled pack is cached beside the state (not in a dry run: it writes nothing).
    inputs = pack_inputs(args)
    if not inputs.customised:
        # Only the shipped pack: compiled when a changed source is about to be read.
        from telltale.detect.lazy import LazyDetector

        def build() -> Detector:
            from telltale.detect import cache
            from telltale.detect.engine import DetectionEngine

            with cache.using(_pack_cache_path(args)):  # the state's directory exists by now
                return DetectionEngine.load()

        return LazyDetector(build, for_good=for_good)
    from telltale.detect import cache
    from telltale.detect.engine import DetectionEngine
    from telltale.detect.lazy import building

    # Local rules, tuning or allowlists: built now, so an error in them stops the run before
    # anything is scanned.
    with cache.using(_pack_cache_path(args)), building(for_good=for_good):
        engine = DetectionEngine.from_pack(load_pack(args))
    # Without a rule the engine could only walk every batch for nothing.
    return None if engine.empty else engine


def _pack_cache_path(args: argparse.Namespace) -> str | None:
    """``rules.cache`` in the state's directory, when that directory exists (it is created,
    0700, by the state store; the cache never creates it); none in a dry run."""
    if getattr(args, "dry_run", False):
        return None
    state = os.path.abspath(os.path.expanduser(getattr(args, "state_path", None) or default_state_path()))
    directory = os.path.dirname(state)
    return os.path.join(directory, "rules.cache") if os.path.isdir(directory) else None


def load_delivery(args: argparse.Namespace) -> Delivery | None:
    """The outputs: ``--outputs FILE`` alone, else every root's outputs.yaml and outputs.d/ merged;
    ``None`` when no outputs file exists anywhere (the sinks are then never imported)."""
    path = getattr(args, "outputs", None)
    roots = roots_from_args(args)
    if path is None and not roots.files("outputs.yaml") and not roots.dropins("outputs.d"):
        return None
    from telltale.delivery import Delivery

    return Delivery.load(path, roots)


def is_stdout_log(args: argparse.Namespace) -> bool:
    """``--log-path -``: events to stdout, nothing written to the state."""
    return bool(getattr(args, "log_path", None) == STDOUT_LOG)


def scan_options(args: argparse.Namespace, delivery: Delivery | None = None, **extra: Any) -> ScanOptions:
    """The scan's options. The local log's path and rotation come from flags, environment and
    config.yaml only; outputs (a ``jsonl`` one included) are fed from the outbox. ``--log-path -``
    and ``--history all`` feed no output (DECISIONS "Outputs and the local log")."""
    profile = getattr(args, "profile", None) or "user"
    stream = is_stdout_log(args)
    log_path = STDOUT_LOG if stream else os.path.abspath(os.path.expanduser(args.log_path or profile_log_path(profile)))
    feed = delivery is not None and not (args.dry_run or stream or extra.get("history_all"))
    if feed:
        assert delivery is not None
        delivery.check_paths(log_path)
        from telltale.sinks.content import check_content

        check_content(delivery.loaded.delivered(), args.content)
    return ScanOptions(
        log_path=log_path,
        state_path=os.path.abspath(os.path.expanduser(args.state_path or profile_state_path(profile))),
        content=args.content,
        dry_run=args.dry_run,
        allow_fixtures=args.allow_fixtures,
        log_rotate_max_size=args.log_rotate_max_size,
        log_rotate_keep=args.log_rotate_keep,
        log_group=_group_id(args.log_group),
        window_bytes=args.window_bytes,
        jobs=args.jobs,
        pool_min_bytes=args.jobs_min_bytes,
        remote_sinks=delivery.names if feed and delivery is not None else (),
        sink_selectors=delivery.selectors() if feed and delivery is not None else {},
        account_homes=_account_homes(args),
        **extra,
    )


def _account_homes(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """The system profile's (home, account) pairs, for events about stores that are gone."""
    if getattr(args, "profile", None) != "system" or args.root != ".":
        return ()
    from telltale.discovery.accounts import scanned_homes

    return tuple((home.home, home.user) for home in scanned_homes(os.environ))


def _group_id(group: str | None) -> int | None:
    """A ``--log-group`` as a numeric id; an unknown group is a usage error (exit 2)."""
    if group is None:
        return None
    if group.isdigit():
        return int(group)
    try:
        import grp
    except ImportError:  # Windows: no POSIX groups
        raise UsageError("--log-group: POSIX groups are not available on this platform") from None
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise UsageError(f"--log-group: no group named {group!r}") from None


def _below(path: str, directory: str) -> bool:
    """Whether ``path`` is lexically inside ``directory`` (both as discovery made them)."""
    return path.startswith(os.path.join(directory, ""))


def checked_discovery(args: argparse.Namespace, options: ScanOptions) -> DiscoveryResult:
    """Discover, then apply the emitting-scan fixture guard and the path-placement rule."""
    result = discover(discovery_options(args))
    if result.fixture_tree and not options.dry_run and not options.allow_fixtures:
        raise UsageError(
            f"{args.root} is a checked-in fixture tree; an emitting scan of it needs --allow-fixtures "
            "(or use --dry-run)"
        )
    if not options.dry_run and options.log_path != STDOUT_LOG:
        stores = [r.path for r in result.store_roots]
        stores += result.pending_roots  # where a store may appear (and a watch looks)
        # A source's own directory only when it is not below its store root (which is
        # listed, and holds everything below it: one ``stat`` each, not one per session).
        stores += sorted({os.path.dirname(s.path) for s in result.sources if not _below(s.path, s.store_root)})
        check_write_paths(options.state_path, options.log_path, stores=stores)
        check_state_file(options.state_path)  # not a database: exit 1 before the lock is created
    return result


def _not_loaded(detector: Detector | None) -> list[LoadIssue]:
    """The rules of the detector's rule set that were reported and not loaded (Sigma)."""
    ruleset = getattr(detector, "ruleset", None)
    if ruleset is None:  # no detector, or the default pack not built yet (LazyDetector)
        return []
    from telltale.detect.loader import RuleSet
    from telltale.detect.sigma.load import NOT_LOADED

    if not isinstance(ruleset, RuleSet):
        return []
    return [i for i in ruleset.issues if i.level == "warning" and i.message.startswith(NOT_LOADED)]


def make_scanner(
    options: ScanOptions,
    detector: Detector | None,
    *,
    progress: Callable[[str, int], None] | None = None,
    extra_events: Any = None,
    stream: StreamMemory | None = None,
) -> Scanner:
    not_loaded = _not_loaded(detector)
    if not_loaded:
        from telltale.detect.sigma.health import not_loaded_hook

        extra_events = not_loaded_hook(not_loaded, extra_events)
    return Scanner(options, detector=detector, progress=progress, extra_events=extra_events, stream=stream)


def is_tty(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def add_wait_lock_argument(parser: argparse.ArgumentParser, *, loop: bool = False) -> None:
    extra = " (--interval-seconds: each scan waits as long as it takes unless this is given)" if loop else ""
    parser.add_argument(
        "--wait-lock",
        type=float,
        metavar="SECONDS",
        help="when another writer holds the state, wait up to SECONDS for it (printing who holds it) instead "
        f"of exiting 75 at once{extra}",
    )


@contextlib.contextmanager
def state_lock(
    state_path: str,
    command: str,
    *,
    dry_run: bool = False,
    wait: float | None = 0.0,
    stop: Callable[[], bool] | None = None,
    on_wait: Callable[[], None] | None = None,
) -> Iterator[None]:
    """Hold the state's writer lock for one run (or one loop iteration); a dry run takes none.
    ``on_wait`` is called when another writer holds it and this run waits."""
    if dry_run:
        with state_errors(state_path):
            yield
        return

    def waiting(holder: LockHolder | None) -> None:
        who = holder.describe() if holder is not None else "another process"
        limit = "" if wait is None else f" (up to {wait:g}s)"
        print(f"telltale: state {state_path} is in use by {who}; waiting{limit}", file=sys.stderr, flush=True)
        if on_wait is not None:
            on_wait()

    with writer_lock(state_path, command, wait=wait, on_wait=waiting, stop=stop), state_errors(state_path):
        yield
