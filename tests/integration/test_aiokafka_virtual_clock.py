"""aiokafka on the virtual clock (groupcoord.testing): session expiry and static restarts fire when the test advances the clock.

The other group scenarios run once for every client in test_group_scenarios.py, on the wall clock.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration.helpers import exact_cover, wait_for

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


def consumer(bootstrap: str, topic: str, group: str, **kw) -> AIOKafkaConsumer:  # type: ignore[no-untyped-def]
    kw.setdefault("session_timeout_ms", 6000)
    kw.setdefault("heartbeat_interval_ms", 500)
    kw.setdefault("enable_auto_commit", False)
    return AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, **kw)


def owned(c: AIOKafkaConsumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def generation(c: AIOKafkaConsumer) -> int:
    return c._coordinator.generation


async def settled(
    consumers: list[AIOKafkaConsumer], expected: set[tuple[str, int]], timeout: float = 30
) -> None:
    def ok() -> bool:
        gens = {generation(c) for c in consumers}
        return len(gens) == 1 and exact_cover([owned(c) for c in consumers], expected)

    await wait_for(ok, timeout, f"{len(consumers)} consumers to share {len(expected)} partitions")


CHILD = textwrap.dedent(
    """
    import asyncio, sys, logging
    from aiokafka import AIOKafkaConsumer
    logging.disable(logging.CRITICAL)
    async def main():
        c = AIOKafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                             session_timeout_ms=int(sys.argv[4]), heartbeat_interval_ms=300,
                             enable_auto_commit=False)
        await c.start()
        while not c.assignment():
            await asyncio.sleep(0.05)
        print("assigned", flush=True)
        await asyncio.sleep(3600)
    asyncio.run(main())
    """
)


async def test_killed_consumer_expires_when_its_session_timeout_passes_and_the_rest_rebalance(
    groupcoord,
) -> None:
    """On the virtual clock (groupcoord.testing): the killed member's 3 s session ends exactly when the clock
    passes it, not a millisecond before; the survivor (a longer session) stays and takes every partition."""
    bootstrap = groupcoord.bootstrap
    await create_topic(bootstrap, "k", 4)
    everything = {("k", p) for p in range(4)}
    survivor = consumer(bootstrap, "k", "g-kill", session_timeout_ms=30000, heartbeat_interval_ms=300)
    await survivor.start()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, bootstrap, "k", "g-kill", "3000"], stdout=subprocess.PIPE, text=True
    )
    try:
        line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 30)  # type: ignore[union-attr]
        assert line.strip() == "assigned"
        await wait_for(lambda: 0 < len(owned(survivor)) < 4, 60, "the survivor to share the partitions")
        view = await groupcoord.wait_group("g-kill", members=2)
        child_id = next(m.member_id for m in view.members if m.member_id != survivor._coordinator.member_id)
        child.kill()  # no LeaveGroup: only the session timeout can remove it
        child.wait()
        await groupcoord.advance(2999)
        assert child_id in {m.member_id for m in groupcoord.describe("g-kill").members}
        await groupcoord.advance(1)
        assert child_id not in {m.member_id for m in groupcoord.describe("g-kill").members}
        await groupcoord.wait_group("g-kill", members=1, generation=view.generation + 1)
        await wait_for(lambda: owned(survivor) == everything, 30, "the survivor to own every partition")
    finally:
        child.kill()
        await survivor.stop()


async def test_static_member_restarted_inside_its_session_timeout_causes_no_rebalance(groupcoord) -> None:
    """The clock stands still, so b's session cannot run out while it restarts; the journal events show the
    static rejoin and no rebalance (a rebalance would precede the rejoin's answer, so no waiting for one)."""
    bootstrap = groupcoord.bootstrap
    await create_topic(bootstrap, "s", 4)
    everything = {("s", p) for p in range(4)}
    a = consumer(bootstrap, "s", "g-static", group_instance_id="a", session_timeout_ms=10000)
    b = consumer(bootstrap, "s", "g-static", group_instance_id="b", session_timeout_ms=10000)
    await asyncio.gather(a.start(), b.start())
    b2 = None
    try:
        await settled([a, b], everything)
        gen = generation(a)
        b_parts = owned(b)
        events = groupcoord.events("g-static")
        await b.stop()  # a static aiokafka member sends no LeaveGroup
        b2 = consumer(bootstrap, "s", "g-static", group_instance_id="b", session_timeout_ms=10000)
        await b2.start()
        await wait_for(
            lambda: owned(b2) == b_parts, 60, "the restarted static member to get its partitions back"
        )
        view = groupcoord.describe("g-static")
        assert (view.state, view.generation, len(view.members)) == ("Stable", gen, 2)
        assert generation(a) == gen
        assert generation(b2) == gen
        assert owned(a) == everything - b_parts
        seen = []
        while not events.queue.empty():
            seen.append(events.queue.get_nowait())
        events.close()
        assert any(e["event"] == "static_rejoin" and e["group_instance_id"] == "b" for e in seen)
        assert not any(e["event"] == "state_change" for e in seen), seen
    finally:
        await a.stop()
        if b2 is not None:
            await b2.stop()
