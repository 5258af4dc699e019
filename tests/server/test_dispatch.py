"""The dispatcher without a network: version checks, unknown APIs, and answers while state is loading."""

from __future__ import annotations

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest
from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.protocol.messages.list_groups import ListGroupsRequest
from groupcoord.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
from groupcoord.protocol.messages.sync_group import SyncGroupRequest
from groupcoord.server.broker import Broker
from groupcoord.server.config import ServerConfig
from groupcoord.server.net.listeners import single_plaintext


class FakeConn:
    peer_host = "127.0.0.1"
    peer_port = 5555
    listener = single_plaintext("127.0.0.1", 9092, None, None)
    principal = "User:ANONYMOUS"

    def __init__(self) -> None:
        self.closed_because: str | None = None

    def close(self, reason: str) -> None:
        self.closed_because = reason


def call(broker: Broker, api: int, version: int, body: object) -> object:
    conn = FakeConn()
    out = broker.dispatcher.dispatch(conn, encode_request(api, version, 9, body)[4:])  # type: ignore[arg-type]
    assert isinstance(out, bytes), conn.closed_because
    corr, resp = decode_response(out[4:], api, version)
    assert corr == 9
    return resp


def loading_broker() -> Broker:
    broker = Broker(ServerConfig())
    assert broker.loading  # a broker is loading until its state has been replayed
    return broker


def test_group_apis_answer_load_in_progress_while_state_loads() -> None:
    broker = loading_broker()
    join = JoinGroupRequest(group_id="g", session_timeout_ms=10000, member_id="m-1", protocol_type="consumer",
                            protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),))  # fmt: skip
    r = call(broker, 11, 5, join)
    assert (r.error_code, r.member_id) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "m-1")  # type: ignore[attr-defined]
    r = call(broker, 14, 3, SyncGroupRequest(group_id="g", generation_id=1, member_id="m-1"))
    assert r.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # type: ignore[attr-defined]
    r = call(broker, 16, 4, ListGroupsRequest())
    assert (r.error_code, r.groups) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ())  # type: ignore[attr-defined]
    commit = OffsetCommitRequest(group_id="g", topics=(OffsetCommitRequestTopic(
        name="t", partitions=(OffsetCommitRequestPartition(partition_index=0, committed_offset=5),)),))  # fmt: skip
    r = call(broker, 8, 8, commit)
    assert r.topics[0].partitions[0].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # type: ignore[attr-defined]
    r = call(broker, 9, 8, OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id="g", topics=None),)))
    assert r.groups[0].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # type: ignore[attr-defined]


def test_heartbeat_while_loading_is_answered_none_so_members_do_not_rejoin() -> None:
    r = call(loading_broker(), 12, 4, HeartbeatRequest(group_id="g", generation_id=3, member_id="m-1"))
    assert r.error_code == ErrorCode.NONE  # type: ignore[attr-defined]


def test_api_versions_above_our_range_gets_v0_unsupported_version_with_our_range() -> None:
    broker = loading_broker()
    conn = FakeConn()
    out = broker.dispatcher.dispatch(conn, encode_request(18, 4, 3, ApiVersionsRequest())[4:].replace(
        b"\x00\x12\x00\x04", b"\x00\x12\x00\x63", 1))  # fmt: skip
    assert isinstance(out, bytes)
    corr, resp = decode_response(out[4:], 18, 0)
    assert corr == 3
    assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION  # type: ignore[attr-defined]
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 5)]  # type: ignore[attr-defined]


def test_unknown_api_key_closes_only_that_connection() -> None:
    broker = loading_broker()
    conn = FakeConn()
    frame = encode_request(18, 0, 1, ApiVersionsRequest())[4:]
    frame = b"\x03\xe7" + frame[2:]  # api key 999
    assert broker.dispatcher.dispatch(conn, frame) is None  # type: ignore[arg-type]
    assert conn.closed_because is not None and "unknown API key 999" in conn.closed_because


def test_undecodable_body_closes_the_connection_with_the_offset_in_the_reason() -> None:
    broker = loading_broker()
    conn = FakeConn()
    frame = encode_request(12, 4, 1, HeartbeatRequest(group_id="g", generation_id=1, member_id="m"))[4:]
    assert broker.dispatcher.dispatch(conn, frame[:-3]) is None  # type: ignore[arg-type]
    assert conn.closed_because is not None and "HeartbeatRequest v4 at byte" in conn.closed_because


def test_bytes_after_a_requests_last_field_are_answered_and_counted() -> None:
    """Kafka ignores what follows the last field of a request's version; the dispatcher answers and counts."""
    from groupcoord.protocol.messages.api_versions import ApiVersionsResponse

    broker = Broker(ServerConfig())
    conn = FakeConn()
    frame = encode_request(
        18, 3, 9, ApiVersionsRequest(client_software_name="x", client_software_version="1")
    )
    out = broker.dispatcher.dispatch(conn, frame[4:] + b"\x01\x00\x00")  # type: ignore[arg-type]
    assert isinstance(out, bytes), conn.closed_because
    corr, resp = decode_response(out[4:], 18, 3)
    assert corr == 9 and isinstance(resp, ApiVersionsResponse) and resp.error_code == ErrorCode.NONE
    assert (broker.dispatcher.requests_with_ignored_bytes, broker.dispatcher.ignored_request_bytes) == (1, 3)


def test_consumer_group_apis_answer_load_in_progress_while_state_loads() -> None:
    """KIP-848 requests must not reach the machine before the consumer-group records are replayed."""
    from groupcoord.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
    from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest

    broker = loading_broker()
    hb = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m-1", member_epoch=3)
    r = call(broker, 68, 1, hb)
    assert (r.error_code, r.member_id) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None)  # type: ignore[attr-defined]
    r = call(broker, 69, 0, ConsumerGroupDescribeRequest(group_ids=("g", "h")))
    assert [g.error_code for g in r.groups] == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 2  # type: ignore[attr-defined]
