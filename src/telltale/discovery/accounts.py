"""Local accounts and their homes: whom a system-profile discovery runs for (DECISIONS #22).

A service watching a host for a SOC runs as its own account, so the environment it sees is
not any user's: it finds each user's stores from the OS account database instead, one home
at a time. Accounts that cannot hold an agent's stores are skipped, each with a reason:

* ``system_account``: a uid below ``UID_MIN`` (``/etc/login.defs``; 1000 on Linux, 500 on
  macOS by default), except root, whose home is scanned (an agent run as root is the one
  a SOC most wants to see);
* ``no_login_shell``: a shell named ``nologin`` or ``false``;
* ``missing_home``: an empty or ``/`` home, or one that is not an existing directory;
* ``duplicate_home``: a home (same device and inode) or name already taken by an account
  with a lower uid.

Windows has no account database this module reads: each directory of ``%SystemDrive%\\Users``
but the built-in profiles (``Public``, ``Default``...) is a home named after its directory.

``TELLTALE_ACCOUNTS_ETC`` names a directory read instead of the account database: its
``passwd`` (passwd(5) lines) and ``login.defs``. It is a test seam (CI runs a system-profile
scan over homes in temporary directories) and serves a container that mounts the host's
``/etc`` where the homes keep their host paths.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping

import msgspec

from telltale.discovery.api import UserHome
from telltale.discovery.roots import EnvView, Flavour, Platform, current_platform
from telltale.discovery.walk import Probe

#: Environment variable naming an /etc-like directory (``passwd``, ``login.defs``) read
#: instead of the account database (see the module docstring).
ACCOUNTS_ETC_ENV = "TELLTALE_ACCOUNTS_ETC"

#: ``UID_MIN`` when ``login.defs`` does not set it.
DEFAULT_UID_MIN = {Platform.LINUX: 1000, Platform.DARWIN: 500}

#: Shells that refuse a login: their accounts run no agent.
NO_LOGIN_SHELLS = frozenset({"nologin", "false"})

#: Profile directories below ``C:\Users`` that belong to no one.
WINDOWS_SHARED_PROFILES = frozenset(
    {"public", "default", "default user", "all users", "defaultuser0", "wdagutilityaccount"}
)

SCANNED = "scanned"


class Account(msgspec.Struct, frozen=True):
    """One entry of the account database (uid ``-1`` where the platform has none)."""

    name: str
    uid: int
    home: str
    shell: str = ""


def parse_passwd(text: str) -> list[Account]:
    """Accounts of passwd(5) lines (``name:pw:uid:gid:gecos:home:shell``); malformed lines,
    comments and NIS ``+``/``-`` entries are left out."""
    accounts: list[Account] = []
    for line in text.splitlines():
        fields = line.split(":")
        if len(fields) != 7 or not fields[0] or fields[0][0] in "#+-":
            continue
        try:
            uid = int(fields[2])
        except ValueError:
            continue
        accounts.append(Account(name=fields[0], uid=uid, home=fields[5], shell=fields[6]))
    return accounts


def parse_uid_min(text: str, platform: Platform) -> int:
    """``UID_MIN`` of a login.defs text, or the platform's default."""
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "UID_MIN":
            try:
                return int(words[1], 0)
            except ValueError:
                break
    return DEFAULT_UID_MIN.get(platform, 1000)


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 22)
    except OSError:
        return ""


def database_accounts() -> list[Account]:
    """Every account the OS resolves (``pwd.getpwall``: files, and any NSS source that enumerates)."""
    import pwd

    return [Account(name=p.pw_name, uid=p.pw_uid, home=p.pw_dir, shell=p.pw_shell) for p in pwd.getpwall()]


def windows_accounts(probe: Probe, env: EnvView) -> list[Account]:
    """The profile directories of ``%SystemDrive%\\Users`` (built-in ones left out)."""
    drive = env.get("SystemDrive") or "C:"
    users = probe.flavour.join(drive + "\\", "Users")
    entries = probe.scandir(users) or []
    return [
        Account(name=entry.name, uid=-1, home=probe.flavour.join(users, entry.name))
        for entry in entries
        if entry.name.lower() not in WINDOWS_SHARED_PROFILES and entry.is_dir(follow_symlinks=False)
    ]


def host_accounts(probe: Probe, env: EnvView) -> tuple[list[Account], int]:
    """The accounts of the host and its ``UID_MIN``: from ``TELLTALE_ACCOUNTS_ETC`` when set,
    else the account database (the profile directories on Windows)."""
    platform = probe.flavour.platform
    etc = env.get(ACCOUNTS_ETC_ENV)
    if etc is not None:
        defs = _read_text(os.path.join(etc, "login.defs"))
        return parse_passwd(_read_text(os.path.join(etc, "passwd"))), parse_uid_min(defs, platform)
    if platform is Platform.WINDOWS:
        return windows_accounts(probe, env), 0
    return database_accounts(), parse_uid_min(_read_text("/etc/login.defs"), platform)


def _skip_reason(account: Account, uid_min: int, flavour: Flavour) -> str | None:
    if account.uid >= 0 and account.uid != 0 and account.uid < uid_min:
        return "system_account"
    if account.shell and flavour.basename(account.shell) in NO_LOGIN_SHELLS:
        return "no_login_shell"
    if not account.home or flavour.normpath(account.home) in ("/", "\\"):
        return "missing_home"
    return None


def select_homes(accounts: Iterable[Account], uid_min: int, probe: Probe) -> list[UserHome]:
    """Every account with its status, lowest uid first (root, then users by uid and name)."""
    flavour = probe.flavour
    out: list[UserHome] = []
    seen_names: set[str] = set()
    seen_dirs: set[tuple[int, int]] = set()
    for account in sorted(accounts, key=lambda a: (a.uid, a.name)):
        reason = _skip_reason(account, uid_min, flavour)
        home = flavour.normpath(account.home) if account.home else account.home
        if reason is None:
            st = probe.stat(home)  # the database names the home: a link to it is followed
            if st is None or not stat.S_ISDIR(st.st_mode):
                reason = "missing_home"
            elif account.name in seen_names or (st.st_ino and (st.st_dev, st.st_ino) in seen_dirs):
                reason = "duplicate_home"
            else:
                seen_names.add(account.name)
                seen_dirs.add((st.st_dev, st.st_ino))
        out.append(UserHome(user=account.name, home=home, status=reason or SCANNED, uid=account.uid))
    return out


def scanned_homes(env: Mapping[str, str]) -> list[UserHome]:
    """The homes a system-profile run covers on this host (for steps other than discovery,
    such as the inventory; discovery reports the skipped accounts too)."""
    flavour = Flavour(current_platform())
    probe = Probe(flavour)
    accounts, uid_min = host_accounts(probe, EnvView(env, flavour.platform))
    return [home for home in select_homes(accounts, uid_min, probe) if home.status == SCANNED]
