"""KIP-848 over the wire against the real server: ConsumerGroupHeartbeat (68), ConsumerGroupDescribe (69),
ApiVersions, ListGroups v5, and a restart (SQLite) that keeps members' epochs and assignments."""

from __future__ import annotations

import time
import uuid

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from groupcoord.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatTopicPartitions,
)
from groupcoord.protocol.messages.list_groups import ListGroupsRequest
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.integration.helpers import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]

FLAGS = ("--group-consumer-assignment-interval-ms", "0", "--topic", "cgfoo:6")


def heartbeat(c: RawClient, member: str, epoch: int, owned: tuple | None = None, **kw: object) -> object:
    if epoch == 0:
        kw.setdefault("rebalance_timeout_ms", 300000)
        kw.setdefault("subscribed_topic_names", ("cgfoo",))
        owned = ()
    req = ConsumerGroupHeartbeatRequest(
        group_id="cg", member_id=member, member_epoch=epoch, topic_partitions=owned, **kw
    )
    return c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req)


def topic_id(c: RawClient, name: str) -> uuid.UUID:
    resp = c.request(ApiKey.METADATA, 12, MetadataRequest(topics=(MetadataRequestTopic(name=name),)))
    return resp.topics[0].topic_id


def test_versions_join_describe_list(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    c = RawClient(srv.host, srv.port)
    try:
        versions = {
            a.api_key: (a.min_version, a.max_version)
            for a in c.request(18, 3, ApiVersionsRequest("groupcoord-test", "1")).api_keys
        }
        assert versions[68] == (0, 1) and versions[69] == (0, 1)
        foo = topic_id(c, "cgfoo")
        r = heartbeat(c, "m1", 0)
        assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m1", 1, 5000)
        assert r.assignment.topic_partitions == (
            HeartbeatTopicPartitions(topic_id=foo, partitions=(0, 1, 2, 3, 4, 5)),
        )
        r2 = heartbeat(c, "m2", 0)
        assert (r2.member_epoch, r2.assignment.topic_partitions) == (2, ())
        r = heartbeat(c, "m1", 1)
        kept = r.assignment.topic_partitions[0].partitions
        assert len(kept) == 3
        r = heartbeat(c, "m1", 1, owned=(HeartbeatTopicPartitions(topic_id=foo, partitions=kept),))
        assert r.member_epoch == 2
        r2 = heartbeat(c, "m2", 2)
        assert set(r2.assignment.topic_partitions[0].partitions) == set(range(6)) - set(kept)
        d = c.request(
            ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=("cg", "nope", ""))
        )
        g, missing, blank = d.groups
        assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
            0, "Stable", 2, 2, "uniform",
        )  # fmt: skip
        assert [(m.member_id, m.member_type, m.client_id, m.client_host) for m in g.members] == [
            ("m1", 1, "raw-test", "/127.0.0.1"),
            ("m2", 1, "raw-test", "/127.0.0.1"),
        ]
        assert g.members[0].assignment.topic_partitions[0].topic_name == "cgfoo"
        assert (missing.error_code, blank.error_code) == (E.GROUP_ID_NOT_FOUND, E.INVALID_GROUP_ID)
        listed = c.request(ApiKey.LIST_GROUPS, 5, ListGroupsRequest(types_filter=("consumer",))).groups
        assert [(x.group_id, x.group_type, x.group_state) for x in listed] == [("cg", "consumer", "Stable")]
        bad = heartbeat(c, "", 0)
        assert (bad.error_code, bad.error_message) == (E.INVALID_REQUEST, "MemberId can't be empty.")
        assert heartbeat(c, "m1", -1).member_epoch == -1
    finally:
        c.close()


def test_restart_keeps_epochs_and_assignments(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    c = RawClient(srv.host, srv.port)
    foo = topic_id(c, "cgfoo")
    heartbeat(c, "m1", 0)
    heartbeat(c, "s2", 0, instance_id="i2")
    r = heartbeat(c, "m1", 1)
    kept = r.assignment.topic_partitions[0].partitions
    heartbeat(c, "m1", 1, owned=(HeartbeatTopicPartitions(topic_id=foo, partitions=kept),))
    s2 = heartbeat(c, "s2", 2, instance_id="i2")
    c.close()
    srv.restart()
    c = RawClient(srv.host, srv.port)
    try:
        # the members come back at the same epochs with the same partitions (once the restarted server has
        # loaded its state: until then it answers COORDINATOR_LOAD_IN_PROGRESS and clients retry, as here)
        deadline = time.monotonic() + 60
        while True:
            r = heartbeat(c, "m1", 2, owned=(HeartbeatTopicPartitions(topic_id=foo, partitions=kept),))
            if r.error_code != E.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert (r.error_code, r.member_epoch) == (0, 2)
        g = c.request(
            ApiKey.CONSUMER_GROUP_DESCRIBE, 0, ConsumerGroupDescribeRequest(group_ids=("cg",))
        ).groups[0]
        assert (g.group_state, g.group_epoch, g.assignment_epoch) == ("Stable", 2, 2)
        byid = {m.member_id: m for m in g.members}
        assert byid["m1"].assignment.topic_partitions[0].partitions == kept
        assert byid["s2"].instance_id == "i2"
        s2_parts = s2.assignment.topic_partitions[0].partitions
        assert byid["s2"].assignment.topic_partitions[0].partitions == s2_parts
        # a static member restarted without reassignment: -2, then a new member id with the same instance
        assert heartbeat(c, "s2", -2, instance_id="i2").member_epoch == -2
        back = heartbeat(c, "s2-new", 0, instance_id="i2")
        assert (back.error_code, back.member_epoch) == (0, 2)
        assert back.assignment.topic_partitions[0].partitions == s2_parts
    finally:
        c.close()
