"""aiokafka consumer groups against the real server: membership, rebalances, expiry, static members, commits."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import OffsetAndMetadata

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


@pytest.mark.parametrize("n", [1, 5, 20])
async def test_consumers_join_and_cover_all_partitions_exactly_once(groupcoord_server, n: int) -> None:
    bootstrap = groupcoord_server.bootstrap
    partitions = 24
    await create_topic(bootstrap, "orders", partitions)
    consumers = [consumer(bootstrap, "orders", "g-cover") for _ in range(n)]
    try:
        await asyncio.gather(*(c.start() for c in consumers))
        await settled(consumers, {("orders", p) for p in range(partitions)}, timeout=60)
        sizes = sorted(len(owned(c)) for c in consumers)
        assert sizes[-1] - sizes[0] <= 1
    finally:
        await asyncio.gather(*(c.stop() for c in consumers))


async def test_clean_leave_rebalances_the_rest(groupcoord_server) -> None:
    bootstrap = groupcoord_server.bootstrap
    await create_topic(bootstrap, "t", 6)
    everything = {("t", p) for p in range(6)}
    consumers = [consumer(bootstrap, "t", "g-leave") for _ in range(3)]
    await asyncio.gather(*(c.start() for c in consumers))
    try:
        await settled(consumers, everything)
        before = generation(consumers[0])
        await consumers[2].stop()  # sends LeaveGroup
        await settled(consumers[:2], everything, timeout=20)
        assert generation(consumers[0]) > before
    finally:
        await asyncio.gather(*(c.stop() for c in consumers[:2]))


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
        await wait_for(lambda: 0 < len(owned(survivor)) < 4, 20, "the survivor to share the partitions")
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
            lambda: owned(b2) == b_parts, 20, "the restarted static member to get its partitions back"
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


async def test_commits_are_fetched_back(groupcoord_server) -> None:
    bootstrap = groupcoord_server.bootstrap
    await create_topic(bootstrap, "c", 2)
    c1 = consumer(bootstrap, "c", "g-commit")
    await c1.start()
    try:
        await wait_for(lambda: len(owned(c1)) == 2, 20, "assignment")
        tp0, tp1 = TopicPartition("c", 0), TopicPartition("c", 1)
        await c1.commit({tp0: OffsetAndMetadata(42, "meta-0"), tp1: OffsetAndMetadata(7, "")})
        assert await c1.committed(tp0) == 42
        assert await c1.committed(tp1) == 7
    finally:
        await c1.stop()
    c2 = consumer(bootstrap, "c", "g-commit")
    await c2.start()
    try:
        assert await c2.committed(TopicPartition("c", 0)) == 42
    finally:
        await c2.stop()


async def test_describe_list_and_delete_groups_through_the_admin_clients(groupcoord_server) -> None:
    """aiokafka's admin lists and describes; it has no group deletion, so kafka-python's admin deletes."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import NonEmptyGroupError

    bootstrap = groupcoord_server.bootstrap
    await create_topic(bootstrap, "adm", 2)
    c = consumer(bootstrap, "adm", "g-admin")
    await c.start()
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    kp_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        await wait_for(lambda: len(owned(c)) == 2, 20, "assignment")
        listed = await admin.list_consumer_groups()
        assert ("g-admin", "consumer") in [(g[0], g[1]) for g in listed]
        described = (await admin.describe_consumer_groups(["g-admin"]))[0].groups[0]
        error_code, group_id, state, protocol_type, protocol, members = described[:6]
        assert (error_code, group_id, state, protocol_type, protocol) == (
            0,
            "g-admin",
            "Stable",
            "consumer",
            "roundrobin",
        )
        assert len(members) == 1
        refused = await asyncio.to_thread(kp_admin.delete_groups, ["g-admin"])
        assert refused == {"g-admin": NonEmptyGroupError.__name__}
        await c.stop()
        await wait_for_empty(admin, "g-admin")
        deleted = await asyncio.to_thread(kp_admin.delete_groups, ["g-admin"])
        assert list(deleted) == ["g-admin"] and deleted["g-admin"] in (None, "OK", "NoError")
        described = (await admin.describe_consumer_groups(["g-admin"]))[0].groups[0]
        assert described[2] == "Dead"
    finally:
        kp_admin.close()
        await admin.close()
        await c.stop()


async def wait_for_empty(admin: AIOKafkaAdminClient, group: str) -> None:
    for _ in range(100):
        described = await admin.describe_consumer_groups([group])
        if described[0].groups[0][2] == "Empty":
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"group {group} never became Empty")
