"""Cluster mode: a KIP-848 consumer group survives the kill -9 of its coordinator's node; the node taking the
shard over replays its consumer-group records from PostgreSQL (epochs, assignments) and re-arms the timers."""

from __future__ import annotations

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatTopicPartitions,
)
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, start_nodes, wait_balanced
from tests.integration.helpers import RawClient, wait_for_sync

pytestmark = [pytest.mark.integration]


async def test_consumer_group_survives_the_kill_of_its_coordinator(server_factory, pg_url: str) -> None:
    nodes = start_nodes(
        server_factory, pg_url, 2, "--topic", "cg-orders:4", "--group-consumer-assignment-interval-ms", "0",
        "--cluster-lease-ttl-ms", "2000",
    )  # fmt: skip
    await wait_balanced(pg_url, list(nodes))
    group = "cg-survivor"
    owner = await shard_owner(pg_url, shard_of(group, 50))
    assert owner in nodes
    other = next(n for n in nodes if n != owner)
    c = RawClient(nodes[owner].host, nodes[owner].port)
    meta = c.request(ApiKey.METADATA, 12, MetadataRequest(topics=(MetadataRequestTopic(name="cg-orders"),)))
    tid = meta.topics[0].topic_id
    join = ConsumerGroupHeartbeatRequest(
        group_id=group, member_id="m1", member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=("cg-orders",), topic_partitions=(),
    )  # fmt: skip
    r = c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, join)
    assert (r.error_code, r.member_epoch) == (0, 1)
    owned = (HeartbeatTopicPartitions(topic_id=tid, partitions=(0, 1, 2, 3)),)
    assert r.assignment.topic_partitions == owned
    c.close()
    nodes[owner].kill()
    survivor = RawClient(nodes[other].host, nodes[other].port)
    hb = ConsumerGroupHeartbeatRequest(group_id=group, member_id="m1", member_epoch=1, topic_partitions=owned)
    answers: list[int] = []

    def answered() -> bool:
        resp = survivor.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, hb)
        answers.append(resp.error_code)
        return resp.error_code == ErrorCode.NONE and resp.member_epoch == 1

    try:
        # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS until the lease moves, then the same epoch: no rejoin
        wait_for_sync(answered, 30, "the other node to serve the group at the same epoch")
        assert set(answers) <= {
            ErrorCode.NONE,
            ErrorCode.NOT_COORDINATOR,
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        }
    finally:
        survivor.close()
