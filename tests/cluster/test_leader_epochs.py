"""Issue 27: CurrentLeaderEpoch in cluster mode, as Kafka's `Partition.checkCurrentLeaderEpoch` answers it.
Fetch (v9+), ListOffsets (v4+) and OffsetForLeaderEpoch (v2+) carrying the leader's lease epoch are served;
an older epoch (a client that missed a failover) is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH,
-1 is not checked. After a kill of the leader, the new leader fences the epoch clients knew before."""

from __future__ import annotations

import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import fetch as fe
from groupcoord.protocol.messages import list_offsets as lo
from groupcoord.protocol.messages import offset_for_leader_epoch as ol
from tests.cluster.helpers import start_nodes, wait_partitions_spread
from tests.cluster.test_data_plane import produced_ok
from tests.integration.helpers import RawClient, wait_for_sync
from tests.log.log_helpers import make_batch

pytestmark = [pytest.mark.integration]


def epoch_errors(c: RawClient, topic: str, current: int) -> dict[str, int]:
    """Partition 0's error code from Fetch v12, ListOffsets v7 and OffsetForLeaderEpoch v4 with
    CurrentLeaderEpoch `current`."""
    fetched = c.request(
        1, 12,
        fe.FetchRequest(
            max_wait_ms=0, min_bytes=1,
            topics=(fe.FetchTopic(topic=topic, partitions=(fe.FetchPartition(
                partition=0, current_leader_epoch=current, fetch_offset=0, partition_max_bytes=1 << 20),)),),
        ),
    )  # fmt: skip
    listed = c.request(
        2, 7,
        lo.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
            lo.ListOffsetsTopic(name=topic, partitions=(lo.ListOffsetsPartition(
                partition_index=0, current_leader_epoch=current, timestamp=-1),)),)),
    )  # fmt: skip
    epochs = c.request(
        23, 4,
        ol.OffsetForLeaderEpochRequest(topics=(
            ol.OffsetForLeaderTopic(topic=topic, partitions=(ol.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=current, leader_epoch=0),)),)),
    )  # fmt: skip
    return {
        "fetch": fetched.responses[0].partitions[0].error_code,
        "list_offsets": listed.topics[0].partitions[0].error_code,
        "offset_for_leader_epoch": epochs.topics[0].partitions[0].error_code,
    }


def all_(code: ErrorCode) -> dict[str, int]:
    return dict.fromkeys(("fetch", "list_offsets", "offset_for_leader_epoch"), code)


async def test_current_leader_epoch_is_checked_by_the_leader_and_fences_clients_after_a_failover(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 2, "--topic", "epochs:1")
    leases = await wait_partitions_spread(pg_url, "epochs", 1, list(nodes))
    leader, epoch = leases[0]
    other = next(n for n in nodes if n != leader)
    c = RawClient(nodes[leader].host, nodes[leader].port)
    try:
        produced_ok(c, "epochs", 0, make_batch(3))
        assert epoch_errors(c, "epochs", epoch) == all_(ErrorCode.NONE)
        assert epoch_errors(c, "epochs", -1) == all_(ErrorCode.NONE)  # no epoch: no check
        assert epoch_errors(c, "epochs", epoch + 1) == all_(ErrorCode.UNKNOWN_LEADER_EPOCH)
        if epoch > 0:
            assert epoch_errors(c, "epochs", epoch - 1) == all_(ErrorCode.FENCED_LEADER_EPOCH)
    finally:
        c.close()
    c = RawClient(nodes[other].host, nodes[other].port)
    try:  # not the leader: NOT_LEADER_OR_FOLLOWER whatever the epoch, as a broker that is no replica
        assert epoch_errors(c, "epochs", epoch) == all_(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    finally:
        c.close()

    nodes[leader].kill()
    after = await wait_partitions_spread(pg_url, "epochs", 1, [other], timeout=60)
    new_epoch = after[0][1]
    assert new_epoch > epoch
    c = RawClient(nodes[other].host, nodes[other].port)
    try:  # once loaded, the new leader serves its epoch and fences the one clients knew before the kill
        wait_for_sync(
            lambda: epoch_errors(c, "epochs", new_epoch) == all_(ErrorCode.NONE), 30, "the new leader to load"
        )
        assert epoch_errors(c, "epochs", epoch) == all_(ErrorCode.FENCED_LEADER_EPOCH)
        assert epoch_errors(c, "epochs", new_epoch + 1) == all_(ErrorCode.UNKNOWN_LEADER_EPOCH)
    finally:
        c.close()
