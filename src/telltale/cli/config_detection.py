"""The detection part of ``telltale config validate``: the effective pack and where each piece came from.

Loads ``rules.d``, ``overrides.d``, ``policies.d`` and ``allowlists.d`` of the
configuration roots the way ``scan`` does, and describes the result: every file with its
root, every notice (a default rule replaced), every rule a policy or an override changed
and why, the session risk bands. Problems are located lines (file:line: rule: field).
"""

from __future__ import annotations

import argparse
from typing import Any

from telltale.errors import ConfigError


def detection_view(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """``(view, problems)``: what the effective pack is made of, and its errors."""
    from telltale.cli.common import pack_inputs
    from telltale.detect.allowlist import load_allowlists
    from telltale.detect.pack import load_pack

    inputs = pack_inputs(args)
    pack = load_pack(inputs)
    problems = [str(issue) for issue in pack.ruleset.errors]
    try:
        allowlist = load_allowlists([path for path, _ in inputs.allowlist_files])
    except ConfigError as exc:
        problems.append(str(exc))
        allow_entries: list[str] = []
    else:
        allow_entries = [entry.name for entry in allowlist.entries]
    rules = pack.ruleset.rules
    sequences = pack.ruleset.sequences
    view: dict[str, Any] = {
        "default_pack": inputs.include_default,
        "rules": {"total": len(rules), "enabled": sum(1 for r in rules if r.spec.enabled)},
        "sequences": {"total": len(sequences), "enabled": sum(1 for s in sequences if s.spec.enabled)},
        "files": {
            kind: [origin for _, origin in files]
            for kind, files in (
                ("rules.d", inputs.rule_files),
                ("overrides.d", inputs.override_files),
                ("policies.d", inputs.policy_files),
                ("allowlists.d", inputs.allowlist_files),
            )
        },
        "notices": [str(issue) for issue in pack.notices()],
        "warnings": [str(issue) for issue in pack.ruleset.issues if issue.level == "warning"],
        "tuned": {
            ident: [{"setting": t.setting, "value": t.value, "by": t.origin, "reason": t.reason} for t in changes]
            for ident, changes in sorted(pack.tuning.items())
        },
        "allowlist": allow_entries,
        "risk_bands": pack.risk_bands,
    }
    return view, problems
