"""A clock the test moves: group timers fire on `advance`, not on the event loop.

The runtime and its `TimerService`s take "now" from this clock; with `virtual` set they arm nothing on the
loop. `step(target)` moves now to the earliest deadline at or before `target` and fires everything due
then, so a test's `advance(ms)` sees timers fire one deadline at a time, in deadline order.
"""

from __future__ import annotations

from groupcoord.server.timers import TimerService


class VirtualClock:
    virtual = True

    def __init__(self, start_ms: int) -> None:
        self._now = start_ms
        self._services: list[TimerService] = []

    def now_ms(self) -> int:
        return self._now

    def attach(self, service: TimerService) -> None:
        self._services.append(service)

    def next_deadline(self) -> int | None:
        deadlines = [d for s in self._services if (d := s.next_deadline()) is not None]
        return min(deadlines) if deadlines else None

    def step(self, target_ms: int) -> bool:
        """Fire the timers of the earliest deadline at or before `target_ms`; False when none is due."""
        first = self.next_deadline()
        if first is None or first > target_ms:
            return False
        self._now = max(self._now, first)
        for service in list(self._services):
            service.run_due()
        return True

    def set(self, now_ms: int) -> None:
        """Move now forward without firing anything (the end of an advance)."""
        self._now = max(self._now, now_ms)
