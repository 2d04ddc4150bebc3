"""The filesystem side of discovery: metadata probes and the store walker.

Discovery is strictly read-only and metadata-only: it lists directories with
``os.scandir`` and ``lstat``s entries, never opens a file, and never follows a symlink
inside a store (a linked file or directory is reported, not entered). Every failure is
a bounded, content-free :class:`DiscoveryIssue`; best-effort discovery records it and
goes on, bounded discovery raises on the first one so that no partial listing escapes.
"""

from __future__ import annotations

import errno
import operator
import os
import stat
from collections.abc import Callable, Iterable, Sequence

import msgspec

from telltale.discovery.api import DiscoveryIssue
from telltale.discovery.roots import Flavour
from telltale.errors import DiscoveryError
from telltale.sources.spec import RootType, Source, SourceSpec

#: A directory entry's name (the listing's sort key, in C).
_NAME = operator.attrgetter("name")

#: Directories nested deeper than this below a store root are not entered (a guard
#: against pathological trees; real stores are a handful of levels deep).
MAX_WALK_DEPTH = 64


def error_token(exc: OSError) -> str:
    """A content-free name for an OS error (``EACCES``), never its message."""
    if exc.errno is not None and exc.errno in errno.errorcode:
        return errno.errorcode[exc.errno]
    return type(exc).__name__


def entry_lstat(probe: Probe, entry: os.DirEntry[str], path: str) -> os.stat_result:
    """``lstat`` of a listed entry, with a real identity.

    ``DirEntry.stat`` is free on POSIX (one ``lstat``), but on Windows it reports
    ``st_ino``/``st_dev`` as zero; then the path is ``lstat``ed for its file index.
    """
    st = entry.stat(follow_symlinks=False)
    if st.st_ino == 0:
        st = os.lstat(probe.host(path))
    return st


class Probe:
    """Filesystem access for one discovery: path mapping, budget and issue collection."""

    def __init__(
        self,
        flavour: Flavour,
        *,
        host_path: Callable[[str], str] | None = None,
        bounded: bool = False,
        budget: int = 0,
    ) -> None:
        self.flavour = flavour
        self._host = host_path or (lambda path: path)
        self.bounded = bounded
        self.budget = budget
        self.spent = 0
        self.issues: list[DiscoveryIssue] = []
        #: Each source file found, by path, as its ``lstat`` said: (device, inode, size,
        #: mtime in ns). The scan's change check uses it instead of a ``stat`` of its own
        #: (one per source, every scan).
        self.stats: dict[str, tuple[int, int, int, int]] = {}

    def host(self, path: str) -> str:
        return self._host(path)

    def charge(self, path: str, count: int = 1) -> None:
        """Spend ``count`` probes; bounded discovery fails once the budget is exhausted."""
        self.spent += count
        if self.bounded and self.spent > self.budget:
            raise DiscoveryError("budget_exceeded", path, f"more than {self.budget} filesystem probes")

    def report(self, reason: str, path: str, detail: str = "") -> None:
        if self.bounded:
            raise DiscoveryError(reason, path, detail)
        self.issues.append(DiscoveryIssue(reason=reason, path=path, detail=detail[:200]))

    def lstat(self, path: str) -> os.stat_result | None:
        """``lstat`` a path; ``None`` when it does not exist, an issue on other errors."""
        try:
            return os.lstat(self.host(path))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            self.report("unreadable", path, error_token(exc))
            return None
        except ValueError:  # embedded NUL and similar unrepresentable paths
            self.report("invalid_path", path, "unrepresentable path")
            return None

    def stat(self, path: str) -> os.stat_result | None:
        """``stat`` following links: only for roots the operator or environment named."""
        try:
            return os.stat(self.host(path))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            self.report("unreadable", path, error_token(exc))
            return None
        except ValueError:
            self.report("invalid_path", path, "unrepresentable path")
            return None

    def scandir(self, path: str) -> list[os.DirEntry[str]] | None:
        """List a directory sorted by name (deterministic order, whatever the filesystem)."""
        try:
            with os.scandir(self.host(path)) as it:
                entries = list(it)
        except FileNotFoundError:
            self.report("vanished", path, "directory disappeared while listing")
            return None
        except OSError as exc:
            self.report("unreadable", path, error_token(exc))
            return None
        self.charge(path, len(entries))
        entries.sort(key=_NAME)
        return entries


def _copilot_session_state_layout(dirs: tuple[str, ...], name: str) -> bool:
    # <id>/events.jsonl (current layout) or a flat <id>.jsonl (older releases); nothing deeper.
    return not dirs or (len(dirs) == 1 and name == "events.jsonl")


