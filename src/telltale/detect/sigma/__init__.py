"""Sigma rules in: pySigma parses them, Telltale compiles them to its own matchers and evaluates.

A Sigma rule becomes an ordinary :class:`~telltale.detect.loader.Rule` (selections and
filters of RE2 matchers over observation fields), so it runs in the same engine, screen
and allowlist as the default pack, and its detections name the Sigma rule
(:class:`~telltale.detect.model.SigmaRef`). What cannot be compiled faithfully — a log
source, field or modifier agent tool calls do not carry, a regex RE2 refuses, a condition
outside ``selections and not filters`` — is a per-rule warning and the rule is not
loaded; nothing is dropped silently.

pySigma is the optional extra ``telltale[sigma]``; it is imported only when Sigma rules
are given.
"""

from __future__ import annotations

from telltale.detect.sigma.load import SIGMA_SUFFIXES, load_sigma_paths, sigma_files

__all__ = ["SIGMA_SUFFIXES", "load_sigma_paths", "sigma_files"]
