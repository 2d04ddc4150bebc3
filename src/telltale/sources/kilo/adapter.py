"""Kilo Code's adapter: the OpenCode adapter with Kilo's brand (client, kind, ids)."""

from __future__ import annotations

from telltale.sources.kilo import CLIENT, KIND
from telltale.sources.opencode import native
from telltale.sources.opencode.adapter import OpenCodeAdapter

BRAND = native.Brand(kind=KIND, client=CLIENT, agent="kilo")


class KiloAdapter(OpenCodeAdapter):
    """The OpenCode adapter, emitting as Kilo Code."""

    kind = KIND
    brand = BRAND
