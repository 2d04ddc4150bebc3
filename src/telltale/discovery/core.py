"""``discover()``: roots and config in, sorted sources and watchable store roots out.

Three modes, chosen from ``DiscoveryOptions.root``:

* ``"."`` (the literal): environment-resolved host discovery (HOME, CODEX_HOME,
  XDG_DATA_HOME, CLAUDE_CONFIG_DIR, COPILOT_HOME, OPENCODE_DB...);
* a fixture tree (see :mod:`telltale.discovery.fixtures`): each spec's
  ``fixture_relative_path`` below the root, no host resolution at all;
* any other directory: treated as the home directory, environment ignored;
* ``"."`` with ``user_homes`` (the system profile): once per local account's home from the
  account database (:mod:`telltale.discovery.accounts`), each source tagged with its
  account; the environment's store variables are not read.

Project-local stores are searched below project roots in every mode (additively).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence

import msgspec

from telltale.discovery.accounts import SCANNED, host_accounts, select_homes
from telltale.discovery.api import (
    DiscoveryIssue,
    DiscoveryOptions,
    DiscoveryResult,
    ProbedPlace,
    StoreRoot,
    UserHome,
)
from telltale.discovery.editors import EDITORS, editor_user_dirs, resolve_below
from telltale.discovery.fixtures import is_fixture_tree
from telltale.discovery.locate import LocatorContext, load_locator
from telltale.discovery.opencode import OPENCODE_KIND, discover_environment, discover_explicit
from telltale.discovery.projects import (
    PROJECT_CONFIG_ENV,
    ProjectRoot,
    project_store_dirs,
    resolve_project_roots,
)
from telltale.discovery.roots import (
    EnvView,
    Flavour,
    Platform,
    RootSet,
    account_roots,
    current_platform,
    environment_roots,
    explicit_roots,
    parse_platform,
    resolve_home,
)
from telltale.discovery.walk import Probe, WalkTarget, walk_store
from telltale.errors import UsageError
from telltale.sources import registry
from telltale.sources.spec import RootType, Source, SourceSpec


class _Collector:
    """Accumulates sources and store roots; merges roots watched for several kinds."""

    def __init__(self, flavour: Flavour) -> None:
        self.flavour = flavour
        self.sources: list[Source] = []
        self._roots: dict[str, StoreRoot] = {}
        self.pending: dict[str, str] = {}
        self.probed: list[ProbedPlace] = []

    def add_root(self, root: StoreRoot) -> None:
        key = self.flavour.key(root.path)
        prior = self._roots.get(key)
        if prior is None:
            self._roots[key] = root
            return
        kinds = tuple(dict.fromkeys((*prior.kinds, *root.kinds)))
        exact: tuple[str, ...] = ()
        if prior.exact_files and root.exact_files:
            exact = tuple(sorted({*prior.exact_files, *root.exact_files}))
        self._roots[key] = StoreRoot(
            path=prior.path,
            recursive=prior.recursive or root.recursive,
            kinds=kinds,
            exact_files=exact,
        )

    def walk_groups(self, probe: Probe, pairs: Iterable[tuple[str, WalkTarget]]) -> None:
        """Walk each directory once for every target searched below it."""
        groups: dict[str, tuple[str, list[WalkTarget]]] = {}
        for directory, target in pairs:
            key = self.flavour.key(directory)
            if key not in groups:
                groups[key] = (directory, [])
            targets = groups[key][1]
            if all(t.spec.kind != target.spec.kind for t in targets):
                targets.append(target)
        for directory, targets in groups.values():
            issues_before = len(probe.issues)
            outcome = walk_store(probe, directory, targets)
            self.probed.append(
                ProbedPlace(
                    path=directory,
                    kinds=tuple(t.spec.kind for t in targets),
                    status=probe_status(directory, outcome.present, bool(outcome.sources),
                                        probe.issues[issues_before:]),
                    found_by=targets[0].found_by,
                )
            )
            self.sources.extend(outcome.sources)
            if not outcome.present and probe.stat(directory) is None:
                self.pending[self.flavour.key(directory)] = directory
            if outcome.present:
                self.add_root(
                    StoreRoot(
                        path=directory,
                        recursive=any(t.spec.recursive for t in targets),
                        kinds=tuple(t.spec.kind for t in targets),
                    )
                )

    def tag_user(self, start: int, user: str) -> None:
        """Mark the sources found since ``start`` as found in ``user``'s home."""
        self.sources[start:] = [msgspec.structs.replace(s, user=user) for s in self.sources[start:]]

    def store_roots(self) -> list[StoreRoot]:
        return sorted(self._roots.values(), key=lambda root: root.path)

    def pending_roots(self) -> list[str]:
        return sorted(path for key, path in self.pending.items() if key not in self._roots)


