"""The Heartbeat fast lane (issue 28) answers exactly as the general path does, over the wire, for every
version and every outcome: ok, rebalance in progress, illegal generation, unknown member, fenced instance,
invalid group id, unknown group.

The general path is forced with one byte after the request's last field: the fast reader refuses such a frame
(tests/protocol/test_fast.py), while the general decoder ignores the byte as Kafka does, so the same request
is answered once by each path and the answers must be equal."""

from __future__ import annotations

import pytest

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest
from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.protocol.messages.sync_group import SyncGroupRequest
from tests.integration.helpers import RawClient
from tests.integration.names import unique

pytestmark = [pytest.mark.integration]


def both_ways(c: RawClient, version: int, req: HeartbeatRequest) -> int:
    """The error code of `req` through the fast lane and through the general path; they must agree."""
    answers = []
    for extra in (b"", b"\x00"):
        c.correlation += 1
        frame = encode_request(12, version, c.correlation, req, client_id="fast-lane-test")
        frame = (len(frame) - 4 + len(extra)).to_bytes(4, "big") + frame[4:] + extra
        c.send_raw(frame)
        corr, resp = decode_response(c.read_frame(), 12, version)
        assert corr == c.correlation
        answers.append(resp.error_code)
    assert answers[0] == answers[1], f"fast lane {answers[0]}, general path {answers[1]} for {req}"
    return answers[0]


def test_every_heartbeat_outcome_is_the_same_through_the_fast_lane_and_the_general_path(
    groupcoord_server,
) -> None:
    srv = groupcoord_server
    group = unique("fast-lane")
    member = RawClient(srv.host, srv.port)
    join = JoinGroupRequest(
        group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id="",
        group_instance_id="instance-1", protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )  # fmt: skip
    joined = member.request(11, 5, join)
    assert joined.error_code == 0
    mid, gen = joined.member_id, joined.generation_id
    synced = member.request(
        14,
        3,
        SyncGroupRequest(group_id=group, generation_id=gen, member_id=mid, group_instance_id="instance-1"),
    )
    assert synced.error_code == 0
    for v in range(5):
        inst = "instance-1" if v >= 3 else None
        assert both_ways(member, v, HeartbeatRequest(group, gen, mid, inst)) == E.NONE
        assert both_ways(member, v, HeartbeatRequest(group, gen + 7, mid, inst)) == E.ILLEGAL_GENERATION
        assert both_ways(member, v, HeartbeatRequest(group, gen, "someone-else", None)) == E.UNKNOWN_MEMBER_ID
        assert both_ways(member, v, HeartbeatRequest("", gen, mid, None)) == E.INVALID_GROUP_ID
        assert both_ways(member, v, HeartbeatRequest(unique("nobody"), 1, mid, None)) == E.UNKNOWN_MEMBER_ID
        if v >= 3:
            fenced = HeartbeatRequest(group, gen, "someone-else", "instance-1")
            assert both_ways(member, v, fenced) == E.FENCED_INSTANCE_ID
    # a second member's JoinGroup (left parked) puts the group in PreparingRebalance
    other = RawClient(srv.host, srv.port)
    other.send_raw(
        encode_request(
            11, 5, 1,
            JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                             member_id="", group_instance_id="instance-2", protocol_type="consumer",
                             protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)),
        )
    )  # fmt: skip
    for _ in range(200):  # the JoinGroup is handled some time after it is sent
        if member.request(12, 4, HeartbeatRequest(group, gen, mid, "instance-1")).error_code == 27:
            break
    else:
        raise AssertionError("the group never reported a rebalance in progress")
    for v in range(5):
        inst = "instance-1" if v >= 3 else None
        assert both_ways(member, v, HeartbeatRequest(group, gen, mid, inst)) == E.REBALANCE_IN_PROGRESS
    member.close()
    other.close()
