"""``utc_now`` formats the clock as ECS timestamps do everywhere: ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.events import envelope


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=4_102_444_800_000_000_000), min_size=1, max_size=6))
def test_utc_now_is_the_clock_in_milliseconds(nanos: list[int]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        for ns in [*nanos, *sorted(nanos)]:  # the cached second, reused and replaced
            mp.setattr(envelope.time, "time_ns", lambda ns=ns: ns)
            moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ns // 1_000_000)
            expected = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{(ns // 1_000_000) % 1000:03d}Z"
            assert envelope.utc_now() == expected
