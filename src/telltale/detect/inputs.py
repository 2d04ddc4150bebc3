"""Where the effective rule pack comes from: each configuration root's drop-in files.

Kept apart from :mod:`telltale.detect.pack` (which imports the rule loader: YAML, RE2 and
the literal analysis) because every scan looks for the drop-ins, and a scan with nothing
changed must not pay for loading rules it will never build.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import msgspec

#: Drop-in directories of a configuration root that make the effective pack.
RULES_DIR = "rules.d"
OVERRIDES_DIR = "overrides.d"
POLICIES_DIR = "policies.d"
ALLOWLISTS_DIR = "allowlists.d"


class PackInputs(msgspec.Struct):
    """Where the effective pack comes from: files with their provenance (``origin``)."""

    include_default: bool = True
    rule_files: list[tuple[str, str]] = msgspec.field(default_factory=list)
    override_files: list[tuple[str, str]] = msgspec.field(default_factory=list)
    policy_files: list[tuple[str, str]] = msgspec.field(default_factory=list)
    allowlist_files: list[tuple[str, str]] = msgspec.field(default_factory=list)
    #: Sigma rules: ``--sigma FILE|DIR`` and ``rules.d/*.yml`` (needs the ``telltale[sigma]`` extra).
    sigma_files: list[tuple[str, str]] = msgspec.field(default_factory=list)

    @property
    def customised(self) -> bool:
        """Anything besides the shipped pack (then the pack is built, and checked, up front)."""
        return bool(
            not self.include_default or self.rule_files or self.override_files or self.policy_files
            or self.allowlist_files or self.sigma_files
        )


def inputs_from_roots(
    roots: Any,
    *,
    rule_files: Sequence[str] = (),
    allowlist_files: Sequence[str] = (),
    sigma_files: Sequence[str] = (),
    include_default: bool = True,
) -> PackInputs:
    """The pack's files: each root's drop-ins (lowest precedence first), then the command line's."""
    inputs = PackInputs(include_default=include_default)
    if roots is not None:
        for f in roots.dropins(RULES_DIR, (".yaml",)):
            inputs.rule_files.append((os.fspath(f.path), f.origin))
        for f in roots.dropins(RULES_DIR, (".yml",)):  # Sigma's own extension
            inputs.sigma_files.append((os.fspath(f.path), f.origin))
        for f in roots.dropins(OVERRIDES_DIR):
            inputs.override_files.append((os.fspath(f.path), f.origin))
        for f in roots.dropins(POLICIES_DIR):
            inputs.policy_files.append((os.fspath(f.path), f.origin))
        for f in roots.dropins(ALLOWLISTS_DIR):
            inputs.allowlist_files.append((os.fspath(f.path), f.origin))
    inputs.rule_files += [(os.fspath(p), f"--rules {os.fspath(p)}") for p in rule_files]
    inputs.allowlist_files += [(os.fspath(p), f"--allowlist {os.fspath(p)}") for p in allowlist_files]
    inputs.sigma_files += [(os.fspath(p), f"--sigma {os.fspath(p)}") for p in sigma_files]
    return inputs
