"""Cluster mode: three nodes, one PostgreSQL; a consumer group survives the kill -9 of its coordinator's node."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import time

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import (
    committed,
    fetched_offset,
    raw_commit,
    read_commit_error,
    shard_owner,
    start_nodes,
    wait_balanced,
    wait_partitions_spread,
)
from tests.integration.helpers import HeartbeatCounter, stop_aiokafka, wait_for

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
        await wait_for(lambda: len(c.assignment()) == 2, 60, "the consumer to own both partitions")
        await c.commit({TopicPartition("orders", p): 40 + p for p in range(2)})
        coordinator = c._coordinator
        gen, member, owner = coordinator.generation, coordinator.member_id, coordinator.coordinator_id
        assert owner in nodes
        heartbeats = HeartbeatCounter(c)
        nodes[owner].kill()
        killed = time.monotonic()
        heartbeats.ok = 0
        # a successful heartbeat: some other node knows the member at its generation, no rebalance pending
        await wait_for(lambda: heartbeats.ok >= 1, 60, "a heartbeat answered by the new coordinator")
        took = time.monotonic() - killed
        assert coordinator.coordinator_id not in (None, owner)
        assert (coordinator.generation, coordinator.member_id) == (gen, member)
        assert c.assignment() == {TopicPartition("orders", p) for p in range(2)}
        # the acknowledged commits are served by the new coordinator
        for p in range(2):
            assert await fetched_offset(c, TopicPartition("orders", p)) == 40 + p
        await wait_for(lambda: heartbeats.ok >= 3, 60, "more heartbeats at the same generation")
        assert coordinator.generation == gen
        print(f"failover: first successful heartbeat {took:.2f}s after kill -9")
    finally:
        await stop_aiokafka(c)


async def test_a_paused_owner_cannot_write_after_another_node_took_its_shard(
    server_factory, pg_url: str
) -> None:
    """SIGSTOP the owner past its lease; another node takes the shard; a commit that reached the paused node
    is answered with an error once it resumes, and never lands in the database."""
    nodes = start_nodes(server_factory, pg_url, 2, "--topic", "t:1", "--cluster-lease-ttl-ms", "2000")
    await wait_balanced(pg_url, list(nodes))
    group = "paused-owner"
    owner = await shard_owner(pg_url, shard_of(group, 50))
    assert owner in nodes
    other = next(n for n in nodes if n != owner)
    old = nodes[owner]
    with socket.create_connection((old.host, old.port), timeout=30) as sock:
        raw_commit(sock, group, "t", 1, 1)
        assert read_commit_error(sock) == ErrorCode.NONE
        assert await committed(pg_url, group) == 1
        old.proc.send_signal(signal.SIGSTOP)
        try:
            raw_commit(sock, group, "t", 2, 2)  # waits in the paused node's socket buffer
            deadline = time.monotonic() + 60
            while await shard_owner(pg_url, shard_of(group, 50)) != other:
                assert time.monotonic() < deadline, "the other node did not take the shard over"
                await asyncio.sleep(0.2)
            new = nodes[other]
            with socket.create_connection((new.host, new.port), timeout=30) as sock2:
                deadline = time.monotonic() + 60
                while True:  # LOAD_IN_PROGRESS until the shard is replayed
                    raw_commit(sock2, group, "t", 3, 3)
                    if read_commit_error(sock2) == ErrorCode.NONE:
                        break
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.1)
        finally:
            old.proc.send_signal(signal.SIGCONT)
        assert read_commit_error(sock) in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    assert await committed(pg_url, group) == 3


async def test_a_group_killed_mid_rebalance_with_its_coordinator_completes_the_rebalance_elsewhere(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "jobs:4")
    await wait_balanced(pg_url, list(nodes))
    # partition leaders settled too: a consumer's start waits out metadata without a leader, and a slow
    # start lets the rebalance finish before the kill (then aiokafka, which ignores OffsetFetch v2+'s
    # top-level COORDINATOR_LOAD_IN_PROGRESS, may read "no committed offset" from the loading new owner)
    await wait_partitions_spread(pg_url, "jobs", 4, list(nodes))
    bootstrap = ",".join(n.bootstrap for n in nodes.values())
    group = "mid-rebalance"
    owner = await shard_owner(pg_url, shard_of(group, 50))
    assert owner in nodes

    def consumer() -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            "jobs", bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
            session_timeout_ms=10000, heartbeat_interval_ms=3000,
        )  # fmt: skip

    first, second = consumer(), consumer()
    await first.start()
    try:
        await wait_for(lambda: len(first.assignment()) == 4, 60, "the first member to own all partitions")
        await first.commit({TopicPartition("jobs", p): 10 + p for p in range(4)})
        gen = first._coordinator.generation
        await second.start()  # its JoinGroup parks until the first member rejoins: a rebalance is on

        def rebalancing() -> bool:  # the coordinator logs every state change
            # the whole log: .log() is its tail, which a busy node's lease lines can push the change out of
            return any(
                group in line and "PreparingRebalance" in line and "state_to" in line
                for line in nodes[owner].log_path.read_text(errors="replace").splitlines()
            )

        await wait_for(rebalancing, 60, "the group to start rebalancing", step=0.02)
        nodes[owner].kill()
        tps = {TopicPartition("jobs", p) for p in range(4)}

        def settled() -> bool:
            a, b = first.assignment(), second.assignment()
            return bool(a) and bool(b) and not a & b and a | b == tps

        await wait_for(settled, 120, "both members to share the four partitions after the failover")
        assert first._coordinator.generation > gen
        for p in range(4):
            assert await fetched_offset(second, TopicPartition("jobs", p)) == 10 + p
    finally:
        await stop_aiokafka(first, second)


async def test_a_planned_stop_of_the_coordinator_hands_the_group_over_without_a_rebalance(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "orders:2")
    await wait_balanced(pg_url, list(nodes))
    c = AIOKafkaConsumer(
        "orders", bootstrap_servers=",".join(n.bootstrap for n in nodes.values()), group_id="handed-over",
        enable_auto_commit=False, heartbeat_interval_ms=500,
    )  # fmt: skip
    await c.start()
    try:
        await wait_for(lambda: len(c.assignment()) == 2, 60, "the consumer to own both partitions")
        coordinator = c._coordinator
        gen, owner = coordinator.generation, coordinator.coordinator_id
        heartbeats = HeartbeatCounter(c)
        assert nodes[owner].stop() == 0  # SIGTERM: leases released before the process exits
        heartbeats.ok = 0
        await wait_for(lambda: heartbeats.ok >= 2, 60, "heartbeats answered by the next coordinator")
        assert coordinator.coordinator_id not in (None, owner)
        assert coordinator.generation == gen and len(c.assignment()) == 2
    finally:
        await stop_aiokafka(c)
