"""Issue 27: `__consumer_offsets` in cluster mode as Kafka shows it. Its partition i is group shard i, so
every node's Metadata names the shard's lease holder as that partition's leader, with the lease epoch as its
leader epoch, and the same topic id: the node FindCoordinator names for a group is the leader of the group's
`__consumer_offsets` partition, whichever node is asked, and only that node serves the partition's data
requests (an empty log; the others answer NOT_LEADER_OR_FOLLOWER). Before, each node named itself the leader
of all and served them all."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import fetch as fe
from groupcoord.protocol.messages import list_offsets as lo
from groupcoord.protocol.messages import offset_for_leader_epoch as ol
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import start_nodes, wait_balanced
from tests.integration.helpers import RawClient

pytestmark = [pytest.mark.integration]
SHARDS = 12


async def shard_leases(url: str) -> dict[int, tuple[int, int]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT shard, owner, epoch FROM shard_lease WHERE expires_at > now()")
    finally:
        await conn.close()
    return {r[0]: (r[1], r[2]) for r in rows}


def offsets_topic(c: RawClient) -> tuple[bool, bytes, dict[int, tuple[int, int]]]:
    meta = c.request(3, 12, MetadataRequest(topics=(MetadataRequestTopic(name="__consumer_offsets"),)))
    t = meta.topics[0]
    assert t.error_code == 0
    return t.is_internal, t.topic_id, {p.partition_index: (p.leader_id, p.leader_epoch) for p in t.partitions}


def data_errors(c: RawClient, partition: int) -> tuple[int, int, int]:
    """Fetch, ListOffsets and OffsetForLeaderEpoch error codes for one `__consumer_offsets` partition."""
    topic = "__consumer_offsets"
    fetched = c.request(
        1, 11,
        fe.FetchRequest(max_wait_ms=0, min_bytes=1, topics=(fe.FetchTopic(topic=topic, partitions=(
            fe.FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=1 << 20),)),)),
    )  # fmt: skip
    listed = c.request(
        2, 5,
        lo.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(lo.ListOffsetsTopic(name=topic, partitions=(
            lo.ListOffsetsPartition(partition_index=partition, timestamp=-1),)),)),
    )  # fmt: skip
    epochs = c.request(
        23, 3,
        ol.OffsetForLeaderEpochRequest(topics=(ol.OffsetForLeaderTopic(topic=topic, partitions=(
            ol.OffsetForLeaderPartition(partition=partition, leader_epoch=0),)),)),
    )  # fmt: skip
    return (
        fetched.responses[0].partitions[0].error_code,
        listed.topics[0].partitions[0].error_code,
        epochs.topics[0].partitions[0].error_code,
    )


async def test_every_node_names_the_shard_holders_as_the_offsets_topic_leaders(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--offsets-topic-num-partitions", str(SHARDS))
    await wait_balanced(pg_url, list(nodes), shards=SHARDS)
    clients = {n: RawClient(s.host, s.port) for n, s in nodes.items()}
    try:
        deadline = time.monotonic() + 30
        while True:  # each node refreshes its map every lease tick
            leases = await shard_leases(pg_url)
            views = {n: offsets_topic(c) for n, c in clients.items()}
            if all(v[2] == leases for v in views.values()) and len(leases) == SHARDS:
                break
            assert time.monotonic() < deadline, f"leases {leases}, views {views}"
            await asyncio.sleep(0.3)
        assert all(v[0] for v in views.values())  # is_internal
        assert len({v[1] for v in views.values()}) == 1  # one topic id on every node
        assert len({leader for leader, _ in leases.values()}) == 3  # spread: not every node naming itself
        groups = [f"group-{i}" for i in range(20)]
        for n, c in clients.items():
            found = c.request(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=tuple(groups)))
            for co in found.coordinators:
                assert co.error_code == 0
                assert co.node_id == leases[shard_of(co.key, SHARDS)][0], (n, co)
        for p, (leader, _) in leases.items():  # its data requests: served (an empty log) by the leader only
            for n, c in clients.items():
                expected = ErrorCode.NONE if n == leader else ErrorCode.NOT_LEADER_OR_FOLLOWER
                assert data_errors(c, p) == (expected,) * 3, (p, n, leader)
    finally:
        for c in clients.values():
            c.close()