def probe_status(directory: str, present: bool, found: bool, issues: Sequence[DiscoveryIssue]) -> str:
    """What a probed store directory turned out to be (see :class:`ProbedPlace`).

    ``issues`` are those reported while probing it. A directory with sources is ``found``
    whatever else was rejected in it; one without is named after what stood in the way,
    the directory itself first, then anything below it (a rejected link, a denied subdir).
    """
    if found:
        return "found"
    prefixes = tuple(directory.rstrip("/\\") + sep for sep in ("/", "\\"))
    exact = [issue for issue in issues if issue.path == directory]
    inner = [issue for issue in issues if issue.path.startswith(prefixes)]
    for issue in (*exact, *inner):
        if issue.reason == "unreadable":
            return "permission_denied" if issue.detail in ("EACCES", "EPERM") else "unreadable"
        if issue.reason in ("symlink", "symlink_component"):
            return "rejected_link"
        if issue.reason == "not_a_directory":
            return "not_a_directory"
    return "empty" if present else "missing"


def _join_relative(flavour: Flavour, base: str, relative: str) -> str:
    return flavour.join(base, *[part for part in relative.split("/") if part])


def _host_pairs(
    specs: Sequence[SourceSpec], roots: RootSet, env: EnvView | None
) -> list[tuple[str, WalkTarget]]:
    """(directory, target) for every home, CodexHome and DataHome spec (not OpenCode)."""
    flavour = roots.flavour
    pairs: list[tuple[str, WalkTarget]] = []
    for spec in specs:
        if spec.root_type in _NOT_HOST_PAIRS or spec.kind == OPENCODE_KIND:
            continue
        if spec.root_type is RootType.CODEX_HOME:
            base, found_by = roots.codex_home, roots.codex_home_found_by
        elif spec.root_type is RootType.DATA_HOME:
            base, found_by = roots.data_home, roots.data_home_found_by
        else:
            base, found_by = roots.home, roots.home_found_by
        if base is not None:
            target = WalkTarget(spec=spec, root_type=spec.root_type, found_by=found_by)
            for relative in (spec.relative_path, *spec.also_relative_paths):
                pairs.append((_join_relative(flavour, base, relative), target))
        for name, relative in spec.env_paths if env is not None else ():
            value = env.get(name) if env is not None else None
            if value is not None:
                target = WalkTarget(spec=spec, root_type=spec.root_type, found_by=f"env:{name}")
                pairs.append((_join_relative(flavour, value, relative), target))
    return pairs


#: Root types resolved by their own rules rather than :func:`_host_pairs`.
_NOT_HOST_PAIRS = frozenset({RootType.PROJECT_LOCAL, RootType.EDITOR_USER})


def _editor_pairs(
    probe: Probe, specs: Sequence[SourceSpec], roots: RootSet, env: EnvView | None
) -> list[tuple[str, WalkTarget]]:
    """(directory, target) for every editor-user spec below every candidate editor ``User`` dir."""
    wanted = [spec for spec in specs if spec.root_type is RootType.EDITOR_USER]
    if not wanted:
        return []
    pairs: list[tuple[str, WalkTarget]] = []
    for user_dir in editor_user_dirs(roots.flavour, env, roots.home, EDITORS):
        for spec in wanted:
            if spec.editors and user_dir.editor.id not in spec.editors:
                continue
            target = WalkTarget(spec=spec, root_type=RootType.EDITOR_USER, found_by=user_dir.found_by)
            for relative in (spec.relative_path, *spec.also_relative_paths):
                pairs.append((resolve_below(probe, user_dir.path, relative), target))
    return pairs


