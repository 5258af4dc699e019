"""Issue 27 item 4: lag metrics in cluster mode. The node coordinating a group reports its lag on every
partition, including those another node leads (log ends read from PostgreSQL every few lease ticks)."""

from __future__ import annotations

import logging

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, wait_balanced, wait_partitions_spread
from tests.conftest import free_port
from tests.integration.helpers import wait_for
from tests.integration.test_ops_metrics import value

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


async def test_the_coordinator_reports_lag_on_partitions_led_by_other_nodes(
    server_factory, pg_url: str
) -> None:
    ports = {n: free_port() for n in (1, 2, 3)}
    nodes = {
        n: server_factory("--cluster", pg_url, "--node-id", str(n), "--topic", "lagged:3", "--metrics-port", str(p))
        for n, p in ports.items()
    }  # fmt: skip
    await wait_balanced(pg_url, list(nodes))
    leases = await wait_partitions_spread(pg_url, "lagged", 3, list(nodes))
    group = "cluster-lag"
    coordinator = await shard_owner(pg_url, shard_of(group, 50))
    assert coordinator in nodes
    elsewhere = [p for p, (leader, _) in leases.items() if leader != coordinator]
    assert elsewhere  # three partitions over three nodes: at least two are led by the other nodes
    bootstrap = ",".join(n.bootstrap for n in nodes.values())
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(30):
            await producer.send_and_wait("lagged", b"x", partition=i % 3)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition("lagged", p) for p in range(3)])
        await consumer.commit({TopicPartition("lagged", p): 4 + p for p in range(3)})
    finally:
        await consumer.stop()
    mport = ports[coordinator]

    def lags() -> list[float | None]:
        return [
            value(mport, "kafka_consumergroup_lag", consumergroup=group, topic="lagged", partition=str(p))
            for p in range(3)
        ]

    await wait_for(lambda: lags() == [6, 5, 4], 30, "the coordinator to report the lag of every partition")
    assert value(mport, "kafka_consumergroup_lag_sum", consumergroup=group, topic="lagged") == 15
