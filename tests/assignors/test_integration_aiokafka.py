"""aiokafka consumer groups using each of our strategies against the real groupcoord server.

Per strategy: one consumer reads a first batch alone; a second member joins and the group reads a second
batch split as the strategy says; the second member leaves and the first reads a third batch alone. Every
record must be read, by the member that owns its partition at the time (k members for ``replicated``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from groupcoord.assignors.adapters import (
    CopartitionAssignor,
    CoreAssignor,
    RackAwareAssignor,
    RangeAssignor,
    ReplicatedAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

Record = tuple[str, int, bytes]  # topic, partition, value


class Member:
    """A consumer with its own assignor instance, reading in the background and committing each batch."""

    def __init__(self, bootstrap: str, topics: list[str], group: str, assignor: CoreAssignor) -> None:
        self.assignor = assignor
        self.consumer = AIOKafkaConsumer(
            *topics,
            bootstrap_servers=bootstrap,
            group_id=group,
            partition_assignment_strategy=(assignor,),
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
        )
        assignor.bind(self.consumer)
        self.seen: list[Record] = []
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        await self.consumer.start()
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=100)
            for tp, records in batches.items():
                self.seen.extend((tp.topic, tp.partition, r.value) for r in records)
            if batches:
                await self.consumer.commit()

    def owned(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def generation(self) -> int:
        return self.consumer._coordinator.generation

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        await self.consumer.stop()


async def until(predicate: Callable[[], bool], what: str, timeout: float = 15) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


async def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()])
    finally:
        await admin.close()


async def produce(bootstrap: str, topics: dict[str, int], batch: str) -> list[Record]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    sent: list[Record] = []
    try:
        for t, n in topics.items():
            for p in range(n):
                for i in range(3):
                    value = f"{batch}-{t}-{p}-{i}".encode()
                    await producer.send_and_wait(t, value, partition=p)
                    sent.append((t, p, value))
    finally:
        await producer.stop()
    return sent


def settled(members: list[Member], everything: set[tuple[str, int]], copies: int) -> Callable[[], bool]:
    def ok() -> bool:
        if len({m.generation() for m in members}) != 1:
            return False
        claims = [tp for m in members for tp in m.owned()]
        return set(claims) == everything and len(claims) == copies * len(everything)

    return ok


def read_by_owner(members: list[Member], records: list[Record]) -> Callable[[], bool]:
    """Every record was read by each member owning its partition."""

    def ok() -> bool:
        for m in members:
            mine = {(t, p) for t, p in m.owned()}
            want = {r for r in records if (r[0], r[1]) in mine}
            if not want <= set(m.seen):
                return False
        return True

    return ok


CASES: dict[str, tuple[Callable[[str], CoreAssignor], dict[str, int], tuple[str, ...], int]] = {
    # name: (assignor factory given a rack, topics, server args, copies per partition)
    "range": (lambda rack: RangeAssignor(), {"events": 6}, (), 1),
    "roundrobin": (lambda rack: RoundRobinAssignor(), {"events": 6}, (), 1),
    "sticky": (lambda rack: StickyAssignor(), {"events": 6}, (), 1),
    "copartition": (
        lambda rack: CopartitionAssignor([["orders", "payments"]]),
        {"orders": 4, "payments": 4},
        (),
        1,
    ),
    "replicated": (lambda rack: ReplicatedAssignor(k=2, strict=False), {"events": 4}, (), 2),
    "rack-aware": (lambda rack: RackAwareAssignor(rack=rack), {"events": 6}, ("--broker-rack", "rack-a"), 1),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_group_assigns_across_join_and_leave(server_factory, name: str) -> None:
    """Membership only (JoinGroup/SyncGroup/LeaveGroup): no Produce, Fetch or ListOffsets needed."""
    factory, topics, server_args, copies = CASES[name]
    server = server_factory(*server_args)
    await asyncio.wait_for(_scenario(server.bootstrap, name, factory, topics, copies, consume=False), 30)


@pytest.mark.parametrize("name", list(CASES))
async def test_group_consumes_across_join_and_leave(server_factory, name: str) -> None:
    factory, topics, server_args, copies = CASES[name]
    server = server_factory(*server_args)
    await asyncio.wait_for(_scenario(server.bootstrap, name, factory, topics, copies, consume=True), 30)


async def _scenario(
    bootstrap: str,
    name: str,
    factory: Callable[[str], CoreAssignor],
    topics: dict[str, int],
    copies: int,
    consume: bool,
) -> None:
    everything = {(t, p) for t, n in topics.items() for p in range(n)}
    await create_topics(bootstrap, topics)
    first = Member(bootstrap, sorted(topics), f"g-{name}", factory("rack-a"))
    second = Member(bootstrap, sorted(topics), f"g-{name}", factory("rack-b"))
    try:
        # Alone: everything (k copies need k members, so a lone replicated member gets one copy).
        await first.start()
        await until(settled([first], everything, 1), "first member to own everything")
        if consume:
            batch1 = await produce(bootstrap, topics, "b1")
            await until(read_by_owner([first], batch1), "batch 1")
        alone = first.owned()

        # Join: the two members split (or, replicated, both hold) the partitions.
        await second.start()
        await until(settled([first, second], everything, copies), "the group to settle after a join")
        assert first.assignor.generation == first.generation()  # bound: the real generation
        if name in ("sticky", "copartition"):
            assert first.owned() <= alone
        if name == "copartition":
            for m in (first, second):
                assert {p for t, p in m.owned() if t == "orders"} == {
                    p for t, p in m.owned() if t == "payments"
                }
        if copies == 1:
            sizes = sorted(len(m.owned()) for m in (first, second))
            assert sizes[1] - sizes[0] <= (2 if name == "copartition" else 1)
        if name in ("sticky", "copartition"):
            # A third member joins: the others only hand partitions over, they gain none (stickiness works
            # end to end: owned partitions travel in the subscriptions to whichever member leads).
            before = {id(m): m.owned() for m in (first, second)}
            third = Member(bootstrap, sorted(topics), f"g-{name}", factory("rack-c"))
            try:
                await third.start()
                await until(settled([first, second, third], everything, 1), "the group to settle with three")
                for m in (first, second):
                    assert m.owned() <= before[id(m)]
            finally:
                await third.stop()
            await until(settled([first, second], everything, 1), "the group to settle back to two")
        if consume:
            batch2 = await produce(bootstrap, topics, "b2")
            await until(read_by_owner([first, second], batch2), "batch 2")

        # Leave: the first member takes everything back and reads on from the committed offsets.
        await second.stop()
        await until(settled([first], everything, 1), "the group to settle after a leave")
        assert first.assignor.generation == first.generation()
        if consume:
            batch3 = await produce(bootstrap, topics, "b3")
            await until(read_by_owner([first], batch3), "batch 3")
            read = set(first.seen) | set(second.seen)
            assert set(batch1) | set(batch2) | set(batch3) <= read
    finally:
        await first.stop()
        await second.stop()


def plain_consumer(bootstrap: str, topic: str, group: str, strategies: tuple) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        partition_assignment_strategy=strategies,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        enable_auto_commit=False,
    )


def assigned(c: AIOKafkaConsumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in c.assignment()}


async def test_mixed_strategy_lists_and_aiokafkas_builtin_assignor(groupcoord_server) -> None:
    """aiokafka sends one JoinGroup per listed strategy and the group settles on the protocol every member
    offers: our member lists (sticky, roundrobin), aiokafka's built-in member only roundrobin. Our
    roundrobin adapter and aiokafka's own class then share one group, whichever of them leads."""
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    bootstrap = groupcoord_server.bootstrap
    everything = {("mixed", p) for p in range(6)}

    async def scenario() -> None:
        await create_topics(bootstrap, {"mixed": 6})
        sticky, rr = StickyAssignor(), RoundRobinAssignor()
        ours = plain_consumer(bootstrap, "mixed", "g-mixed", (sticky, rr))
        sticky.bind(ours)
        rr.bind(ours)
        builtin = plain_consumer(bootstrap, "mixed", "g-mixed", (RoundRobinPartitionAssignor,))
        try:
            await ours.start()
            await until(lambda: assigned(ours) == everything, "our member to own everything")
            assert set(sticky.owned) == everything and rr.owned == ()  # alone: sticky was chosen
            await builtin.start()

            def shared() -> bool:
                mine, theirs = assigned(ours), assigned(builtin)
                return not (mine & theirs) and mine | theirs == everything and len(mine) == len(theirs) == 3

            await until(shared, "our member and aiokafka's built-in member to share the topic")
            assert {(t, p) for t, p in rr.owned} == assigned(ours)  # roundrobin was chosen this time
        finally:
            await ours.stop()
            await builtin.stop()

    await asyncio.wait_for(scenario(), 30)
