"""OpenCode store candidates (seed "Host Root Rules", OC-DISC-1..30).

Environment-resolved mode (``--root .``):

* the XDG OpenCode data directory (nonempty ``XDG_DATA_HOME/opencode``, otherwise
  ``~/.local/share/opencode``, on every platform) with direct-child ``opencode.db`` and
  ``opencode-<channel>.db`` files;
* the retained platform candidates, exact ``opencode.db`` only: macOS
  ``~/Library/Application Support/opencode``; Windows DataHome ``opencode`` and
  ``~/.local/share/opencode``;
* one exact ``OPENCODE_DB`` file.

Directory components (from the environment-named anchor down) and candidate files are
checked with ``lstat``: a linked component or database, dangling or not, is rejected
and reported; healthy candidates are kept. An explicit ``--root DIR`` keeps the legacy
rules: exact ``opencode.db`` below DIR's data-home candidates, no ``OPENCODE_DB``, no
channels. Nothing here opens a database.
"""

from __future__ import annotations

import re
import stat

import msgspec

from telltale.discovery.api import StoreRoot
from telltale.discovery.roots import EnvView, Platform, RootSet, data_home_anchor
from telltale.discovery.walk import Probe, WalkTarget, entry_lstat, error_token, walk_store
from telltale.sources.spec import RootType, Source, SourceSpec

OPENCODE_KIND = "opencode.sqlite"
DEFAULT_DB = "opencode.db"
OVERRIDE_ENV = "OPENCODE_DB"
#: ``opencode-<channel>.db``: a nonempty ASCII channel of letters, digits, ``.``, ``_``, ``-``.
#: Used with ``fullmatch`` (``$`` would accept a trailing newline). Case-sensitive.
CHANNEL_DB = re.compile(r"opencode-[A-Za-z0-9._-]+\.db")
#: Values of ``OPENCODE_DB`` that name no persistent file.
_NO_FILE = ("", ":memory:")


def is_candidate_name(name: str, *, channels: bool) -> bool:
    """Whether a directory entry name is an OpenCode database candidate.

    ``opencode-x.db.db`` is accepted: ``.`` is a legal channel character, so it is the
    database the pinned resolver writes for channel ``x.db``; sidecars (``-wal``,
    ``-shm``, ``-journal``) and other extensions never match.
    """
    if name == DEFAULT_DB:
        return True
    return channels and CHANNEL_DB.fullmatch(name) is not None


class DataDir(msgspec.Struct, frozen=True):
    """An OpenCode data directory candidate: an anchor named by the environment or home,
    and the components below it (all validated in environment mode)."""

    anchor: str
    parts: tuple[str, ...]
    channels: bool
    found_by: str


def xdg_data_dir(env: EnvView, home: str | None) -> DataDir | None:
    """The upstream CLI's XDG data directory (OC-DISC-2), the same on every platform."""
    xdg = env.get("XDG_DATA_HOME")
    if xdg is not None:
        return DataDir(xdg, ("opencode",), True, "opencode_xdg")
    if home is None:
        return None
    return DataDir(home, (".local", "share", "opencode"), True, "opencode_xdg")


def environment_data_dirs(env: EnvView, roots: RootSet) -> list[DataDir]:
    """Environment-mode directories: XDG first, then the retained platform candidates."""
    flavour = roots.flavour
    home = roots.home
    dirs: list[DataDir] = []
    xdg = xdg_data_dir(env, home)
    if xdg is not None:
        dirs.append(xdg)
    retained = data_home_anchor(env, flavour, home)
    if retained is not None:
        base, parts = retained
        dirs.append(DataDir(base, (*parts, "opencode"), False, "data_home"))
    if flavour.platform is Platform.WINDOWS and home is not None:
        dirs.append(DataDir(home, (".local", "share", "opencode"), False, "data_home"))
    unique: dict[str, DataDir] = {}
    for item in dirs:
        unique.setdefault(flavour.key(flavour.join(item.anchor, *item.parts)), item)
    return list(unique.values())


def resolve_override(value: str | None, xdg_dir: str | None, roots: RootSet) -> str | None:
    """The exact file ``OPENCODE_DB`` names, or ``None`` when it names none.

    Absolute values are used as given, relative ones against the XDG OpenCode data
    directory; ``..`` is folded lexically (no realpath) and ``~`` stays literal.
    """
    if value is None or value in _NO_FILE:
        return None
    flavour = roots.flavour
    if flavour.isabs(value):
        return flavour.normpath(value)
    if xdg_dir is None:
        return None
    return flavour.normpath(flavour.join(xdg_dir, value))


def _validate_components(probe: Probe, paths: list[str]) -> bool | None:
    """``lstat`` each path in order; ``True`` when all are real directories.

    ``None`` when one is missing (nothing to do, not an error), ``False`` when one was
    rejected (a link or a non-directory, reported). Each probe is charged to the budget.
    """
    for path in paths:
        probe.charge(path)
        st = probe.lstat(path)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            probe.report("symlink_component", path, "linked directory component rejected")
            return False
        if not stat.S_ISDIR(st.st_mode):
            probe.report("not_a_directory", path, "path component is not a directory")
            return False
    return True


