"""Issue 27: topic configs, retention and compaction of cluster mode's records in PostgreSQL.

* Topic configs live in the shared registry: set at one node (CreateTopics configs, IncrementalAlterConfigs
  through confluent-kafka's admin client), every node describes the same (DescribeConfigs sent to each).
* Retention: the partition leader deletes batches older than retention.ms from PostgreSQL under its lease;
  the log start offset moved is durable, so the next leader starts there.
* Compaction (cleanup.policy=compact): the leader compacts with the segment log's cleaner and stores the
  compacted batches; a consumer of the next leader, after kill -9 of this one, reads the latest value of each
  key at its original offset, superseded records gone.
"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import list_offsets as lo
from groupcoord.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from tests.cluster.helpers import (
    AIOKAFKA_METADATA_MAX_AGE_MS,
    start_nodes,
    stored_batches,
    wait_partitions_spread,
)
from tests.cluster.test_data_plane import produced_ok
from tests.integration.helpers import RawClient, wait_for_sync
from tests.log.log_helpers import make_batch

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
FAST = ("--log-retention-check-interval-ms", "300", "--log-cleaner-backoff-ms", "300")


def described(c: RawClient, topic: str, key: str) -> tuple[str | None, int]:
    """(value, config source) of one topic config as this node's DescribeConfigs v1 answers it."""
    resp = c.request(
        32,
        1,
        DescribeConfigsRequest(
            resources=(DescribeConfigsResource(2, topic, (key,)),), include_synonyms=False
        ),
    )
    result = resp.results[0]
    if result.error_code or not result.configs:  # a node that has not read the registry since the creation
        return None, result.error_code
    return result.configs[0].value, result.configs[0].config_source


def _wait(futures: dict, timeout: float = 30) -> None:  # type: ignore[type-arg]
    for f in futures.values():
        f.result(timeout)


async def test_topic_configs_set_at_one_node_are_described_alike_by_every_node(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3)
    admin = AdminClient({"bootstrap.servers": nodes[1].bootstrap, "log_level": 0})
    _wait(admin.create_topics([NewTopic("conf", 2, 1, config={"retention.ms": "123456"})]))
    clients = {n: RawClient(s.host, s.port) for n, s in nodes.items()}
    try:
        for n, c in clients.items():  # TOPIC_CONFIG source (1): an override, the same on every node
            wait_for_sync(lambda c=c: described(c, "conf", "retention.ms") == ("123456", 1), 15, f"node {n}")
        other = AdminClient({"bootstrap.servers": nodes[3].bootstrap, "log_level": 0})
        change = ConfigResource(
            ConfigResource.Type.TOPIC, "conf",
            incremental_configs=[
                ConfigEntry("retention.bytes", "4096", incremental_operation=AlterConfigOpType.SET),
                ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
            ],
        )  # fmt: skip
        _wait(other.incremental_alter_configs([change]))
        for n, c in clients.items():
            wait_for_sync(lambda c=c: described(c, "conf", "retention.bytes") == ("4096", 1), 15, f"node {n}")
            # deleted override: back to the broker default (DEFAULT_CONFIG 5), everywhere
            wait_for_sync(lambda c=c: described(c, "conf", "retention.ms")[1] == 5, 15, f"node {n}")
    finally:
        for c in clients.values():
            c.close()


def _earliest(c: RawClient, topic: str) -> tuple[int, int]:
    r = c.request(
        2, 5,
        lo.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
            lo.ListOffsetsTopic(name=topic, partitions=(lo.ListOffsetsPartition(partition_index=0, timestamp=-2),)),)),
    ).topics[0].partitions[0]  # fmt: skip
    return r.error_code, r.offset


