"""Several listeners at once (issue 18, step 1): each answers Metadata, FindCoordinator and DescribeCluster
with its own advertised address, as Kafka does, and real clients on different listeners share a group."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from kafka import KafkaConsumer

from groupcoord.protocol.messages.describe_cluster import DescribeClusterRequest
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.protocol.messages.metadata import MetadataRequest
from tests.conftest import ServerProcess, free_port
from tests.integration.helpers import RawClient, describe_group

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


@pytest.fixture
def two_listeners(tmp_path):  # type: ignore[no-untyped-def]
    inner, outer = free_port(), free_port()
    srv = ServerProcess(
        tmp_path / "data",
        (
            "--listeners", f"INTERNAL://127.0.0.1:{inner},EXTERNAL://127.0.0.1:{outer}",
            "--listener-security-protocol-map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "--topic", "listened:2",
        ),
        port=inner,
    )  # fmt: skip
    srv.start()
    yield srv, inner, outer
    srv.kill()


def addresses_seen_on(port: int) -> set[tuple[str, int]]:
    c = RawClient("127.0.0.1", port)
    try:
        meta = c.request(3, 12, MetadataRequest(topics=None))
        coord = c.request(10, 3, FindCoordinatorRequest(key="g", key_type=0))
        cluster = c.request(60, 0, DescribeClusterRequest())
    finally:
        c.close()
    assert coord.error_code == 0 and cluster.error_code == 0
    return (
        {(b.host, b.port) for b in meta.brokers}
        | {(coord.host, coord.port)}
        | {(b.host, b.port) for b in cluster.brokers}
    )


def test_each_listener_advertises_its_own_address(two_listeners) -> None:  # type: ignore[no-untyped-def]
    _, inner, outer = two_listeners
    assert addresses_seen_on(inner) == {("127.0.0.1", inner)}
    assert addresses_seen_on(outer) == {("127.0.0.1", outer)}


def test_offsets_a_client_commits_on_one_listener_are_read_on_the_other(two_listeners) -> None:  # type: ignore[no-untyped-def]
    srv, inner, outer = two_listeners

    async def aiokafka_member_commits() -> None:
        consumer = AIOKafkaConsumer(
            "listened", bootstrap_servers=f"127.0.0.1:{outer}", group_id="shared", enable_auto_commit=False
        )
        await consumer.start()
        try:
            deadline = time.monotonic() + 30
            while not consumer.assignment() and time.monotonic() < deadline:
                await consumer.getmany(timeout_ms=200)
            assert consumer.assignment()
            await consumer.commit({TopicPartition("listened", 0): 7, TopicPartition("listened", 1): 9})
        finally:
            await consumer.stop()

    asyncio.run(aiokafka_member_commits())
    group = describe_group("127.0.0.1", outer, "shared")
    assert group["state"] == "Empty" and group["protocol_type"] == "consumer"
    plain = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{inner}", group_id="shared", enable_auto_commit=False)
    try:
        from kafka import TopicPartition as KTP

        assert plain.committed(KTP("listened", 0)) == 7
        assert plain.committed(KTP("listened", 1)) == 9
    finally:
        plain.close()
    assert srv.alive()
