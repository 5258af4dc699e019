"""TimerService on a VirtualClock: due deadlines fire in deadline order, at their own "now", and only when
the clock is advanced past them; pushed-forward and cancelled keys behave as on the wall clock."""

from __future__ import annotations

import asyncio

from groupcoord.server.control.clock import VirtualClock
from groupcoord.server.timers import TimerService


async def test_step_fires_each_deadline_at_its_own_now_in_order() -> None:
    clock = VirtualClock(1_000)
    fired: list[tuple[str, int]] = []
    timers = TimerService(asyncio.get_running_loop(), lambda key: fired.append((key, clock.now_ms())), clock)
    timers.schedule("c", 1_300)
    timers.schedule("a", 1_100)
    timers.schedule("b", 1_200)
    timers.schedule("pushed", 1_050)
    timers.schedule("pushed", 1_250)  # heartbeat-style push forward
    timers.schedule("gone", 1_150)
    timers.cancel("gone")
    while clock.step(1_250):
        pass
    clock.set(1_250)
    assert fired == [("a", 1_100), ("b", 1_200), ("pushed", 1_250)]
    assert clock.now_ms() == 1_250
    assert clock.next_deadline() == 1_300
    assert not clock.step(1_299)
    assert clock.step(1_300)
    assert fired[-1] == ("c", 1_300)
    assert clock.next_deadline() is None


async def test_nothing_fires_on_the_event_loop_until_the_clock_moves() -> None:
    clock = VirtualClock(0)
    fired: list[str] = []
    timers = TimerService(asyncio.get_running_loop(), fired.append, clock)
    timers.schedule("later", 1)
    await asyncio.sleep(0.05)
    assert fired == []
    timers.schedule("due-now", 0)  # a zero delay is due at once, as on the wall clock
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fired == ["due-now"]
