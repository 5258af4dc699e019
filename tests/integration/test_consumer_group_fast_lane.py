"""The ConsumerGroupHeartbeat fast lane (issue 28) answers exactly as the general path does, over the wire.

Two groups live through the same history: every request of the script goes to group A as an ordinary frame
(the fast lane reads it when it has the steady shape) and to group B with one byte after its last field (the
fast reader refuses such a frame, tests/protocol/test_fast_consumer_group.py, while the general decoder
ignores the byte as Kafka does). Member ids are the client's, the assignor is deterministic, so the two
groups' answers must be equal at every step: steady heartbeats (dynamic and static members), a changed client
id and rack (a metadata record), stale, greater and unknown epochs, unknown members, a blank member id, a
fenced and an unknown instance id, a member that must revoke, a topic that grows (the metadata hash moves, so
a steady-shaped heartbeat must bump the group epoch), and a leave."""

from __future__ import annotations

import dataclasses

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatTopicPartitions,
)
from groupcoord.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from tests.integration.helpers import RawClient
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]

TOPIC = "cgfast"
FLAGS = ("--group-consumer-assignment-interval-ms", "0", "--topic", f"{TOPIC}:6")


class Twins:
    """Sends each request to group A plain and to group B padded; returns A's answer once both agree."""

    def __init__(self, c: RawClient) -> None:
        self.c = c
        self.groups = (unique("cg-fast"), unique("cg-general"))

    def hb(self, member: str, epoch: int, client_id: str = "fast-lane-test", **kw: object) -> object:
        answers = []
        for group, extra in zip(self.groups, (b"", b"\x00"), strict=True):
            req = ConsumerGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch, **kw)
            self.c.correlation += 1
            frame = encode_request(68, 1, self.c.correlation, req, client_id=client_id)
            self.c.send_raw((len(frame) - 4 + len(extra)).to_bytes(4, "big") + frame[4:] + extra)
            corr, resp = decode_response(self.c.read_frame(), 68, 1)
            assert corr == self.c.correlation
            if resp.error_message:  # messages name the group: compare them with the name taken out
                resp = dataclasses.replace(resp, error_message=resp.error_message.replace(group, "<group>"))
            answers.append(resp)
        assert answers[0] == answers[1], f"fast lane {answers[0]}, general path {answers[1]}"
        return answers[0]

    def join(self, member: str, **kw: object) -> object:
        kw.setdefault("rebalance_timeout_ms", 300000)
        return self.hb(member, 0, subscribed_topic_names=(TOPIC,), topic_partitions=(), **kw)


def owned(r: object) -> tuple[HeartbeatTopicPartitions, ...]:
    a = r.assignment  # type: ignore[attr-defined]
    return tuple(
        HeartbeatTopicPartitions(topic_id=t.topic_id, partitions=t.partitions) for t in a.topic_partitions
    )


def test_every_consumer_group_heartbeat_outcome_is_the_same_through_the_fast_lane_and_the_general_path(
    server_factory,  # type: ignore[no-untyped-def]
) -> None:
    srv = server_factory(*FLAGS)
    c = RawClient(srv.host, srv.port)
    t = Twins(c)
    try:
        r = t.join("m1")
        assert (r.error_code, r.member_epoch) == (E.NONE, 1)  # type: ignore[attr-defined]
        for _ in range(3):  # the steady state: the lane's answer
            r = t.hb("m1", 1)
            assert (r.error_code, r.member_epoch, r.assignment) == (E.NONE, 1, None)  # type: ignore[attr-defined]
            assert r.heartbeat_interval_ms > 0  # type: ignore[attr-defined]
        assert t.hb("m1", 1, client_id="another-client").error_code == E.NONE  # type: ignore[attr-defined]
        assert t.hb("m1", 1, client_id="another-client").error_code == E.NONE  # type: ignore[attr-defined]
        assert t.hb("m1", 1, rack_id="rack-1").error_code == E.NONE  # type: ignore[attr-defined]
        assert t.hb("m1", 1, rack_id="rack-1", rebalance_timeout_ms=300000).member_epoch == 1  # type: ignore[attr-defined]
        assert t.hb("m1", 7).error_code == E.FENCED_MEMBER_EPOCH  # type: ignore[attr-defined]
        assert t.hb("nobody", 1).error_code == E.UNKNOWN_MEMBER_ID  # type: ignore[attr-defined]
        assert t.hb(" ", 1).error_code == E.INVALID_REQUEST  # type: ignore[attr-defined]
        assert t.hb("m1", 1, instance_id="i-unknown").error_code == E.UNKNOWN_MEMBER_ID  # type: ignore[attr-defined]
        # a static member joins: the group epoch moves, m1 must give up partitions
        s = t.join("s2", instance_id="i2")
        assert (s.error_code, s.member_epoch) == (E.NONE, 2)  # type: ignore[attr-defined]
        r = t.hb("m1", 1)  # steady-shaped but not steady: m1 is told what to keep
        assert r.assignment is not None and r.error_code == E.NONE  # type: ignore[attr-defined]
        assert t.hb("m1", 0 + 1, topic_partitions=owned(r)).member_epoch == 2  # type: ignore[attr-defined]
        for _ in range(3):
            s = t.hb("s2", 2, instance_id="i2")
            if s.assignment is None:  # type: ignore[attr-defined]
                break
        s = t.hb("s2", 2, instance_id="i2", topic_partitions=owned(s)) if s.assignment else s  # type: ignore[attr-defined]
        for _ in range(2):
            assert t.hb("s2", 2, instance_id="i2").member_epoch == 2  # type: ignore[attr-defined]
            assert t.hb("s2", 2).member_epoch == 2  # type: ignore[attr-defined]
            assert t.hb("m1", 2).assignment is None  # type: ignore[attr-defined]
        assert t.hb("m1", 2, instance_id="i2").error_code == E.FENCED_INSTANCE_ID  # type: ignore[attr-defined]
        assert t.hb("m1", 1).error_code == E.FENCED_MEMBER_EPOCH  # type: ignore[attr-defined]
        # the topic grows: a steady-shaped heartbeat must now see the new metadata and bump the group epoch
        grown = c.request(
            ApiKey.CREATE_PARTITIONS, 0,
            CreatePartitionsRequest(topics=(CreatePartitionsTopic(name=TOPIC, count=8, assignments=None),), timeout_ms=30000),
        )  # fmt: skip
        assert grown.results[0].error_code == E.NONE
        r = t.hb("m1", 2)
        assert r.error_code == E.NONE and r.member_epoch == 3  # type: ignore[attr-defined]
        assert t.hb("m1", -1).member_epoch == -1  # type: ignore[attr-defined]
        assert t.hb("m1", 3).error_code == E.UNKNOWN_MEMBER_ID  # type: ignore[attr-defined]
    finally:
        c.close()
