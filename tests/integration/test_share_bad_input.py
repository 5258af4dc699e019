"""Odd but well-formed KIP-932 requests get Kafka's error codes and never a crash, a traceback or a closed
connection: negative and huge limits, ranges backwards or past the end, unknown ack types, partitions that do
not exist, unknown topic ids, odd epochs, over-long member ids."""

from __future__ import annotations

import uuid

import pytest

from groupcoord.protocol.messages.metadata import MetadataRequest
from groupcoord.protocol.messages.share_acknowledge import (
    AcknowledgePartition,
    AcknowledgeTopic,
    ShareAcknowledgeRequest,
)
from groupcoord.protocol.messages.share_fetch import (
    AcknowledgementBatch,
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchTopic,
    ShareForgottenTopic,
)
from groupcoord.protocol.messages.share_group_describe import ShareGroupDescribeRequest
from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest

from .helpers import RawClient

pytestmark = [pytest.mark.integration]


def test_odd_share_requests_are_answered(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:2", "--share-auto-offset-reset", "earliest")
    c = RawClient(srv.host, srv.port, timeout=30)
    tid = next(t.topic_id for t in c.request(3, 12, MetadataRequest(topics=None)).topics if t.name == "t")
    ghost = uuid.uuid4()
    for hb in (
        ShareGroupHeartbeatRequest("", "m", 0, None, ("t",)),
        ShareGroupHeartbeatRequest("g", "m", 0, "", ("t",)),
        ShareGroupHeartbeatRequest("g", "m", 7, None, None),
        ShareGroupHeartbeatRequest("g", "m", -5, None, None),
        ShareGroupHeartbeatRequest("g", "m", 0, None, ("nope", "", "t", "t")),
        ShareGroupHeartbeatRequest("g", "m", 2**31 - 1, None, ("t",)),
    ):
        assert c.request(76, 1, hb).error_code in (0, 25, 42, 69, 110)
    assert c.request(77, 1, ShareGroupDescribeRequest(group_ids=("", "g", "g"))).groups

    def batches(*bs: tuple[int, int, tuple[int, ...]]) -> tuple[AcknowledgementBatch, ...]:
        return tuple(
            AcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=ts) for f, la, ts in bs
        )

    odd_partitions = (
        ShareFetchTopic(
            topic_id=tid,
            partitions=(
                ShareFetchPartition(partition_index=-1),
                ShareFetchPartition(partition_index=0),
                ShareFetchPartition(partition_index=0),
                ShareFetchPartition(partition_index=99),
            ),
        ),
        ShareFetchTopic(topic_id=ghost, partitions=(ShareFetchPartition(partition_index=0),)),
    )
    opened = c.request(
        78,
        2,
        ShareFetchRequest(
            group_id="g", member_id="m", share_session_epoch=0, max_wait_ms=-5, min_bytes=-1, max_bytes=-1,
            max_records=-10, batch_size=-1, topics=odd_partitions,
            forgotten_topics_data=(ShareForgottenTopic(topic_id=ghost, partitions=(0, -3)),),
        ),
    )  # fmt: skip
    assert opened.error_code == 0
    codes = {(t.topic_id, p.partition_index): p.error_code for t in opened.responses for p in t.partitions}
    assert codes[(tid, -1)] == 3 and codes[(tid, 99)] == 3 and codes[(ghost, 0)] == 100
    odd_acks = batches(
        (5, 1, (1,)), (-10, -1, (1,)), (0, 2**62, (1,)), (0, 1, (1, 2, 3)), (0, 0, (99,)), (0, 0, ())
    )
    for epoch, version in ((1, 2), (2, 1)):
        r = c.request(
            78,
            version,
            ShareFetchRequest(
                group_id="g", member_id="m", share_session_epoch=epoch, max_wait_ms=0, max_records=2**31 - 1,
                batch_size=0, topics=(ShareFetchTopic(topic_id=tid, partitions=(
                    ShareFetchPartition(partition_index=1, acknowledgement_batches=odd_acks),)),),
            ),
        )  # fmt: skip
        assert r.error_code == 0
        assert [
            p.acknowledge_error_code for t in r.responses for p in t.partitions if p.partition_index == 1
        ] == [42]
    for ack in (
        ShareAcknowledgeRequest(group_id="g", member_id="m" * 37, share_session_epoch=3),
        ShareAcknowledgeRequest(group_id=None, member_id="m", share_session_epoch=3),
        ShareAcknowledgeRequest(group_id="g", member_id="m", share_session_epoch=-7),
        ShareAcknowledgeRequest(
            group_id="g", member_id="m", share_session_epoch=3,
            topics=(AcknowledgeTopic(topic_id=tid, partitions=(
                AcknowledgePartition(partition_index=0, acknowledgement_batches=batches((0, 0, (1,)))),)),),
        ),
    ):  # fmt: skip
        assert c.request(79, 2, ack).error_code in (0, 42, 122, 123)
    assert "Traceback" not in srv.log()
    c.close()