class LayoutRule(msgspec.Struct, frozen=True):
    """Per-kind layout limits the SourceSpec patterns cannot express.

    ``files(dirs, name)`` says whether a file ``name`` in the directory reached through
    ``dirs`` (directory names below the store root) can be a source; ``enter(dirs, name)``
    whether the walk descends into subdirectory ``name`` there (``None``: always).
    """

    max_depth: int
    files: Callable[[tuple[str, ...], str], bool]
    enter: Callable[[tuple[str, ...], str], bool] | None = None


def _layout_rules() -> dict[str, LayoutRule]:
    from telltale.sources.cursor import layout as cursor
    from telltale.sources.gemini import layout as gemini

    return {
        "copilot.session_state": LayoutRule(2, _copilot_session_state_layout),
        cursor.TRANSCRIPT_KIND: LayoutRule(cursor.TRANSCRIPT_DEPTH, cursor.transcript_file, cursor.transcript_dir),
        cursor.WORKSPACE_DB_KIND: LayoutRule(2, cursor.workspace_db, cursor.workspace_dir),
        cursor.CLI_CHATS_KIND: LayoutRule(3, cursor.cli_store),
        gemini.CHATS_KIND: LayoutRule(4, gemini.chats_file, gemini.chats_dir),
        gemini.LEGACY_KIND: LayoutRule(3, gemini.legacy_file, gemini.legacy_dir),
        gemini.LOGS_KIND: LayoutRule(2, gemini.logs_file, gemini.logs_dir),
    }


#: Per-kind layout rules, by source kind.
_LAYOUT_RULES: dict[str, LayoutRule] = _layout_rules()


class WalkTarget(msgspec.Struct, frozen=True):
    """One source kind searched below a store directory, and how it was found."""

    spec: SourceSpec
    root_type: RootType
    found_by: str

    @property
    def max_depth(self) -> int | None:
        if not self.spec.recursive:
            return 1
        rule = _LAYOUT_RULES.get(self.spec.kind)
        return rule.max_depth if rule else None

    def applies_at(self, depth: int) -> bool:
        """Whether files ``depth`` levels below the store root can be this kind's."""
        limit = self.max_depth
        return limit is None or depth <= limit

    def matches(self, name: str, parent: str, dirs: tuple[str, ...]) -> bool:
        if not self.applies_at(len(dirs) + 1):
            return False
        rule = _LAYOUT_RULES.get(self.spec.kind)
        if rule is not None and not rule.files(dirs, name):
            return False
        return self.spec.matches(name, parent)

    def enters(self, dirs: tuple[str, ...], name: str) -> bool:
        """Whether subdirectory ``name`` of the directory reached through ``dirs`` can hold
        this kind's sources (depth permitting)."""
        if not self.descends(len(dirs) + 1):
            return False
        rule = _LAYOUT_RULES.get(self.spec.kind)
        return rule is None or rule.enter is None or rule.enter(dirs, name)

    def descends(self, depth: int) -> bool:
        """Whether entries of a subdirectory at ``depth`` can still match."""
        limit = self.max_depth
        return self.spec.recursive and (limit is None or depth < limit)


def _shadowed_compressed(names: Iterable[str]) -> set[str]:
    """``X.zst`` files whose uncompressed ``X`` sits beside them: the plain file wins."""
    present = set(names)
    return {name for name in present if name.endswith(".zst") and name[:-4] in present}


class WalkOutcome(msgspec.Struct):
    sources: list[Source]
    #: The store directory existed and was a directory (so it can be watched).
    present: bool


class _DepthPlan:
    """What the walk does with the entries of a directory at one depth: the same for every
    directory at that depth, so worked out once per store (a store holds hundreds of
    session directories at one depth)."""

    __slots__ = ("descend", "gated", "plain_descend", "rule_free", "ruled")

    def __init__(self, targets: Sequence[WalkTarget], depth: int) -> None:
        self.descend = any(t.descends(depth) for t in targets)
        self.gated = [t for t in targets if t.spec.kind in _LAYOUT_RULES and _LAYOUT_RULES[t.spec.kind].enter]
        self.plain_descend = any(t.descends(depth) for t in targets if t not in self.gated)
        #: Targets without layout rules, each with its spec's name test.
        self.rule_free = [
            (t, t.spec.name_test()) for t in targets if t.applies_at(depth) and t.spec.kind not in _LAYOUT_RULES
        ]
        self.ruled = [t for t in targets if t.applies_at(depth) and t.spec.kind in _LAYOUT_RULES]


