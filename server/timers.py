"""Keyed timers that don't churn.

Every member has a heartbeat timer that each heartbeat pushes forward. Cancelling and re-creating an
event-loop timer per heartbeat would allocate and re-heap on the hot path, so a key's deadline lives in a dict;
the heap holds at most a few entries per key and an entry whose key has moved on is re-pushed (or dropped)
when it comes due. Only the earliest deadline is armed on the event loop.

Deadlines are in the state machine's clock (wall-clock epoch ms); the service maps them onto the loop's
monotonic clock when arming.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, Hashable


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class TimerService:
    def __init__(self, loop: asyncio.AbstractEventLoop, fire: Callable[[Hashable], None]) -> None:
        self._loop = loop
        self._fire = fire
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

    def _arm(self) -> None:
        if self._closed or not self._heap:
            return
        first = self._heap[0][0]
        if self._armed_at is not None and self._armed_at <= first:
            return
        if self._handle is not None:
            self._handle.cancel()
        delay = max(0.0, (first - wall_ms()) / 1000.0)
        self._armed_at = first
        self._handle = self._loop.call_at(self._loop.time() + delay, self._run)

    def _run(self) -> None:
        self._handle = None
        self._armed_at = None
        now = wall_ms()
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
