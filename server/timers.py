"""Keyed timers that don't churn.

Every member has a heartbeat timer that each heartbeat pushes forward. Cancelling and re-creating an
event-loop timer per heartbeat would allocate and re-heap on the hot path, so a key's deadline lives in a dict;
the heap holds at most a few entries per key and an entry whose key has moved on is re-pushed (or dropped)
when it comes due. Only the earliest deadline is armed on the event loop.

Deadlines are in the state machine's clock (wall-clock epoch ms by default); the service maps them onto the
loop's monotonic clock when arming. A test clock (`groupcoord.server.control.clock.VirtualClock`) replaces
both: the service then arms nothing on the loop and the clock fires due deadlines when a test advances it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, Hashable
from typing import Protocol


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class Clock(Protocol):
    """Where "now" comes from for the state machine and its timers.

    `virtual` False: deadlines are armed on the event loop (production). True: nothing is armed; the clock
    owns time and calls `TimerService.run_due` itself (tests). Services register with `attach`.
    """

    virtual: bool

    def now_ms(self) -> int: ...

    def attach(self, service: TimerService) -> None: ...


class WallClock:
    """The default clock: epoch milliseconds, timers on the event loop."""

    virtual = False

    now_ms = staticmethod(wall_ms)  # the function itself: no extra call on the hot path

    def attach(self, service: TimerService) -> None:
        return None


WALL_CLOCK = WallClock()


class TimerService:
    def __init__(
        self, loop: asyncio.AbstractEventLoop, fire: Callable[[Hashable], None], clock: Clock = WALL_CLOCK
    ) -> None:
        self._loop = loop
        self._fire = fire
        self._clock = clock
        self._virtual = clock.virtual
        clock.attach(self)
        self._deadlines: dict[Hashable, int] = {}
        self._heap: list[tuple[int, int, Hashable]] = []
        self._seq = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._armed_at: int | None = None
        self._closed = False

    def __len__(self) -> int:
        return len(self._deadlines)

    def schedule(self, key: Hashable, deadline_ms: int) -> None:
        old = self._deadlines.get(key)
        self._deadlines[key] = deadline_ms
        if old is not None and old <= deadline_ms:
            return  # the existing heap entry comes due first and will be re-pushed then
        heapq.heappush(self._heap, (deadline_ms, next(self._seq), key))
        self._arm()

    def cancel(self, key: Hashable) -> None:
        self._deadlines.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        return self._deadlines.get(key)

    def close(self) -> None:
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def next_deadline(self) -> int | None:
        """The earliest live deadline (a virtual clock advances to it next); None when nothing is scheduled."""
        heap = self._heap
        while heap:
            deadline, _, key = heap[0]
            current = self._deadlines.get(key)
            if current is None:
                heapq.heappop(heap)  # cancelled
            elif current > deadline:
                heapq.heapreplace(heap, (current, next(self._seq), key))  # pushed forward meanwhile
            elif current < deadline:
                heapq.heappop(heap)  # superseded by an earlier entry for the key
            else:
                return deadline
        return None

    def run_due(self) -> None:
        """Fire every deadline at or before the clock's now, in deadline order (a virtual clock's step)."""
        if not self._closed:
            self._run()

    def _arm(self) -> None:
        if self._closed or not self._heap:
            return
        first = self._heap[0][0]
        if self._virtual:
            # a virtual clock fires future deadlines itself; one already due (a zero delay) fires now
            if first <= self._clock.now_ms() and self._handle is None:
                self._handle = self._loop.call_soon(self._run)  # type: ignore[assignment]
            return
        if self._armed_at is not None and self._armed_at <= first:
            return
        if self._handle is not None:
            self._handle.cancel()
        delay = max(0.0, (first - self._clock.now_ms()) / 1000.0)
        self._armed_at = first
        self._handle = self._loop.call_at(self._loop.time() + delay, self._run)

    def _run(self) -> None:
        self._handle = None
        self._armed_at = None
        now = self._clock.now_ms()
        heap = self._heap
        due: list[Hashable] = []
        while heap and heap[0][0] <= now:
            deadline, _, key = heapq.heappop(heap)
            current = self._deadlines.get(key)
            if current is None:
                continue  # cancelled
            if current > deadline:
                heapq.heappush(heap, (current, next(self._seq), key))  # pushed forward meanwhile
                continue
            if current == deadline:
                del self._deadlines[key]
                due.append(key)
        for key in due:
            self._fire(key)
        self._arm()
