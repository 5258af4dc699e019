"""KIP-429 cooperative rebalancing for aiokafka (`CooperativeStickyAssignor`) against the real server.

A group of 3 real aiokafka consumers keeps consuming the partitions that do not move while a fourth member
joins; the rebalance listener sees only moved partitions; no record is consumed twice (revoked partitions
are committed in `on_partitions_revoked`, kept ones never restart from the committed offset).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from groupcoord.assignors.adapters.cooperative import CooperativeGroupCoordinator, CooperativeStickyAssignor
from tests.integration.helpers import exact_cover, wait_for

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

TOPIC = "coop"
PARTITIONS = 12


class Member(ConsumerRebalanceListener):
    """One cooperative consumer, its consume loop and what its listener was told."""

    def __init__(self, bootstrap: str, group: str, name: str, topic: str = TOPIC) -> None:
        self.name, self.topic = name, topic
        self.assignor = CooperativeStickyAssignor()
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            partition_assignment_strategy=(self.assignor,),
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10000,
            heartbeat_interval_ms=300,
            fetch_max_wait_ms=50,
        )
        self.revoked: list[set[TopicPartition]] = []
        self.assigned: list[set[TopicPartition]] = []
        self.consumed: list[tuple[float, TopicPartition, int]] = []
        self.task: asyncio.Task[None] | None = None
        self.rejoins: list[float] = []  # when this member began each (re)join

    def watch_rejoins(self) -> None:
        coordinator = self.consumer._coordinator  # aiokafka has no public hook for "rebalance started"
        prepare = coordinator._on_join_prepare

        async def timed(previous_assignment):  # type: ignore[no-untyped-def]
            self.rejoins.append(time.monotonic())
            await prepare(previous_assignment)

        coordinator._on_join_prepare = timed

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked.append(set(revoked))
        if revoked:  # hand the position over, so the next owner starts exactly where we stopped
            await self.consumer.commit({tp: self.consumer.position_nowait(tp) for tp in revoked})

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.assigned.append(set(assigned))

    async def start(self) -> None:
        self.consumer.subscribe([self.topic], listener=self)
        await self.consumer.start()
        self.watch_rejoins()
        self.task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=50)
            now = time.monotonic()
            for tp, records in batch.items():
                self.consumed.extend((now, tp, r.offset) for r in records)

    def owned(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self.consumer.stop()


def position_nowait(consumer: AIOKafkaConsumer, tp: TopicPartition) -> int:
    return consumer._subscription.subscription.assignment.state_value(tp).position


AIOKafkaConsumer.position_nowait = position_nowait  # type: ignore[attr-defined]


async def produce_forever(bootstrap: str, stop: asyncio.Event) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    await producer.start()
    try:
        n = 0
        while not stop.is_set():
            futs = [await producer.send(TOPIC, b"%d" % n, partition=p) for p in range(PARTITIONS)]
            await asyncio.gather(*futs)
            n += 1
            await asyncio.sleep(0.02)
    finally:
        await producer.stop()


async def settled(members: list[Member], timeout: float = 40) -> None:
    expected = {(TOPIC, p) for p in range(PARTITIONS)}

    def ok() -> bool:
        gens = {m.consumer._coordinator.generation for m in members}
        loads = {len(m.owned()) for m in members}
        return (
            len(gens) == 1
            and max(loads) - min(loads) <= 1
            and exact_cover([m.owned() for m in members], expected)
            and not any(m.consumer._coordinator._rejoin_needed_fut.done() for m in members)
        )

    await wait_for(ok, timeout, f"{len(members)} cooperative members to settle")


async def test_three_cooperative_members_keep_consuming_unmoved_partitions_while_a_fourth_joins(
    groupcoord_server,
) -> None:
    bootstrap = groupcoord_server.bootstrap
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    await admin.close()

    stop = asyncio.Event()
    producer = asyncio.create_task(produce_forever(bootstrap, stop))
    members = [Member(bootstrap, "coop-group", f"m{i}") for i in range(3)]
    try:
        for m in members:
            await m.start()
        assert all(isinstance(m.consumer._coordinator, CooperativeGroupCoordinator) for m in members)
        await settled(members)
        before = {m.name: m.owned() for m in members}
        history = {m.name: (len(m.revoked), len(m.assigned)) for m in members}

        newcomer = Member(bootstrap, "coop-group", "m3")
        t0 = time.monotonic()
        await newcomer.start()  # returns once the newcomer has its first (possibly empty) assignment
        await wait_for(lambda: any(newcomer.assigned), 40, "the newcomer to get partitions")
        t1 = time.monotonic()
        group = [*members, newcomer]
        await settled(group)
        after = {m.name: m.owned() for m in group}

        # the rebalance window: from the first old member noticing the rebalance to the handover
        started = min(t for m in members for t in m.rejoins if t > t0)
        assert started < t1
        for m in members:
            kept = before[m.name] & after[m.name]
            moved = before[m.name] - after[m.name]
            assert kept, f"{m.name} kept nothing: {before[m.name]} -> {after[m.name]}"
            # consumption of every kept partition went on inside the rebalance window
            during = {(tp.topic, tp.partition) for t, tp, _ in m.consumed if started < t < t1}
            assert kept <= during, f"{m.name} paused kept partitions {sorted(kept - during)}"
            # the listener heard only about what moved, and nothing was added to an old member
            nrev, nass = history[m.name]
            revoked = {(tp.topic, tp.partition) for s in m.revoked[nrev:] for tp in s}
            assigned = {(tp.topic, tp.partition) for s in m.assigned[nass:] for tp in s}
            assert revoked == moved
            assert assigned == set()
        newcomer_got = {(tp.topic, tp.partition) for s in newcomer.assigned for tp in s}
        assert newcomer_got == after["m3"] == set().union(*(before[m.name] - after[m.name] for m in members))
        assert exact_cover(after.values(), {(TOPIC, p) for p in range(PARTITIONS)})
        assert len(after["m3"]) == PARTITIONS // 4  # only the partitions the newcomer needed moved

        # no record was consumed twice: kept partitions never restarted from a committed offset
        seen = [(tp, off) for m in group for _, tp, off in m.consumed]
        assert len(seen) == len(set(seen))
        newcomer_members = [newcomer]
    finally:
        stop.set()
        await producer
        for m in [*members, *locals().get("newcomer_members", [])]:
            await m.stop()
