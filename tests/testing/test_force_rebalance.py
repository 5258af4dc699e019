"""`force_rebalance(group, reason)` with real aiokafka members, in-process and over the HTTP endpoint."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration.helpers import wait_for

pytestmark = pytest.mark.integration

TOPIC = "forced"
GROUP = "forced-app"


class Listener(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.assigned: list[set] = []

    async def on_partitions_revoked(self, revoked) -> None:  # type: ignore[no-untyped-def]
        pass

    async def on_partitions_assigned(self, assigned) -> None:  # type: ignore[no-untyped-def]
        self.assigned.append(set(assigned))


async def _produce(bootstrap: str, first: int, n: int) -> None:
    p = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await p.start()
    try:
        for i in range(first, first + n):
            await p.send_and_wait(TOPIC, str(i).encode(), partition=i % 2)
    finally:
        await p.stop()


async def _drain(consumers: list[AIOKafkaConsumer], seen: list[set[int]], want: set[int]) -> None:
    """Poll every consumer until together they have seen `want`."""

    async def done() -> bool:
        for c, s in zip(consumers, seen, strict=True):
            for records in (await c.getmany(timeout_ms=50)).values():
                s.update(int(r.value) for r in records)
        return want <= set().union(*seen)

    for _ in range(200):
        if await done():
            return
    raise AssertionError(f"consumed {sorted(set().union(*seen))}, wanted {sorted(want)}")


async def test_forced_rebalance_makes_both_aiokafka_members_rejoin_once_with_the_reason(groupcoord) -> None:  # type: ignore[no-untyped-def]
    admin = AIOKafkaAdminClient(bootstrap_servers=groupcoord.bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(TOPIC, 2, 1)])
    await admin.close()
    listeners = [Listener(), Listener()]
    consumers = [
        AIOKafkaConsumer(
            bootstrap_servers=groupcoord.bootstrap,
            group_id=GROUP,
            session_timeout_ms=10_000,
            heartbeat_interval_ms=100,  # wall clock: how soon each member hears of the rebalance
            auto_offset_reset="earliest",
        )
        for _ in listeners
    ]
    for c, listener in zip(consumers, listeners, strict=True):
        c.subscribe([TOPIC], listener=listener)
    try:
        await asyncio.gather(*(c.start() for c in consumers))
        view = await groupcoord.wait_group(GROUP, members=2)
        await wait_for(lambda: all(len(c.assignment()) == 1 for c in consumers), 60, "one partition each")
        seen: list[set[int]] = [set(), set()]
        await _produce(groupcoord.bootstrap, 0, 10)
        await _drain(consumers, seen, set(range(10)))
        assert all(seen), "each member consumed its partition before the rebalance"

        events = groupcoord.events(GROUP)
        during = await groupcoord.force_rebalance(GROUP, reason="test: forced")
        assert (during.state, during.generation) == ("PreparingRebalance", view.generation)
        after = await groupcoord.wait_group(GROUP, members=2, generation=view.generation + 1)
        assert after.generation == view.generation + 1
        assert {m.member_id for m in after.members} == {m.member_id for m in view.members}
        await wait_for(
            lambda: all(len(x.assigned) >= 2 for x in listeners), 60, "both told of the new assignment"
        )

        await _produce(groupcoord.bootstrap, 10, 10)
        seen = [set(), set()]
        await _drain(consumers, seen, set(range(10, 20)))
        assert all(seen), "each member consumed again after the rebalance"

        changes = []
        while not events.queue.empty():
            event = events.queue.get_nowait()
            if event["event"] == "state_change":
                changes.append((event["state_from"], event["state_to"], event["reason"]))
        events.close()
        assert changes[0] == ("Stable", "PreparingRebalance", "test: forced")
        assert [c for c in changes if c[1] == "PreparingRebalance"] == [changes[0]], "rebalanced once"
        assert groupcoord.describe(GROUP).generation == view.generation + 1
    finally:
        for c in consumers:
            await c.stop()


async def test_forcing_a_rebalance_of_a_missing_or_empty_group_is_refused(groupcoord) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KeyError):
        await groupcoord.force_rebalance("no-such-group", reason="x")
    c = AIOKafkaConsumer(bootstrap_servers=groupcoord.bootstrap, group_id="lonely", enable_auto_commit=False)
    c.subscribe(["t"])
    await c.start()
    await groupcoord.wait_group("lonely", members=1)
    await c.stop()  # a dynamic member leaves: the group is Empty
    await groupcoord.wait_group("lonely", state="Empty")
    with pytest.raises(ValueError, match="Empty"):
        await groupcoord.force_rebalance("lonely", reason="x")
    assert groupcoord.describe("lonely").state == "Empty"
