"""The event-loop lag probe: a loop blocked by synchronous work shows at least that long a delay."""

from __future__ import annotations

import asyncio
import time

from groupcoord.server.ops.process import LoopLag


async def test_a_blocked_loop_is_measured_as_at_least_the_block_minus_the_interval() -> None:
    lag = LoopLag(interval_s=0.05)
    lag.start(asyncio.get_running_loop())
    try:
        deadline = time.monotonic() + 30
        while lag.hist.counts == [0] * len(lag.hist.counts) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        seen = sum(lag.hist.counts)
        assert seen >= 1, "the probe never ran"
        # block the loop: the next tick, due at most 0.05 s after this starts, runs 0.45 s late or later
        time.sleep(0.5)
        while sum(lag.hist.counts) == seen and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert lag.last >= 0.4
        assert lag.hist.total >= 0.4
        assert sum(lag.hist.counts[lag.hist.bounds.index(0.25) + 1 :]) >= 1  # counted above the 0.25 s bucket
    finally:
        lag.stop()
