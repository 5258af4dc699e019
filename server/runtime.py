"""Runs the pure group state machine: one mailbox per group, timers, persist-then-reply, the journal.

The state machine (`groupcoord.server.coordinator`) never does I/O; it returns `Effects`. This module applies them:
timers to the `TimerService`, events to the journal and the log, records to the `StateStore`, and replies to
the futures the network layer waits on. Each group is an actor: while a group waits for a write to become
durable, its later requests and timer expiries queue in its mailbox and run in order afterwards, so the
machine always sees a group's operations one at a time and a reply never precedes its write.

With the in-memory store writes complete at once and everything runs synchronously inside the call.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

import structlog

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.types import CancelTimer, Effects, ScheduleTimer
from groupcoord.server.journal import Journal
from groupcoord.server.timers import WALL_CLOCK, Clock, TimerService

log = structlog.get_logger("groupcoord.coordinator")

Step = Callable[[int], tuple[Any, Effects | None]]  # now_ms -> (immediate result, effects)


class _Mailbox:
    __slots__ = ("busy", "queue")

    def __init__(self) -> None:
        self.busy = False
        self.queue: deque[tuple[Step, asyncio.Future | None]] = deque()


class GroupRuntime:
    def __init__(
        self,
        machine: Any,
        store: Any,
        journal: Journal,
        loop: asyncio.AbstractEventLoop,
        clock: Clock = WALL_CLOCK,
    ) -> None:
        self.machine = machine
        self.store = store
        self.journal = journal
        self.loop = loop
        self.now_ms = clock.now_ms  # "now" for the state machine: the wall clock, or a test's virtual clock
        self.timers = TimerService(loop, self._timer_fired, clock)
        self._boxes: dict[str, _Mailbox] = {}
        self._sync_store = bool(getattr(store, "synchronous", False))
        self._writes: set[asyncio.Task] = set()
        self.loading = False

    # -- entry points

    def call(self, group_id: str, step: Step) -> Any:
        """Run `step` for a group now if the group is idle, else queue it; returns the result or a future."""
        box = self._boxes.get(group_id)
        if box is not None and box.busy:
            fut = self.loop.create_future()
            box.queue.append((step, fut))
            return fut
        result, effects = step(self.now_ms())
        if effects:
            self._apply(group_id, effects)
        return result

    def call_global(self, step: Step) -> Any:
        """Run a step that spans groups (DeleteGroups, offset expiry); its writes are not serialised per group.

        When the step writes records to an asynchronous store the result comes back as a future resolved
        once the write is durable, so a DeleteGroups answer never precedes its tombstones.
        """
        result, effects = step(self.now_ms())
        if not effects:
            return result
        if effects.records and not self._sync_store:
            fut = self.loop.create_future()
            inner = effects.after_persist

            def after(ok: bool, now: int) -> Effects | None:
                more = inner(ok, now) if inner is not None else None
                if not fut.done():
                    fut.set_result(result)
                return more

            effects.after_persist = after
            self._apply(None, effects)
            return fut
        self._apply(None, effects)
        return result

    def _timer_fired(self, key: Hashable) -> None:
        group_id = key[1]  # type: ignore[index]
        machine = self.machine
        self.call(group_id, lambda now: (None, machine.on_timer(key, now)))

    # -- effects

    def _apply(self, group_id: str | None, effects: Effects) -> None:
        timers = self.timers
        for op in effects.timers:
            if type(op) is ScheduleTimer:
                timers.schedule(op.key, op.deadline_ms)
            elif type(op) is CancelTimer:
                timers.cancel(op.key)
        for event in effects.events:
            self._event(event)
        if effects.records:
            if self._sync_store:
                try:
                    self.store.write_now(effects.records)
                    ok = True
                except Exception as exc:
                    log.error("state write failed", error=repr(exc))
                    ok = False
                self._finish(group_id, effects, ok)
            else:
                if group_id is not None:
                    self._box(group_id).busy = True
                task = self.loop.create_task(self._persist(group_id, effects))
                self._writes.add(task)
                task.add_done_callback(self._writes.discard)
        else:
            self._finish(group_id, effects, True)

    async def _persist(self, group_id: str | None, effects: Effects) -> None:
        try:
            await self.store.write(effects.records)
            ok = True
        except Exception as exc:
            log.error("state write failed", group=group_id, error=repr(exc))
            ok = False
        if group_id is not None:
            self._box(group_id).busy = False
        self._finish(group_id, effects, ok)
        if group_id is not None:
            self._drain(group_id)

    def _finish(self, group_id: str | None, effects: Effects, ok: bool) -> None:
        if effects.after_persist is not None:
            more = effects.after_persist(ok, self.now_ms())
            if more:
                self._apply(group_id, more)
        for token, result in effects.replies:
            if not token.done():  # type: ignore[attr-defined]
                token.set_result(result)  # type: ignore[attr-defined]

    def _drain(self, group_id: str) -> None:
        box = self._boxes.get(group_id)
        while box is not None and box.queue and not box.busy:
            step, fut = box.queue.popleft()
            try:
                result, effects = step(self.now_ms())
                if effects:
                    self._apply(group_id, effects)
            except Exception as exc:
                log.exception("group step failed", group=group_id)
                if fut is not None and not fut.done():
                    fut.set_exception(exc)
                continue
            if fut is not None and not fut.done():
                if isinstance(result, asyncio.Future):
                    _chain(result, fut)
                else:
                    fut.set_result(result)
        if box is not None and not box.busy and not box.queue:
            self._boxes.pop(group_id, None)

    def _box(self, group_id: str) -> _Mailbox:
        box = self._boxes.get(group_id)
        if box is None:
            box = self._boxes[group_id] = _Mailbox()
        return box

    def _event(self, event: dict) -> None:
        self.journal.append(event)
        if event.get("event") == "state_change":
            log.info(
                "group state change",
                group=event.get("group"),
                generation=event.get("generation"),
                state_from=event.get("state_from"),
                state_to=event.get("state_to"),
                reason=event.get("reason"),
                members=event.get("members"),
            )
        else:
            log.debug(
                "group event",
                kind=event.get("event"),
                group=event.get("group"),
                member_id=event.get("member_id"),
                reason=event.get("reason"),
            )

    async def quiesce(self) -> None:
        """Wait for in-flight writes (shutdown)."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    def close(self) -> None:
        self.timers.close()


def _chain(src: asyncio.Future, dst: asyncio.Future) -> None:
    def done(f: asyncio.Future) -> None:
        if dst.done():
            return
        if f.cancelled():
            dst.cancel()
        elif f.exception() is not None:
            dst.set_exception(f.exception())  # type: ignore[arg-type]
        else:
            dst.set_result(f.result())

    src.add_done_callback(done)


NOT_COORDINATOR_WHILE_LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
