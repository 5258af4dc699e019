"""DescribeQuorum (55) with raw frames: the single node answers as the one voter and leader of
`__cluster_metadata`-0 at every version (what `kafka-metadata-quorum describe` reads), and a request naming
another partition gets Kafka's UNKNOWN_TOPIC_OR_PARTITION per partition."""

from __future__ import annotations

import time

import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.describe_quorum import (
    DescribeQuorumRequest,
    DescribeQuorumRequestPartition,
    DescribeQuorumRequestTopic,
)

from .helpers import RawClient

pytestmark = pytest.mark.integration


def ask(topic: str, *partitions: int) -> DescribeQuorumRequest:
    return DescribeQuorumRequest(
        topics=(
            DescribeQuorumRequestTopic(topic, tuple(DescribeQuorumRequestPartition(p) for p in partitions)),
        )
    )


def test_single_node_is_the_one_voter_and_leader(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory()
    c = RawClient(srv.host, srv.port)
    try:
        for version in (0, 1, 2):
            before = int(time.time() * 1000)
            resp = c.request(55, version, ask("__cluster_metadata", 0))
            assert resp.error_code == 0
            (topic,) = resp.topics
            (p,) = topic.partitions
            assert (topic.topic_name, p.partition_index, p.error_code) == ("__cluster_metadata", 0, 0)
            assert (p.leader_epoch, p.high_watermark, p.observers) == (1, 0, ())
            (voter,) = p.current_voters
            assert voter.replica_id == p.leader_id and voter.log_end_offset == 0
            if version >= 1:  # the leader's timestamps are the time of the answer
                assert voter.last_fetch_timestamp >= before and voter.last_caught_up_timestamp >= before
            else:
                assert voter.last_fetch_timestamp == -1
            if version >= 2:
                assert voter.replica_directory_id.int != 0
                (node,) = resp.nodes
                assert node.node_id == p.leader_id
                assert [(x.host, x.port) for x in node.listeners] == [(srv.host, srv.port)]
        # the directory id is stable
        again = c.request(55, 2, ask("__cluster_metadata", 0)).topics[0].partitions[0].current_voters[0]
        assert again.replica_directory_id == voter.replica_directory_id
        for req in (ask("__cluster_metadata", 1), ask("other", 0), ask("__cluster_metadata", 0, 1)):
            resp = c.request(55, 2, req)
            assert resp.error_code == 0
            codes = [p.error_code for t in resp.topics for p in t.partitions]
            assert codes == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] * len(req.topics[0].partitions)
    finally:
        c.close()