def _source(spec: SourceSpec, path: str, directory: str, found_by: str, st_dev: int, st_ino: int) -> Source:
    return Source(
        client=spec.client,
        kind=spec.kind,
        path=path,
        root_type=RootType.DATA_HOME,
        store_root=directory,
        found_by=found_by,
        device=st_dev,
        inode=st_ino,
    )


def _scan_data_dir(probe: Probe, spec: SourceSpec, directory: str, item: DataDir) -> list[Source]:
    flavour = probe.flavour
    found: list[Source] = []
    for entry in probe.scandir(directory) or ():
        name = entry.name
        if not is_candidate_name(name, channels=item.channels):
            continue
        path = flavour.join(directory, name)
        try:
            if entry.is_symlink():
                probe.report("symlink", path, "linked database rejected")
                continue
            st = entry_lstat(probe, entry, path)
        except FileNotFoundError:
            probe.report("vanished", path, "entry disappeared while listing")
            continue
        except OSError as exc:
            probe.report("unreadable", path, error_token(exc))
            continue
        if not stat.S_ISREG(st.st_mode):
            probe.report("not_regular_file", path, "candidate is not a regular file")
            continue
        found_by = item.found_by if name == DEFAULT_DB else "opencode_channel"
        found.append(_source(spec, path, directory, found_by, st.st_dev, st.st_ino))
    return found


def discover_environment(
    probe: Probe, env: EnvView, roots: RootSet, spec: SourceSpec
) -> tuple[list[Source], list[StoreRoot]]:
    """Environment-resolved OpenCode discovery (``--root .``)."""
    flavour = roots.flavour
    sources: list[Source] = []
    store_roots: list[StoreRoot] = []
    for item in environment_data_dirs(env, roots):
        chain = [item.anchor]
        for part in item.parts:
            chain.append(flavour.join(chain[-1], part))
        if _validate_components(probe, chain) is not True:
            continue
        directory = chain[-1]
        sources.extend(_scan_data_dir(probe, spec, directory, item))
        exact = () if item.channels else (DEFAULT_DB,)
        store_roots.append(StoreRoot(path=directory, recursive=False, kinds=(spec.kind,), exact_files=exact))

    xdg = xdg_data_dir(env, roots.home)
    xdg_path = flavour.join(xdg.anchor, *xdg.parts) if xdg is not None else None
    raw = env.raw(OVERRIDE_ENV)
    target = resolve_override(raw, xdg_path, roots)
    if target is None:
        if raw not in (None, *_NO_FILE):
            probe.report("unresolved_override", OVERRIDE_ENV, "relative value but no data directory")
        return sources, store_roots
    chain = flavour.prefixes(target)
    parent_ok = _validate_components(probe, chain[:-1])
    if parent_ok is not True:
        return sources, store_roots
    parent = chain[-2] if len(chain) > 1 else None
    if parent is not None:
        store_roots.append(
            StoreRoot(
                path=parent,
                recursive=False,
                kinds=(spec.kind,),
                exact_files=(flavour.basename(target),),
            )
        )
    probe.charge(target)
    st = probe.lstat(target)
    if st is None:
        return sources, store_roots  # not present (yet): nothing to acquire
    if stat.S_ISLNK(st.st_mode):
        probe.report("symlink", target, "linked database rejected")
    elif not stat.S_ISREG(st.st_mode):
        probe.report("not_regular_file", target, "OPENCODE_DB is not a regular file")
    else:
        sources.append(_source(spec, target, parent or target, "opencode_db", st.st_dev, st.st_ino))
    return sources, store_roots


def explicit_data_dirs(roots: RootSet) -> list[str]:
    """Explicit ``--root DIR``: DIR as a home (DataHome and ``.local/share``) and as a data home."""
    flavour = roots.flavour
    assert roots.home is not None and roots.data_home is not None
    dirs = [
        flavour.join(roots.data_home, "opencode"),
        flavour.join(roots.home, ".local", "share", "opencode"),
        flavour.join(roots.home, "opencode"),
    ]
    unique: dict[str, str] = {}
    for path in dirs:
        unique.setdefault(flavour.key(path), path)
    return list(unique.values())


def discover_explicit(probe: Probe, roots: RootSet, spec: SourceSpec) -> tuple[list[Source], list[StoreRoot]]:
    """Legacy explicit-root discovery: exact ``opencode.db``, no channels, no override."""
    sources: list[Source] = []
    store_roots: list[StoreRoot] = []
    target = WalkTarget(spec=spec, root_type=RootType.DATA_HOME, found_by="explicit_root")
    for directory in explicit_data_dirs(roots):
        outcome = walk_store(probe, directory, [target])
        sources.extend(s for s in outcome.sources if probe.flavour.basename(s.path) == DEFAULT_DB)
        if outcome.present:
            store_roots.append(
                StoreRoot(path=directory, recursive=False, kinds=(spec.kind,), exact_files=(DEFAULT_DB,))
            )
    return sources, store_roots
