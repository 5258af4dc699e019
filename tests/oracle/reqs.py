"""Request builders the scenarios and the fuzzer share (the project's own codec, protocol/messages)."""

from __future__ import annotations

from typing import Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from groupcoord.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
)
from groupcoord.protocol.messages.describe_groups import DescribeGroupsRequest
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest
from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from groupcoord.protocol.messages.list_groups import ListGroupsRequest
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from groupcoord.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from tests.oracle.transcript import Conn, Recorder

RANGE = (JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01range-meta"),)


def join(
    r: Recorder, c: Conn, label: str, group: str, member: str = "", *, instance: str | None = None,
    session: int = 10000, rebalance: int = 10000, ptype: str = "consumer", protocols: Any = RANGE,
    version: int = 9, wait: bool = True,
) -> Any:  # fmt: skip
    body = JoinGroupRequest(
        group_id=group, session_timeout_ms=session, rebalance_timeout_ms=rebalance, member_id=member,
        group_instance_id=instance, protocol_type=ptype, protocols=protocols, reason=None,
    )  # fmt: skip
    p = r.start(c, label, ApiKey.JOIN_GROUP, version, body)
    return p.result() if wait else p


def sync(
    r: Recorder, c: Conn, label: str, group: str, gen: int, member: str, assignments: dict[str, bytes] | None = None,
    *, instance: str | None = None, version: int = 5, wait: bool = True, ptype: str | None = "consumer",
    pname: str | None = "range",
) -> Any:  # fmt: skip
    body = SyncGroupRequest(
        group_id=group, generation_id=gen, member_id=member, group_instance_id=instance,
        protocol_type=ptype, protocol_name=pname,
        assignments=tuple(SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in (assignments or {}).items()),
    )  # fmt: skip
    p = r.start(c, label, ApiKey.SYNC_GROUP, version, body)
    return p.result() if wait else p


def heartbeat(
    r: Recorder,
    c: Conn,
    label: str,
    group: str,
    gen: int,
    member: str,
    instance: str | None = None,
    version: int = 4,
) -> Any:
    body = HeartbeatRequest(group_id=group, generation_id=gen, member_id=member, group_instance_id=instance)
    return r.call(c, label, ApiKey.HEARTBEAT, version, body)


def leave(
    r: Recorder, c: Conn, label: str, group: str, *members: tuple[str, str | None], version: int = 5
) -> Any:
    if version <= 2:
        body = LeaveGroupRequest(group_id=group, member_id=members[0][0])
    else:
        ids = tuple(MemberIdentity(member_id=m, group_instance_id=i, reason="test") for m, i in members)
        body = LeaveGroupRequest(group_id=group, members=ids)
    return r.call(c, label, ApiKey.LEAVE_GROUP, version, body)


def describe(r: Recorder, c: Conn, label: str, *groups: str, version: int = 5) -> Any:
    return r.call(c, label, ApiKey.DESCRIBE_GROUPS, version, DescribeGroupsRequest(groups=groups))


def list_groups(r: Recorder, c: Conn, *, states: tuple[str, ...] = (), types: tuple[str, ...] = ()) -> Any:
    """ListGroups v5, unrecorded (the servers hold other tests' groups too): the caller filters and notes."""
    c.send(ApiKey.LIST_GROUPS, 5, ListGroupsRequest(states_filter=states, types_filter=types))
    return c.recv()


def cg_heartbeat(
    r: Recorder, c: Conn, label: str, group: str, member: str, epoch: int, *, topics: tuple[str, ...] | None = None,
    regex: str | None = None, owned: Any = ..., rebalance: int = -1,
    instance: str | None = None, assignor: str | None = None, version: int = 1,
) -> Any:  # fmt: skip
    if owned is ...:  # a (re)join owns nothing; later, null: "unchanged since the last heartbeat"
        owned = () if epoch == 0 else None
    body = ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, instance_id=instance, rebalance_timeout_ms=rebalance,
        subscribed_topic_names=topics, subscribed_topic_regex=regex, server_assignor=assignor,
        topic_partitions=owned,
    )  # fmt: skip
    return r.call(c, label, ApiKey.CONSUMER_GROUP_HEARTBEAT, version, body)


def cg_describe(r: Recorder, c: Conn, label: str, *groups: str) -> Any:
    return r.call(c, label, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=groups))


def commit(
    r: Recorder, c: Conn, label: str, group: str, offsets: dict[tuple[str, int], int], *, gen: int = -1,
    member: str = "", instance: str | None = None, version: int = 9, metadata: str | None = "m",
) -> Any:  # fmt: skip
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, p), off in offsets.items():
        part = OffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_metadata=metadata
        )
        by_topic.setdefault(topic, []).append(part)
    body = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=gen, member_id=member, group_instance_id=instance,
        topics=tuple(OffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
    )  # fmt: skip
    return r.call(c, label, ApiKey.OFFSET_COMMIT, version, body)


def fetch_offsets(
    r: Recorder, c: Conn, label: str, group: str, topics: dict[str, tuple[int, ...]] | None, *, version: int = 9,
    member: str | None = None, epoch: int = -1,
) -> Any:  # fmt: skip
    if version >= 8:
        ts = (
            None
            if topics is None
            else tuple(OffsetFetchRequestTopics(name=t, partition_indexes=ps) for t, ps in topics.items())
        )
        body = OffsetFetchRequest(
            groups=(OffsetFetchRequestGroup(group_id=group, member_id=member, member_epoch=epoch, topics=ts),)
        )
    else:
        ts1 = (
            None
            if topics is None
            else tuple(OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items())
        )
        body = OffsetFetchRequest(group_id=group, topics=ts1)
    return r.call(c, label, ApiKey.OFFSET_FETCH, version, body)


def metadata(c: Conn, *topics: str) -> Any:
    req = MetadataRequest(
        topics=tuple(MetadataRequestTopic(name=t) for t in topics), allow_auto_topic_creation=False
    )
    c.send(ApiKey.METADATA, 12, req)
    return c.recv()


def topic_ids(c: Conn, *topics: str) -> dict[str, Any]:
    return {t.name: t.topic_id for t in metadata(c, *topics).topics}
