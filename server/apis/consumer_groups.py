"""ConsumerGroupHeartbeat (API 68) and ConsumerGroupDescribe (API 69): KIP-848 consumer groups.

These handlers translate only: the wire request becomes the machine's `ConsumerGroupHeartbeatRequest`
(client id and host from the connection), the machine sees topics through a `TopicImage` over the log's
topics (ids and partition counts, as Kafka's metadata image), and results go back in the wire shape.

Version notes: both APIs are flexible in every version. Heartbeat v0 lets the server generate the member
id; v1 adds SubscribedTopicRegex (RE2, resolved by the coordinator; INVALID_REGULAR_EXPRESSION when it does not
compile) and requires a client-generated member id. Describe v1 adds the members' MemberType.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.fast import consumer_group_heartbeat_ok, parse_consumer_group_heartbeat
from groupcoord.protocol.messages import consumer_group_describe as cgd
from groupcoord.protocol.messages import consumer_group_heartbeat as cgh
from groupcoord.server.apis import authz_consumer, loading
from groupcoord.server.apis.declaration import Api, by_group_id, by_group_ids
from groupcoord.server.coordinator.modern.consumer import api as m
from groupcoord.server.net.dispatch import then
from groupcoord.server.security.authorizer import DESCRIBE, TOPIC

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import Peer, RequestContext
    from groupcoord.server.services import HandlerServices

UNKNOWN_SERVER_ERROR = int(ErrorCode.UNKNOWN_SERVER_ERROR)


class _TopicInfo(Protocol):
    name: str
    topic_id: uuid.UUID
    partitions: int


class TopicLookups(Protocol):
    """What this handler reads of `services.topics`."""

    def get(self, name: str) -> Any: ...

    def by_id(self, topic_id: uuid.UUID) -> Any: ...

    def names(self) -> list[str]: ...

    def is_internal(self, name: str | None) -> bool: ...

    def version(self) -> object: ...


class LogTopicImage:
    """The coordinator's `TopicImage` over the log's topics (read at the moment of each call). `visible`: with
    an authorizer, the topics the requesting principal may DESCRIBE, the only ones a regex it sends may resolve
    to (Kafka's `TopicRegexResolver.filterTopicDescribeAuthorizedTopics`)."""

    def __init__(self, topics: TopicLookups, visible: Callable[[str], bool] | None = None) -> None:
        self._topics = topics
        self._visible = visible

    def topic_by_name(self, name: str) -> tuple[uuid.UUID, int] | None:
        info: _TopicInfo | None = self._topics.get(name)
        if info is None:
            return None
        return info.topic_id, info.partitions

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        info: _TopicInfo | None = self._topics.by_id(topic_id)
        return None if info is None else info.name

    def version(self) -> object:
        """The topic registry's version (`Topics.version`): the coordinator knows a group's metadata hash
        without recomputing it while this object is the same (`modern/consumer/steady.py`)."""
        return self._topics.version()

    def topic_names(self) -> frozenset[str]:
        """What a regex subscription may match: every topic of the image, internal `__consumer_offsets`
        included, as Kafka 4.4's `TopicRegexResolver` resolves over its whole metadata image (asked of Kafka:
        tests/oracle/test_regex.py). Its partitions fetch as empty logs here (docs/differences.md, 17)."""
        visible = self._visible
        return frozenset(n for n in self._topics.names() if visible is None or visible(n))


def consumer_group_heartbeat(ctx: RequestContext, req: cgh.ConsumerGroupHeartbeatRequest) -> Any:
    owned = None
    if req.topic_partitions is not None:
        merged: dict[uuid.UUID, frozenset[int]] = {}
        for tp in req.topic_partitions:
            merged[tp.topic_id] = merged.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
        owned = merged
    mreq = m.ConsumerGroupHeartbeatRequest(
        version=ctx.version,
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=req.subscribed_topic_names,
        subscribed_topic_regex=req.subscribed_topic_regex,
        server_assignor=req.server_assignor,
        topic_partitions=owned,
        client_id=ctx.client_id or "",
        client_host=ctx.client_host,
    )
    access = ctx.services.access
    visible = None
    if access.enabled:  # every heartbeat may resolve the group's regexes, not only one that sends a regex
        principal, host = ctx.principal, ctx.conn.peer_host

        def visible(name: str) -> bool:
            return access.authorize(principal, host, DESCRIBE, TOPIC, name)

    image = LogTopicImage(ctx.services.topics, visible)
    machine = ctx.services.machine
    return then(
        ctx.services.runtime.call_parked(
            req.group_id,
            lambda tok, now: machine.consumer_group_heartbeat(mreq, image, tok, now),
            lambda: m.ConsumerGroupHeartbeatResult(UNKNOWN_SERVER_ERROR),
        ),
        heartbeat_response,
    )


#: what the `RequestObserver` (metrics) is told of a fast-lane answer: NONE, as the frame says
FAST_OK = cgh.ConsumerGroupHeartbeatResponse(error_code=0)


def consumer_group_heartbeat_fast(
    services: HandlerServices, conn: Peer, frame: bytes, version: int
) -> tuple[bytes, object] | None:
    """The ConsumerGroupHeartbeat fast lane (issue 28; dispatch's `fast_lanes`): a steady-state request read by
    `protocol.fast`, the runtime's `consumer_heartbeat` (the machine's steady-state decision, its session timer
    moved, no reply future), the answer encoded by hand. None, and the request goes the general way
    (`consumer_group_heartbeat` above, which takes the same decision), for anything else: both ways give the
    same answer (tests/integration/test_consumer_group_fast_lane.py)."""
    fields = parse_consumer_group_heartbeat(frame, version)
    if fields is None:
        return None
    client_id, group_id, member_id, epoch, instance_id, rack_id, rebalance_timeout_ms = fields
    host = conn.peer_host
    epoch = services.runtime.consumer_heartbeat(group_id, member_id, (
        epoch, instance_id, rack_id, rebalance_timeout_ms, client_id, "/" + host if host else "",
        services.topics.version(),
    ))  # fmt: skip
    if epoch is None:
        return None
    interval = services.machine.consumer_manager.config_for(
        group_id
    ).heartbeat_interval_ms  # its group configs
    return consumer_group_heartbeat_ok(frame[4:8], member_id, epoch, interval), FAST_OK


def heartbeat_response(r: m.ConsumerGroupHeartbeatResult) -> cgh.ConsumerGroupHeartbeatResponse:
    if r.error:
        return cgh.ConsumerGroupHeartbeatResponse(error_code=r.error, error_message=r.error_message)
    assignment = None
    if r.assignment is not None:
        assignment = cgh.HeartbeatAssignment(
            topic_partitions=tuple(
                cgh.HeartbeatTopicPartitions(topic_id=t, partitions=tuple(sorted(r.assignment[t])))
                for t in sorted(r.assignment, key=str)
            )
        )
    return cgh.ConsumerGroupHeartbeatResponse(
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        heartbeat_interval_ms=r.heartbeat_interval_ms,
        assignment=assignment,
    )


def _assignment(parts: tuple[m.DescribedTopicPartitions, ...]) -> cgd.DescribedAssignment:
    return cgd.DescribedAssignment(
        topic_partitions=tuple(
            cgd.DescribedTopicPartitions(
                topic_id=p.topic_id, topic_name=p.topic_name, partitions=p.partitions
            )
            for p in parts
        )
    )


def consumer_group_describe(ctx: RequestContext, req: cgd.ConsumerGroupDescribeRequest) -> Any:
    access = ctx.services.access
    visible = None
    if access.enabled:  # every heartbeat may resolve the group's regexes, not only one that sends a regex
        principal, host = ctx.principal, ctx.conn.peer_host

        def visible(name: str) -> bool:
            return access.authorize(principal, host, DESCRIBE, TOPIC, name)

    image = LogTopicImage(ctx.services.topics, visible)
    machine = ctx.services.machine
    described = iter(machine.consumer_group_describe([gid for gid in req.group_ids if gid], image))
    groups = []
    for gid in req.group_ids:
        if not gid:
            groups.append(
                cgd.DescribedGroup(
                    error_code=ErrorCode.INVALID_GROUP_ID,
                    error_message="Group id can't be empty.",
                    group_id=gid,
                )
            )
            continue
        d = next(described)
        groups.append(
            cgd.DescribedGroup(
                error_code=d.error,
                error_message=d.error_message,
                group_id=d.group_id,
                group_state=d.state,
                group_epoch=d.group_epoch,
                assignment_epoch=d.assignment_epoch,
                assignor_name=d.assignor_name,
                members=tuple(
                    cgd.DescribedMember(
                        member_id=x.member_id,
                        instance_id=x.instance_id,
                        rack_id=x.rack_id,
                        member_epoch=x.member_epoch,
                        client_id=x.client_id,
                        client_host=x.client_host,
                        subscribed_topic_names=x.subscribed_topic_names,
                        subscribed_topic_regex=x.subscribed_topic_regex,
                        assignment=_assignment(x.assignment),
                        target_assignment=_assignment(x.target_assignment),
                        member_type=x.member_type,
                    )
                    for x in d.members
                ),
                authorized_operations=(
                    GROUP_AUTHORIZED_OPERATIONS
                    if req.include_authorized_operations and not d.error
                    else INT_MIN
                ),
            )
        )
    return cgd.ConsumerGroupDescribeResponse(groups=tuple(groups))


# READ, DELETE and DESCRIBE (what a client may do to a group without an authorizer), as DescribeGroups says
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
INT_MIN = -(2**31)


APIS = (
    Api(
        key=ApiKey.CONSUMER_GROUP_HEARTBEAT,
        handler=consumer_group_heartbeat,
        check=authz_consumer.consumer_group_heartbeat,
        groups=by_group_id,
        while_loading=loading.consumer_group_heartbeat,
        fast_lane=consumer_group_heartbeat_fast,
        coordinator=True,
    ),
    Api(
        key=ApiKey.CONSUMER_GROUP_DESCRIBE,
        handler=consumer_group_describe,
        check=authz_consumer.consumer_group_describe,
        groups=by_group_ids,
        while_loading=loading.consumer_group_describe,
        coordinator=True,
    ),
)