def _locator_pairs(
    probe: Probe, specs: Sequence[SourceSpec], roots: RootSet, env: EnvView | None
) -> list[tuple[str, WalkTarget]]:
    """(directory, target) for every directory a spec's own locator names (an agent's
    index of its projects, its own variables); see :mod:`telltale.discovery.locate`."""
    context = LocatorContext(probe=probe, roots=roots, env=env)
    pairs: list[tuple[str, WalkTarget]] = []
    for spec in specs:
        if not spec.locator:
            continue
        for directory, found_by in load_locator(spec.locator)(context):
            pairs.append((directory, WalkTarget(spec=spec, root_type=spec.root_type, found_by=found_by)))
    return pairs


def _discover_host(
    probe: Probe, collector: _Collector, specs: Sequence[SourceSpec], roots: RootSet, env: EnvView | None
) -> None:
    collector.walk_groups(probe, _host_pairs(specs, roots, env))
    collector.walk_groups(probe, _editor_pairs(probe, specs, roots, env))
    collector.walk_groups(probe, _locator_pairs(probe, specs, roots, env))
    for spec in specs:
        if spec.kind != OPENCODE_KIND:
            continue
        if env is not None:
            found, store_roots = discover_environment(probe, env, roots, spec)
        else:
            found, store_roots = discover_explicit(probe, roots, spec)
        collector.sources.extend(found)
        for root in store_roots:
            collector.add_root(root)
            has = any(s.store_root == root.path for s in found)
            collector.probed.append(ProbedPlace(path=root.path, kinds=(spec.kind,),
                                                status="found" if has else "empty", found_by="data_home"))


def _discover_fixture(probe: Probe, collector: _Collector, specs: Sequence[SourceSpec], root: str) -> None:
    flavour = probe.flavour
    pairs = [
        (
            _join_relative(flavour, root, spec.fixture_relative_path),
            WalkTarget(spec=spec, root_type=spec.root_type, found_by="fixture"),
        )
        for spec in specs
    ]
    collector.walk_groups(probe, pairs)


def _discover_projects(
    probe: Probe, collector: _Collector, specs: Sequence[SourceSpec], projects: Sequence[ProjectRoot]
) -> None:
    local = [spec for spec in specs if spec.root_type is RootType.PROJECT_LOCAL]
    if not local:
        return
    for project in projects:
        st = probe.stat(project.path)
        if st is None:
            probe.report(
                "missing_project_root", project.path, f"project {project.name!r} does not exist"[:200]
            )
            continue
        if not stat.S_ISDIR(st.st_mode):
            probe.report("not_a_directory", project.path, "project root is not a directory")
            continue
        pairs: list[tuple[str, WalkTarget]] = []
        for spec in local:
            target = WalkTarget(
                spec=spec, root_type=RootType.PROJECT_LOCAL, found_by=f"project:{project.name}"
            )
            pairs.extend(
                (directory, target)
                for directory in project_store_dirs(probe, project.path, spec.relative_path)
            )
        collector.walk_groups(probe, pairs)


def _discover_user_homes(
    probe: Probe,
    collector: _Collector,
    specs: Sequence[SourceSpec],
    env: EnvView,
    platform: Platform,
) -> list[UserHome]:
    """Discover below every account's home as if it were an explicit root, and tag what is
    found there (its default project directories included) with the account."""
    accounts, uid_min = host_accounts(probe, env)
    homes = select_homes(accounts, uid_min, probe)
    scanned = [home for home in homes if home.status == SCANNED]
    if not scanned:
        probe.report("no_user_homes", "accounts", "no local account with a login shell and an existing home")
    for home in scanned:
        start = len(collector.sources)
        _discover_host(probe, collector, specs, account_roots(home.home, platform), None)
        projects = resolve_project_roots(probe, flags=(), env_value=None, home=home.home, use_defaults=True)
        _discover_projects(probe, collector, specs, projects)
        collector.tag_user(start, home.user)
    return homes


def _absolute_root(root: str, flavour: Flavour) -> str:
    if flavour.platform is current_platform():
        return os.path.abspath(root)
    return flavour.normpath(root)


def _unique_sources(sources: Iterable[Source]) -> list[Source]:
    """Drop the same store found twice (two roots naming one directory, or a hard link)."""
    by_path: set[tuple[str, str]] = set()
    by_identity: set[tuple[str, int, int]] = set()
    unique: list[Source] = []
    for source in sources:
        # Store directories were de-duplicated by normalised key before walking, so a raw
        # path comparison suffices here; (device, inode) catches aliases and hard links.
        path_key = (source.kind, source.path)
        identity = (source.kind, source.device, source.inode)
        if path_key in by_path or (source.inode and identity in by_identity):
            continue
        by_path.add(path_key)
        by_identity.add(identity)
        unique.append(source)
    unique.sort(key=Source.sort_key)
    return unique