def walk_store(probe: Probe, directory: str, targets: Sequence[WalkTarget]) -> WalkOutcome:
    """Enumerate the sources of ``targets`` below one store directory.

    The store directory itself is reached with ``stat`` (it was named by a root rule or
    the operator, and may sit behind a link such as a dotfile manager's); nothing below
    it is followed.
    """
    flavour = probe.flavour
    root_stat = probe.stat(directory)
    if root_stat is None:
        return WalkOutcome([], False)
    if not stat.S_ISDIR(root_stat.st_mode):
        probe.report("not_a_directory", directory, "store root is not a directory")
        return WalkOutcome([], False)

    sources: list[Source] = []
    visited: set[tuple[int, int]] = {(root_stat.st_dev, root_stat.st_ino)}
    plans: dict[int, _DepthPlan] = {}
    # A subdirectory's path plus the separator ("dir/"): its children are a concatenation.
    sep = "\\" if flavour.windows else "/"
    # (directory, its prefix, depth, directory names below the store root)
    stack: list[tuple[str, str, int, tuple[str, ...]]] = [(directory, flavour.join(directory, ""), 1, ())]
    while stack:
        dir_path, prefix, depth, dirs = stack.pop()
        entries = probe.scandir(dir_path)
        if entries is None:
            continue
        # A subdirectory's name is the last of ``dirs`` (the walk made its path from it).
        parent_name = dirs[-1] if dirs else flavour.basename(flavour.normpath(dir_path))
        plan = plans.get(depth)
        if plan is None:
            plan = plans[depth] = _DepthPlan(targets, depth)
        rule_free, ruled, descend, plain_descend, gated = (
            plan.rule_free, plan.ruled, plan.descend, plan.plain_descend, plan.gated,
        )
        matched: dict[str, tuple[os.DirEntry[str], list[WalkTarget]]] = {}
        subdirs: list[tuple[str, os.DirEntry[str]]] = []
        for entry in entries:
            name = entry.name
            wanted = [t for t, test in rule_free if test(name, parent_name)]
            if ruled:
                wanted.extend(t for t in ruled if t.matches(name, parent_name, dirs))
            try:
                if entry.is_symlink():
                    if wanted or descend:
                        probe.report("symlink", prefix + name, "symbolic link not followed")
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if wanted:
                        # A directory named like a transcript (``x.jsonl``) is not a source:
                        # reported (it is still walked like any directory of the store).
                        probe.report("not_regular_file", prefix + name, "a directory named like a store file")
                    if descend and (plain_descend or any(t.enters(dirs, name) for t in gated)):
                        subdirs.append((prefix + name, entry))
                    continue
                is_file = entry.is_file(follow_symlinks=False)
            except OSError as exc:
                probe.report("unreadable", prefix + name, error_token(exc))
                continue
            if not wanted:
                continue
            if is_file:
                matched[name] = (entry, wanted)
            else:
                probe.report("not_regular_file", prefix + name, "candidate is not a regular file")

        shadowed = _shadowed_compressed(matched) if len(matched) > 1 else set()
        for name, (entry, wanted) in matched.items():
            if name in shadowed:
                continue
            child = prefix + name
            try:
                st = entry_lstat(probe, entry, child)
            except FileNotFoundError:
                probe.report("vanished", child, "entry disappeared while listing")
                continue
            except OSError as exc:
                probe.report("unreadable", child, error_token(exc))
                continue
            if not stat.S_ISREG(st.st_mode):
                probe.report("not_regular_file", child, "candidate is not a regular file")
                continue
            probe.stats[child] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            for target in wanted:
                sources.append(
                    Source(
                        client=target.spec.client,
                        kind=target.spec.kind,
                        path=child,
                        root_type=target.root_type,
                        store_root=directory,
                        found_by=target.found_by,
                        device=st.st_dev,
                        inode=st.st_ino,
                    )
                )

        # Push in reverse so the stack pops subdirectories in name order.
        for child, entry in reversed(subdirs):
            if depth + 1 > MAX_WALK_DEPTH:
                probe.report("too_deep", child, f"more than {MAX_WALK_DEPTH} levels below the store root")
                continue
            try:
                st = entry_lstat(probe, entry, child)
            except FileNotFoundError:
                probe.report("vanished", child, "entry disappeared while listing")
                continue
            except OSError as exc:
                probe.report("unreadable", child, error_token(exc))
                continue
            identity = (st.st_dev, st.st_ino)
            if identity in visited:
                probe.report("loop", child, "directory already visited (bind mount or loop)")
                continue
            visited.add(identity)
            stack.append((child, child + sep, depth + 1, (*dirs, entry.name)))
    return WalkOutcome(sources, True)
