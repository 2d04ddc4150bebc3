"""Public types of discovery: what the pipeline, ``watch`` and ``telltale sources`` consume.

They live apart from the algorithms so that callers can import them without pulling in
the filesystem walk, and so tests can build expectations from the same types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec

from telltale.sources.spec import Source

#: Default number of filesystem probes (directory entries and path components) a
#: bounded discovery may spend before it fails.
DEFAULT_BUDGET = 100_000


class DiscoveryOptions(msgspec.Struct, frozen=True):
    """What to discover and how.

    ``root`` is ``"."`` (the literal) for environment-resolved host discovery, a fixture
    tree, or any other directory, which is then treated as the home directory.
    ``env`` and ``platform`` are injectable so every platform's rules can be tested on
    one host; ``None`` means ``os.environ`` and the running platform.
    """

    root: str = "."
    clients: tuple[str, ...] = ()
    project_configs: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    platform: str | None = None
    bounded: bool = False
    budget: int = DEFAULT_BUDGET
    #: Test seam: maps a path in the injected platform's syntax to the host path used for
    #: filesystem calls (for example ``C:\\Users\\me`` to a temporary directory). Reported
    #: paths keep the platform's syntax. ``None`` is the identity.
    host_path: Callable[[str], str] | None = None
    #: The system profile's host discovery (``root == "."`` only): once per local account's
    #: home from the account database (:mod:`telltale.discovery.accounts`), each source
    #: tagged with its account, the environment's store variables not read.
    user_homes: bool = False


class DiscoveryIssue(msgspec.Struct, frozen=True):
    """A candidate or directory discovery rejected or could not read.

    ``reason`` is a short token, ``path`` the filesystem path concerned and ``detail`` a
    bounded, content-free explanation (an errno name, a budget); never file contents.
    """

    reason: str
    path: str
    detail: str = ""


class StoreRoot(msgspec.Struct, frozen=True):
    """A validated, existing directory that ``watch`` subscribes to.

    ``exact_files`` non-empty means only those names in the directory can be sources
    (an ``OPENCODE_DB`` override's parent, or a directory searched only for an exact
    ``opencode.db``); empty means any entry may matter and the kinds' patterns decide.
    """

    path: str
    recursive: bool
    kinds: tuple[str, ...]
    exact_files: tuple[str, ...] = ()


class ProbedPlace(msgspec.Struct, frozen=True):
    """A directory discovery looked in for stores, and what it found there.

    ``status``: ``found`` (sources there), ``empty`` (the directory exists, nothing of the
    kinds in it), ``missing``, ``not_a_directory``, ``permission_denied``, ``unreadable``
    (another errno) or ``rejected_link`` (a link discovery does not follow there).
    """

    path: str
    kinds: tuple[str, ...]
    status: str
    found_by: str


class UserHome(msgspec.Struct, frozen=True):
    """An account a system-profile discovery considered: ``status`` is ``scanned`` or why it
    was skipped (``system_account``, ``no_login_shell``, ``missing_home``, ``duplicate_home``)."""

    user: str
    home: str
    status: str
    uid: int = -1


class DiscoveryResult(msgspec.Struct):
    """Sources sorted by ``Source.sort_key()``, issues, and the roots to watch."""

    sources: list[Source]
    errors: list[DiscoveryIssue]
    fixture_tree: bool
    store_roots: list[StoreRoot]
    #: Home, CodexHome and DataHome store directories of the selected kinds that do not
    #: exist yet (an agent not used so far): ``watch`` waits for them to appear.
    pending_roots: list[str] = []
    #: Every store directory looked in, in the order probed (``telltale sources`` lists them
    #: when nothing usable was found).
    probed: list[ProbedPlace] = []
    #: The accounts a per-home discovery considered, scanned or skipped with the reason.
    homes: list[UserHome] = []
    #: Source files as the walk ``lstat``ed them, by path: (device, inode, size, mtime in
    #: ns), what a scan's change check starts from (not every source has one).
    stats: dict[str, tuple[int, int, int, int]] = {}
