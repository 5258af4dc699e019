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

from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import (
    CancelTimer,
    Effects,
    ScheduleTimer,
)
from groupcoord.server.journal.writer import Journal
from groupcoord.server.storage.base import StateStore
from groupcoord.server.storage.persist import Persister
from groupcoord.server.timers import WALL_CLOCK, Clock, TimerService

log = structlog.get_logger("groupcoord.coordinator")

Step = Callable[[int], tuple[Any, Effects | None]]  # now_ms -> (immediate result, effects)
Failed = Callable[[], Any]  # the answer (UNKNOWN_SERVER_ERROR) for a request whose step raised


class _Mailbox:
    __slots__ = ("busy", "queue")

    def __init__(self) -> None:
        self.busy = False
        self.queue: deque[tuple[Step, asyncio.Future | None, Failed | None]] = deque()


class GroupRuntime:
    def __init__(
        self,
        machine: GroupCoordinatorShard,
        store: StateStore,
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
        # persist, then answer (storage/persist.py): a synchronous store is written inside the call (no
        # mailbox wait), an asynchronous one awaited while the group's mailbox holds its later requests
        self.persister = Persister(store)
        self._writes: set[asyncio.Task] = set()
        self.loading = False
        #: told about every group event after the journal (the metrics in `groupcoord.server.ops`)
        self.listener: Callable[[dict], None] | None = None
        self.write_failing: str | None = None  # the error of the current run of failed state writes
        self.failed_writes = 0  # failed state writes in the current run
        self.failed_steps = 0  # group steps that raised (a bug): each answered and its group reset

    # -- entry points

    def call(self, group_id: str, step: Step, failed: Failed | None = None) -> Any:
        """Run `step` for a group now if the group is idle, else queue it; returns the result or a future.

        A step that raises is a bug in the state machine, but it must not leave a request unanswered or a
        group stuck: the request gets `failed()` (its API's UNKNOWN_SERVER_ERROR answer; without one the
        exception propagates and the connection is closed) and the group is reset (`_reset_group`).
        """
        box = self._boxes.get(group_id)
        if box is not None and box.busy:
            fut = self.loop.create_future()
            box.queue.append((step, fut, failed))
            return fut
        try:
            result, effects = step(self.now_ms())
        except Exception:
            self._step_failed(group_id)
            if failed is None:
                raise
            return failed()
        if effects:
            self._apply(group_id, effects)
        return result

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None
    ) -> int | None:
        """A Heartbeat's error code, its timer reset applied; None when it must take the general path (`call`):
        the group's mailbox is busy, or the machine raised (the general path runs it again and handles that).

        The fast path of issue 28: the same machine decision (`heartbeat_timer`), without the step closure,
        the `Effects` and their dispatch for the one timer a heartbeat can move."""
        box = self._boxes.get(group_id)
        if box is not None and box.busy:
            return None
        try:
            err, key, deadline = self.machine.heartbeat_timer(
                group_id, generation_id, member_id, instance_id, self.now_ms()
            )
        except Exception:
            return None
        if err is None:  # the machine asks for the general path (a classic member of a consumer group)
            return None
        if key is not None:
            self.timers.schedule(key, deadline)
        return err

    def consumer_heartbeat(self, group_id: str, member_id: str, fields: tuple[object, ...]) -> int | None:
        """A steady-state ConsumerGroupHeartbeat's member epoch, its session timer moved; None when it must
        take the general path (`call_parked`): the group's mailbox is busy, the heartbeat is not steady
        (`GroupCoordinatorShard.consumer_heartbeat_timer`), or the machine raised. No reply future: a steady
        heartbeat writes nothing, so there is nothing to wait for (issue 28)."""
        box = self._boxes.get(group_id)
        if box is not None and box.busy:
            return None
        try:
            steady = self.machine.consumer_heartbeat_timer(group_id, member_id, fields, self.now_ms())
        except Exception:
            return None
        if steady is None:
            return None
        self.timers.schedule(steady[1], steady[2])
        return steady[0]

    def call_parked(
        self,
        group_id: str,
        call: Callable[[asyncio.Future, int], Effects],
        failed: Callable[[], Any] | None = None,
    ) -> Any:
        """Run a machine call that may park its reply (JoinGroup, SyncGroup, OffsetCommit).

        The machine gets a fresh future as its reply token and answers through `Effects.replies`, possibly
        much later; the caller gets that future (or, if the group is busy, a future chained to it). `failed`
        is the answer should the step raise (UNKNOWN_SERVER_ERROR, as Kafka maps an unexpected exception).
        """
        token = self.loop.create_future()

        def step(now: int) -> tuple[asyncio.Future, Effects]:
            return token, call(token, now)

        return self.call(group_id, step, failed)

    def _step_failed(self, group_id: str) -> None:
        log.exception(
            "group step failed: answering UNKNOWN_SERVER_ERROR and resetting the group", group=group_id
        )
        self.failed_steps += 1
        self._reset_group(group_id)

    def _reset_group(self, group_id: str) -> None:
        """The machine resets the group (`GroupCoordinatorShard.reset_group`: parked requests answered
        UNKNOWN_SERVER_ERROR, timers cancelled, an Empty group written and journalled); here its effects are
        applied like any step's."""
        effects = self.machine.reset_group(group_id, self.now_ms())
        if effects:
            self._apply(group_id, effects)

    def call_global(self, step: Step) -> Any:
        """Run a step that spans groups (DeleteGroups, offset expiry); its writes are not serialised per group.

        When the step writes records to an asynchronous store the result comes back as a future resolved
        once the write is durable, so a DeleteGroups answer never precedes its tombstones.
        """
        result, effects = step(self.now_ms())
        if not effects:
            return result
        if effects.records and not self.persister.synchronous:
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

    def apply_unowned(self, effects: Effects) -> None:
        """Apply effects that belong to no single group's mailbox (those of `finish_load` at start)."""
        self._apply(None, effects)

    def _timer_fired(self, key: Hashable) -> None:
        group_id = key[1]  # type: ignore[index]
        machine = self.machine
        self.call(group_id, lambda now: (None, machine.on_timer(key, now)), _nothing)

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
            if self.persister.synchronous:
                try:
                    self.persister.write_now(effects.records)
                    ok = True
                except Exception as exc:
                    self._write_failed(group_id, effects, exc)
                    ok = False
                else:
                    self._write_succeeded()
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
        """Write, then apply the outcome. A failed write reaches the waiting requests as the machine's
        persist error code (COORDINATOR_NOT_AVAILABLE); nothing here may raise out of the task, where it
        would only surface as an unretrieved task exception and leave the group's mailbox stuck."""
        try:
            await self.persister.write(effects.records)
            ok = True
        except Exception as exc:
            self._write_failed(group_id, effects, exc)
            ok = False
        else:
            self._write_succeeded()
        if group_id is not None:
            self._box(group_id).busy = False
        try:
            self._finish(group_id, effects, ok)
        except Exception as exc:
            log.exception("applying the outcome of a state write failed", group=group_id, write_ok=ok)
            for token, _ in effects.replies:
                if not token.done():  # type: ignore[attr-defined]
                    token.set_exception(exc)  # type: ignore[attr-defined]  # the connection closes, logged
        if group_id is not None:
            self._drain(group_id)

    def _write_failed(self, group_id: str | None, effects: Effects, exc: BaseException) -> None:
        """Log the first failure of a run with its context; later ones only count (a full disk fails every
        write, and one line per heartbeat-driven write would flood the log)."""
        self.failed_writes += 1
        if self.write_failing is None:
            self.write_failing = repr(exc)
            log.error(
                "state write failed; waiting requests get COORDINATOR_NOT_AVAILABLE until writes succeed again",
                group=group_id,
                records=len(effects.records),
                waiting_requests=len(effects.replies),
                error=repr(exc),
            )

    def _write_succeeded(self) -> None:
        if self.write_failing is not None:
            log.warning(
                "state writes succeed again",
                failed_writes=self.failed_writes,
                previous_error=self.write_failing,
            )
            self.write_failing = None
            self.failed_writes = 0

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
            step, fut, failed = box.queue.popleft()
            try:
                result, effects = step(self.now_ms())
            except Exception as exc:
                self._step_failed(group_id)
                if fut is not None and not fut.done():
                    if failed is None:
                        fut.set_exception(exc)
                    else:
                        fut.set_result(failed())
                continue
            try:
                if effects:
                    self._apply(group_id, effects)
            except Exception as exc:
                log.exception("applying a group step's effects failed", group=group_id)
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
        if self.listener is not None:
            self.listener(event)
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


def _nothing() -> None:
    return None


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