async def test_the_leader_deletes_batches_past_retention_ms_and_the_next_leader_starts_there(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, *FAST)
    admin = AdminClient({"bootstrap.servers": nodes[1].bootstrap, "log_level": 0})
    _wait(admin.create_topics([NewTopic("aged", 1, 1, config={"retention.ms": "600000"})]))
    leader, _ = (await wait_partitions_spread(pg_url, "aged", 1, list(nodes)))[0]
    c = RawClient(nodes[leader].host, nodes[leader].port)
    now = int(time.time() * 1000)
    try:
        for _ in range(3):  # two records each, an hour old: past retention.ms (10 minutes)
            produced_ok(c, "aged", 0, make_batch(2, ts=now - 3_600_000))
        produced_ok(c, "aged", 0, make_batch(2, ts=now))  # fresh: kept
        wait_for_sync(lambda: _earliest(c, "aged") == (ErrorCode.NONE, 6), 30, "retention to move the start")
    finally:
        c.close()
    assert await stored_batches(pg_url, "aged", 0) == [(6, 7)]  # deleted from PostgreSQL, not only here
    nodes[leader].kill()
    survivors = [n for n in nodes if n != leader]
    other = (await wait_partitions_spread(pg_url, "aged", 1, survivors, timeout=60))[0][0]
    c = RawClient(nodes[other].host, nodes[other].port)
    try:
        wait_for_sync(lambda: _earliest(c, "aged") == (ErrorCode.NONE, 6), 30, "the next leader's log start")
    finally:
        c.close()


async def test_a_compacted_topic_keeps_the_latest_value_per_key_in_postgresql_across_a_failover(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, *FAST)
    admin = AdminClient({"bootstrap.servers": nodes[1].bootstrap, "log_level": 0})
    configs = {"cleanup.policy": "compact", "segment.ms": "1", "min.cleanable.dirty.ratio": "0.01"}
    _wait(admin.create_topics([NewTopic("table", 1, 1, config=configs)]))
    leader, _ = (await wait_partitions_spread(pg_url, "table", 1, list(nodes)))[0]
    writes = [(b"a", b"a0"), (b"b", b"b0"), (b"a", b"a1"), (b"c", b"c0"), (b"b", b"b1"), (b"a", b"a2")]
    producer = AIOKafkaProducer(bootstrap_servers=nodes[leader].bootstrap, acks="all", linger_ms=0)
    await producer.start()
    try:  # one batch each; segment.ms=1 rolls a new memory segment for each, so all but the last are cleanable
        for key, value in writes:
            await producer.send_and_wait("table", value, key=key, partition=0)
            await asyncio.sleep(0.01)
        await producer.send_and_wait("table", b"d0", key=b"d", partition=0)  # the active segment's batch
    finally:
        await producer.stop()
    superseded = {0, 1, 2}  # a0, b0, a1: a later record of the same key follows each
    deadline = time.monotonic() + 60
    while {base for base, _ in await stored_batches(pg_url, "table", 0)} & superseded:
        assert time.monotonic() < deadline, await stored_batches(pg_url, "table", 0)
        await asyncio.sleep(0.3)
    nodes[leader].kill()
    survivors = [n for n in nodes if n != leader]
    other = (await wait_partitions_spread(pg_url, "table", 1, survivors, timeout=60))[0][0]
    bootstrap = nodes[
        next(n for n in survivors if n != other)
    ].bootstrap  # the survivor that is not its leader
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        metadata_max_age_ms=AIOKAFKA_METADATA_MAX_AGE_MS,
    )
    await consumer.start()
    try:
        tp = TopicPartition("table", 0)
        consumer.assign([tp])
        got: list[tuple[int, bytes, bytes]] = []
        deadline = time.monotonic() + 60
        while not got or got[-1][0] < 6:
            assert time.monotonic() < deadline, got
            for records in (await consumer.getmany(timeout_ms=500)).values():
                got += [(r.offset, r.key, r.value) for r in records]
    finally:
        await consumer.stop()
    assert got == [(3, b"c", b"c0"), (4, b"b", b"b1"), (5, b"a", b"a2"), (6, b"d", b"d0")]
