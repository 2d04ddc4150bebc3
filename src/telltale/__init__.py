"""Telltale: host-side scanner for AI coding-agent session stores."""

__version__ = "0.1.0"
