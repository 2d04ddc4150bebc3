"""Costs from the price table shipped with Telltale (``prices.json``), never invented.

A model is priced by its exact id, else by its id without a trailing date
(``claude-sonnet-4-5-20250929`` → ``claude-sonnet-4-5``) or a provider prefix
(``anthropic/…``, Bedrock ``anthropic.…-v1:0``). Anything else has no price: its cost is
``None`` (shown as unknown), never 0.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

_DATE = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")
_BEDROCK = re.compile(r"^(?:[a-z]{2}\.)?anthropic\.(.+?)(?:-v\d+(?::\d+)?)?$")


@cache
def table() -> dict[str, dict[str, float]]:
    data = json.loads(resources.files("telltale.index").joinpath("prices.json").read_text(encoding="utf-8"))
    return {k: {f: float(v) for f, v in rates.items()} for k, rates in data["models"].items()}


@cache
def rates_for(model: str) -> dict[str, float] | None:
    prices = table()
    name = model.strip().lower()
    candidates = [name]
    if "/" in name:
        candidates.append(name.rsplit("/", 1)[1])
    bedrock = _BEDROCK.match(name)
    if bedrock:
        candidates.append(bedrock.group(1))
    for candidate in list(candidates):
        candidates.append(_DATE.sub("", candidate))
    for candidate in candidates:
        if candidate in prices:
            return prices[candidate]
    return None


def cost(model: str, input: int, cache_creation: int, cache_read: int, output: int) -> float | None:
    """USD for these tokens of ``model`` (ccusage's columns), or ``None`` when it has no price."""
    rates = rates_for(model)
    if rates is None:
        return None
    return (
        input * rates["input"]
        + cache_creation * rates.get("cache_creation", rates["input"])
        + cache_read * rates.get("cache_read", rates["input"])
        + output * rates["output"]
    ) / 1_000_000
