"""Cluster mode: three nodes, one PostgreSQL; a consumer group survives the kill -9 of its coordinator's node."""

from __future__ import annotations

import logging
import time

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from tests.cluster.helpers import start_nodes, wait_balanced
from tests.integration.helpers import HeartbeatCounter, wait_for

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


async def test_a_stable_group_survives_the_kill_of_its_coordinator_without_a_rebalance(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "orders:2")
    await wait_balanced(pg_url, list(nodes))
    c = AIOKafkaConsumer(
        "orders",
        bootstrap_servers=",".join(n.bootstrap for n in nodes.values()),
        group_id="survivor",
        enable_auto_commit=False,
    )  # default session.timeout.ms (10 s) and heartbeat.interval.ms (3 s)
    await c.start()
    try:
        await wait_for(lambda: len(c.assignment()) == 2, 30, "the consumer to own both partitions")
        await c.commit({TopicPartition("orders", p): 40 + p for p in range(2)})
        coordinator = c._coordinator
        gen, member, owner = coordinator.generation, coordinator.member_id, coordinator.coordinator_id
        assert owner in nodes
        heartbeats = HeartbeatCounter(c)
        nodes[owner].kill()
        killed = time.monotonic()
        heartbeats.ok = 0
        # a successful heartbeat: some other node knows the member at its generation, no rebalance pending
        await wait_for(lambda: heartbeats.ok >= 1, 30, "a heartbeat answered by the new coordinator")
        took = time.monotonic() - killed
        assert coordinator.coordinator_id not in (None, owner)
        assert (coordinator.generation, coordinator.member_id) == (gen, member)
        assert c.assignment() == {TopicPartition("orders", p) for p in range(2)}
        # the acknowledged commits are served by the new coordinator
        for p in range(2):
            assert await c.committed(TopicPartition("orders", p)) == 40 + p
        await wait_for(lambda: heartbeats.ok >= 3, 30, "more heartbeats at the same generation")
        assert coordinator.generation == gen
        print(f"failover: first successful heartbeat {took:.2f}s after kill -9")
    finally:
        await c.stop()