def _unique_issues(issues: Iterable[DiscoveryIssue]) -> list[DiscoveryIssue]:
    return sorted(set(issues), key=lambda issue: (issue.path, issue.reason, issue.detail))


def check_root(root: str) -> None:
    """Refuse an explicit ``--root`` that is not an existing directory (exit 2, before
    anything is written: a typo must never look like a healthy host without agents)."""
    if root == ".":
        return
    if not root:
        raise UsageError("--root must name a directory")
    try:
        st = os.stat(root)
    except (FileNotFoundError, NotADirectoryError):
        link = " (a dangling symbolic link)" if os.path.islink(root) else ""
        raise UsageError(f"--root {root} does not exist{link}") from None
    except OSError as exc:
        raise UsageError(f"--root {root} cannot be read ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"--root {root} is not a directory")


def discover(options: DiscoveryOptions) -> DiscoveryResult:
    """Find every selected session store; see the module docstring for the modes.

    Best-effort (default): unreadable or rejected candidates become ``errors`` and
    healthy ones are kept. Bounded: the first issue, or spending more than ``budget``
    probes, raises :class:`~telltale.errors.DiscoveryError` and nothing is returned.
    Raises :class:`~telltale.errors.UsageError` for an unknown client or platform and
    :class:`~telltale.errors.ConfigError` for a malformed project config.
    """
    platform = parse_platform(options.platform)
    flavour = Flavour(platform)
    env_map = options.env if options.env is not None else os.environ
    env = EnvView(env_map, platform)
    specs = registry.select(list(options.clients) or None)
    probe = Probe(flavour, host_path=options.host_path, bounded=options.bounded, budget=options.budget)
    collector = _Collector(flavour)
    fixture = False
    homes: list[UserHome] = []

    if options.root == "." and options.user_homes:
        homes = _discover_user_homes(probe, collector, specs, env, platform)
        # Projects the operator configured (flags, TELLTALE_PROJECT_CONFIG) are nobody's home.
        projects = resolve_project_roots(
            probe,
            flags=options.project_configs,
            env_value=env.raw(PROJECT_CONFIG_ENV),
            home=None,
            use_defaults=False,
        )
    elif options.root == ".":
        roots = environment_roots(env, platform)
        if roots.home is None:
            probe.report("no_home", "HOME", "no home directory in the environment")
        _discover_host(probe, collector, specs, roots, env)
        projects = resolve_project_roots(
            probe,
            flags=options.project_configs,
            env_value=env.raw(PROJECT_CONFIG_ENV),
            home=roots.home,
            use_defaults=True,
        )
    else:
        if not options.root:
            raise UsageError("--root must name a directory")
        root = _absolute_root(options.root, flavour)
        st = probe.stat(root)
        if st is None or not stat.S_ISDIR(st.st_mode):
            probe.report("invalid_root", root, "not an existing directory")
            return DiscoveryResult(
                sources=[], errors=_unique_issues(probe.issues), fixture_tree=False, store_roots=[]
            )
        fixture = is_fixture_tree(probe, root, registry.REGISTRY)
        if fixture:
            _discover_fixture(probe, collector, specs, root)
            # No host resolution: only project configs named on the command line apply.
            projects = resolve_project_roots(
                probe,
                flags=options.project_configs,
                env_value=None,
                home=resolve_home(env, platform),
                use_defaults=False,
            )
        else:
            roots = explicit_roots(root, platform)
            _discover_host(probe, collector, specs, roots, None)
            projects = resolve_project_roots(
                probe,
                flags=options.project_configs,
                env_value=env.raw(PROJECT_CONFIG_ENV),
                home=root,
                use_defaults=True,
            )
    _discover_projects(probe, collector, specs, projects)

    return DiscoveryResult(
        sources=_unique_sources(collector.sources),
        errors=_unique_issues(probe.issues),
        fixture_tree=fixture,
        store_roots=collector.store_roots(),
        pending_roots=[] if fixture else collector.pending_roots(),
        probed=collector.probed,
        homes=homes,
        stats=probe.stats,
    )
