"""Kafka 4.3's newest group APIs over the wire: OffsetCommit v10 and OffsetFetch v10 (topics by TopicId,
UNKNOWN_TOPIC_ID for an id the broker does not know) and DescribeGroups v6 (GROUP_ID_NOT_FOUND with Kafka's
message for a missing group and for a KIP-848 consumer group, which is not a classic group)."""

from __future__ import annotations

import uuid

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import offset_commit as oc
from groupcoord.protocol.messages import offset_fetch as of
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.protocol.messages.describe_groups import DescribeGroupsRequest
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.integration.helpers import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]

FLAGS = ("--group-consumer-assignment-interval-ms", "0", "--topic", "tida:2", "--topic", "tidb:1")
NOWHERE = uuid.UUID("12345678-1234-5678-1234-567812345678")


def topic_id(c: RawClient, name: str) -> uuid.UUID:
    resp = c.request(ApiKey.METADATA, 12, MetadataRequest(topics=(MetadataRequestTopic(name=name),)))
    return resp.topics[0].topic_id


def commit_v10(c: RawClient, group: str, member: str, epoch: int, topics: dict) -> oc.OffsetCommitResponse:  # type: ignore[type-arg]
    req = oc.OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=epoch,
        member_id=member,
        topics=tuple(
            oc.OffsetCommitRequestTopic(
                topic_id=tid,
                partitions=tuple(
                    oc.OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=o, committed_metadata="m"
                    )
                    for p, o in parts
                ),
            )
            for tid, parts in topics.items()
        ),
    )
    return c.request(ApiKey.OFFSET_COMMIT, 10, req)


def test_advertised_versions(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    c = RawClient(srv.host, srv.port)
    try:
        got = {
            a.api_key: a.max_version
            for a in c.request(18, 3, ApiVersionsRequest("groupcoord-test", "1")).api_keys
        }
        assert (got[ApiKey.OFFSET_COMMIT], got[ApiKey.OFFSET_FETCH], got[ApiKey.DESCRIBE_GROUPS]) == (
            10,
            10,
            6,
        )
    finally:
        c.close()


def test_commit_and_fetch_by_topic_id(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    c = RawClient(srv.host, srv.port)
    try:
        a, b = topic_id(c, "tida"), topic_id(c, "tidb")
        hb = c.request(
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            1,
            ConsumerGroupHeartbeatRequest(
                group_id="cg10",
                member_id="m1",
                member_epoch=0,
                rebalance_timeout_ms=300000,
                subscribed_topic_names=("tida", "tidb"),
                topic_partitions=(),
            ),
        )
        assert (hb.error_code, hb.member_epoch) == (0, 1)
        r = commit_v10(c, "cg10", "m1", 1, {a: [(0, 5), (1, 7)], NOWHERE: [(0, 1), (3, 2)], b: [(0, 9)]})
        answers = {t.topic_id: [(p.partition_index, p.error_code) for p in t.partitions] for t in r.topics}
        assert answers == {
            a: [(0, 0), (1, 0)],
            b: [(0, 0)],
            NOWHERE: [(0, E.UNKNOWN_TOPIC_ID), (3, E.UNKNOWN_TOPIC_ID)],
        }
        assert all(t.name == "" for t in r.topics)  # v10 carries no names
        # a stale epoch is still fenced at v10
        stale = commit_v10(c, "cg10", "m1", 7, {a: [(0, 6)]})
        assert (
            stale.topics[0].topic_id == a and stale.topics[0].partitions[0].error_code == E.STALE_MEMBER_EPOCH
        )

        asked = of.OffsetFetchRequestGroup(
            group_id="cg10",
            member_id="m1",
            member_epoch=1,
            topics=(
                of.OffsetFetchRequestTopics(topic_id=a, partition_indexes=(0, 1)),
                of.OffsetFetchRequestTopics(topic_id=NOWHERE, partition_indexes=(2,)),
            ),
        )
        f = c.request(ApiKey.OFFSET_FETCH, 10, of.OffsetFetchRequest(groups=(asked,)))
        (g,) = f.groups
        assert g.error_code == 0
        got = {
            t.topic_id: [(p.partition_index, p.committed_offset, p.error_code) for p in t.partitions]
            for t in g.topics
        }
        assert got == {a: [(0, 5, 0), (1, 7, 0)], NOWHERE: [(2, -1, E.UNKNOWN_TOPIC_ID)]}

        every = of.OffsetFetchRequestGroup(group_id="cg10", member_id="m1", member_epoch=1, topics=None)
        (g,) = c.request(ApiKey.OFFSET_FETCH, 10, of.OffsetFetchRequest(groups=(every,))).groups
        got = {
            t.topic_id: sorted((p.partition_index, p.committed_offset) for p in t.partitions)
            for t in g.topics
        }
        assert got == {a: [(0, 5), (1, 7)], b: [(0, 9)]}

        # the same offsets by name at v9: ids and names address the same stored offsets
        by_name = of.OffsetFetchRequestGroup(
            group_id="cg10",
            member_id="m1",
            member_epoch=1,
            topics=(of.OffsetFetchRequestTopics(name="tidb", partition_indexes=(0,)),),
        )
        (g,) = c.request(ApiKey.OFFSET_FETCH, 9, of.OffsetFetchRequest(groups=(by_name,))).groups
        assert [(t.name, t.partitions[0].committed_offset) for t in g.topics] == [("tidb", 9)]
    finally:
        c.close()


def test_describe_groups_v6_says_why_a_group_is_missing(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    c = RawClient(srv.host, srv.port)
    try:
        hb = c.request(
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            1,
            ConsumerGroupHeartbeatRequest(
                group_id="cg6",
                member_id="m1",
                member_epoch=0,
                rebalance_timeout_ms=300000,
                subscribed_topic_names=("tida",),
                topic_partitions=(),
            ),
        )
        assert hb.error_code == 0
        # a simple (generation -1) commit makes an Empty classic group, which v6 describes as before
        simple = oc.OffsetCommitRequest(
            group_id="simple6",
            topics=(
                oc.OffsetCommitRequestTopic(
                    name="tida",
                    partitions=(oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=1),),
                ),
            ),
        )
        assert c.request(ApiKey.OFFSET_COMMIT, 9, simple).topics[0].partitions[0].error_code == 0
        v6 = c.request(ApiKey.DESCRIBE_GROUPS, 6, DescribeGroupsRequest(groups=("cg6", "nope", "simple6")))
        assert [(g.group_id, g.error_code, g.error_message, g.group_state, g.members) for g in v6.groups] == [
            ("cg6", E.GROUP_ID_NOT_FOUND, "Group cg6 is not a classic group.", "Dead", ()),
            ("nope", E.GROUP_ID_NOT_FOUND, "Group nope not found.", "Dead", ()),
            ("simple6", 0, None, "Empty", ()),
        ]
        v5 = c.request(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=("cg6", "nope")))
        assert [(g.group_id, g.error_code, g.group_state) for g in v5.groups] == [
            ("cg6", 0, "Dead"),
            ("nope", 0, "Dead"),
        ]
    finally:
        c.close()
