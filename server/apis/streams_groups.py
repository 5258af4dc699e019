"""StreamsGroupHeartbeat (88, v0-1) and StreamsGroupDescribe (89, v0-1): KIP-1071 streams groups.

These handlers translate only; the group logic is `server/coordinator/modern/streams`. The heartbeat hands
the coordinator a partition-count lookup over the log's topics (Kafka's metadata image), and creates the
internal topics the coordinator asks for after answering (Kafka's `internalTopicsToBeCreated`: the broker
creates them with the partition count the topology decided and the client's TopicInfo configs; the client
keeps heartbeating and sees MISSING_INTERNAL_TOPICS until they exist).

Version notes: both APIs are flexible in every version. Heartbeat v1's response carries AcceptableRecoveryLag
as int64 (v0: the int32 AcceptableRecoveryLagLegacy) and TopologyDescriptionRequired (always false here: no
topology-description plugin, as Kafka 4.4 without one). Describe v1 adds TopologyDescriptionStatus
(NOT_STORED when asked, NOT_REQUESTED otherwise) and AssignorName ("sticky"). API 93 is not offered.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import streams_group_describe as sgd
from groupcoord.protocol.messages import streams_group_heartbeat as sgh
from groupcoord.server.apis import authz_streams
from groupcoord.server.apis.declaration import Api, by_group_id, by_group_ids
from groupcoord.server.apis.topic_rules import check_configs
from groupcoord.server.coordinator.modern.streams import api as m
from groupcoord.server.coordinator.modern.streams.group import StreamsGroup, TaskTuple
from groupcoord.server.coordinator.modern.streams.validation import HeartbeatError, check_topic_names
from groupcoord.server.log.errors import LogError
from groupcoord.server.net.dispatch import then

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext
    from groupcoord.server.services import HandlerServices

log = structlog.get_logger("groupcoord.streams")
UNKNOWN_SERVER_ERROR = int(ErrorCode.UNKNOWN_SERVER_ERROR)
INT_MIN = -(2**31)
#: internal topics being created now (deduplicated as Kafka's AutoTopicCreationManager does)
_CREATING: set[str] = set()
_TASKS: set[asyncio.Future[None]] = set()


def _tasks(ts: tuple[sgh.TaskIds, ...] | None) -> dict[str, frozenset[int]] | None:
    if ts is None:
        return None
    out: dict[str, frozenset[int]] = {}
    for t in ts:
        out[t.subtopology_id] = out.get(t.subtopology_id, frozenset()) | frozenset(t.partitions)
    return out


def _info(t: sgh.TopicInfo) -> m.TopicInfo:
    return m.TopicInfo(
        t.name, t.partitions, t.replication_factor, tuple((c.key, c.value) for c in t.topic_configs)
    )


def _topology(t: sgh.Topology | None) -> m.Topology | None:
    if t is None:
        return None
    subs = tuple(
        m.Subtopology(
            s.subtopology_id,
            tuple(s.source_topics),
            tuple(s.source_topic_regex),
            tuple(_info(i) for i in s.state_changelog_topics),
            tuple(s.repartition_sink_topics),
            tuple(_info(i) for i in s.repartition_source_topics),
            tuple(
                m.CopartitionGroup(
                    tuple(c.source_topics), tuple(c.source_topic_regex), tuple(c.repartition_source_topics)
                )
                for c in s.copartition_groups
            ),
        )
        for s in t.subtopologies
    )
    return m.Topology(t.epoch, subs)


def _offsets(os: tuple[sgh.TaskOffset, ...] | None) -> tuple[m.TaskOffset, ...] | None:
    return None if os is None else tuple(m.TaskOffset(o.subtopology_id, o.partition, o.offset) for o in os)


def streams_group_heartbeat(ctx: RequestContext, req: sgh.StreamsGroupHeartbeatRequest) -> Any:
    services = ctx.services
    topology = _topology(req.topology)
    precheck = None
    if topology is not None:
        try:
            check_topic_names(topology)
        except HeartbeatError as err:
            precheck = (err.code, err.message or "")
    endpoint = req.user_endpoint
    mreq = m.StreamsHeartbeatRequest(
        version=ctx.version,
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        endpoint_information_epoch=req.endpoint_information_epoch,
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        topology=topology,
        active_tasks=_tasks(req.active_tasks),
        standby_tasks=_tasks(req.standby_tasks),
        warmup_tasks=_tasks(req.warmup_tasks),
        process_id=req.process_id,
        user_endpoint=None if endpoint is None else (endpoint.host, endpoint.port),
        client_tags=None if req.client_tags is None else tuple((kv.key, kv.value) for kv in req.client_tags),
        task_offsets=_offsets(req.task_offsets),
        task_end_offsets=_offsets(req.task_end_offsets),
        shutdown_application=req.shutdown_application,
        client_id=ctx.client_id or "",
        client_host=ctx.client_host,
        precheck=precheck,
    )
    topics = services.topics

    def count(name: str) -> int | None:
        if topics.is_internal(name):
            return None
        info = topics.get(name)
        return None if info is None else int(info.partitions)

    machine = services.machine
    version = ctx.version

    def answer(r: m.StreamsHeartbeatResult) -> sgh.StreamsGroupHeartbeatResponse:
        if r.topics_to_create:
            _create_internal_topics(services, r.topics_to_create)
        return heartbeat_response(r, version)

    return then(
        services.runtime.call_parked(
            req.group_id,
            lambda tok, now: machine.streams_group_heartbeat(mreq, count, tok, now),
            lambda: m.StreamsHeartbeatResult(UNKNOWN_SERVER_ERROR),
        ),
        answer,
    )


def _create_internal_topics(services: HandlerServices, wanted: tuple[m.TopicToCreate, ...]) -> None:
    todo = [t for t in wanted if t.name not in _CREATING and services.topics.get(t.name) is None]
    if not todo:
        return
    _CREATING.update(t.name for t in todo)
    task = asyncio.ensure_future(_create(services, todo))
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


async def _create(services: HandlerServices, todo: list[m.TopicToCreate]) -> None:
    for t in todo:
        try:
            configs, refused = check_configs(t.configs)
            if refused is not None:
                log.warning("streams_internal_topic_refused", topic=t.name, reason=refused[1])
                continue
            topic_id = await services.logs.create_topic(t.name, t.partitions, configs)
            await services.configs.set_topic(t.name, str(topic_id), dict(configs))
            log.info("streams_internal_topic_created", topic=t.name, partitions=t.partitions)
        except (LogError, OSError) as exc:
            log.warning("streams_internal_topic_failed", topic=t.name, error=str(exc))
        finally:
            _CREATING.discard(t.name)


def _wire_tasks(t: Mapping[str, frozenset[int]]) -> tuple[sgh.TaskIds, ...]:
    return tuple(
        sgh.TaskIds(subtopology_id=s, partitions=tuple(sorted(ps))) for s, ps in sorted(t.items()) if ps
    )


def heartbeat_response(r: m.StreamsHeartbeatResult, version: int) -> sgh.StreamsGroupHeartbeatResponse:
    if r.error:
        return sgh.StreamsGroupHeartbeatResponse(error_code=r.error, error_message=r.error_message)
    tasks = r.tasks
    endpoints = None
    if r.partitions_by_user_endpoint is not None:
        endpoints = tuple(
            sgh.EndpointToPartitions(
                user_endpoint=sgh.Endpoint(host=e.endpoint[0], port=e.endpoint[1]),
                active_partitions=tuple(sgh.TopicPartition(topic=t, partitions=ps) for t, ps in e.active),
                standby_partitions=tuple(sgh.TopicPartition(topic=t, partitions=ps) for t, ps in e.standby),
            )
            for e in r.partitions_by_user_endpoint
        )
    return sgh.StreamsGroupHeartbeatResponse(
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        heartbeat_interval_ms=r.heartbeat_interval_ms,
        acceptable_recovery_lag_legacy=min(r.acceptable_recovery_lag, 2**31 - 1) if version == 0 else 0,
        task_offset_interval_ms=r.task_offset_interval_ms,
        acceptable_recovery_lag=r.acceptable_recovery_lag if version >= 1 else -1,
        status=tuple(sgh.Status(status_code=c, status_detail=d) for c, d in r.status),
        active_tasks=None if tasks is None else _wire_tasks(tasks[0]),
        standby_tasks=None if tasks is None else _wire_tasks(tasks[1]),
        warmup_tasks=None if tasks is None else _wire_tasks(tasks[2]),
        endpoint_information_epoch=r.endpoint_information_epoch,
        partitions_by_user_endpoint=endpoints,
    )


# ================================================================================ describe


def _assignment(t: TaskTuple) -> sgd.Assignment:
    return sgd.Assignment(
        active_tasks=_wire_tasks(t.active),
        standby_tasks=_wire_tasks(t.standby),
        warmup_tasks=_wire_tasks(t.warmup),
    )


def _wire_info(t: m.TopicToCreate) -> sgh.TopicInfo:
    return sgh.TopicInfo(
        name=t.name,
        partitions=t.partitions,
        replication_factor=max(t.replication_factor, 0),
        topic_configs=tuple(sgh.KeyValue(key=k, value=v) for k, v in t.configs),
    )


def _described(g: StreamsGroup, assignor: str) -> sgd.DescribedGroup:
    topology = None
    if g.topology is not None:
        subs = None
        if g.configured is not None and g.configured.subtopologies is not None:
            subs = tuple(
                sgd.DescribedSubtopology(
                    subtopology_id=s.subtopology_id,
                    source_topics=s.source_topics,
                    repartition_sink_topics=s.repartition_sink_topics,
                    state_changelog_topics=tuple(_wire_info(t) for t in s.state_changelog_topics),
                    repartition_source_topics=tuple(_wire_info(t) for t in s.repartition_source_topics),
                )
                for s in g.configured.subtopologies
            )
        topology = sgd.DescribedTopology(epoch=g.topology.epoch, subtopologies=subs)
    members = []
    for mm in g.members.values():
        ep = mm.user_endpoint
        members.append(
            sgd.DescribedMember(
                member_id=mm.member_id,
                member_epoch=mm.member_epoch,
                instance_id=mm.instance_id,
                rack_id=mm.rack_id,
                client_id=mm.client_id,
                client_host=mm.client_host,
                topology_epoch=mm.topology_epoch,
                process_id=mm.process_id,
                user_endpoint=None if ep is None else sgh.Endpoint(host=ep[0], port=ep[1]),
                client_tags=tuple(sgh.KeyValue(key=k, value=v) for k, v in mm.client_tags),
                task_offsets=tuple(
                    sgh.TaskOffset(subtopology_id=o.subtopology_id, partition=o.partition, offset=o.offset)
                    for o in g.task_offsets.get(mm.member_id, ())
                ),
                task_end_offsets=tuple(
                    sgh.TaskOffset(subtopology_id=o.subtopology_id, partition=o.partition, offset=o.offset)
                    for o in g.task_end_offsets.get(mm.member_id, ())
                ),
                assignment=_assignment(mm.assigned),
                target_assignment=_assignment(g.target.get(mm.member_id, TaskTuple())),
                is_classic=False,
            )
        )
    return sgd.DescribedGroup(
        group_id=g.group_id,
        group_state=g.state,
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        topology=topology,
        members=tuple(members),
        assignor_name=assignor,
    )


def streams_group_describe(
    ctx: RequestContext, req: sgd.StreamsGroupDescribeRequest
) -> sgd.StreamsGroupDescribeResponse:
    machine = ctx.services.machine
    assignor = machine.streams_manager.config.assignors[0]
    out = []
    for gid in req.group_ids:
        g = machine.streams_group(gid)
        if not gid.strip():
            d = sgd.DescribedGroup(error_code=ErrorCode.INVALID_GROUP_ID, error_message=None, group_id=gid)
        elif g is not None:
            d = _described(g, assignor)
        else:
            message = (
                f"Group {gid} is not a streams group."
                if machine.has_group(gid)
                else f"Group {gid} not found."
            )
            d = sgd.DescribedGroup(
                error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                error_message=message,
                group_id=gid,
                group_state="Dead",
            )
        status = 1 if req.include_topology_description else 0  # NOT_STORED / NOT_REQUESTED: no plugin
        out.append(_with(d, status))
    return sgd.StreamsGroupDescribeResponse(groups=tuple(out))


def _with(d: sgd.DescribedGroup, status: int) -> sgd.DescribedGroup:
    return dataclasses.replace(d, topology_description_status=status)


def _heartbeat_while_loading(
    ctx: RequestContext, req: sgh.StreamsGroupHeartbeatRequest, code: ErrorCode
) -> sgh.StreamsGroupHeartbeatResponse:
    return sgh.StreamsGroupHeartbeatResponse(error_code=code)


def _describe_while_loading(
    ctx: RequestContext, req: sgd.StreamsGroupDescribeRequest, code: ErrorCode
) -> sgd.StreamsGroupDescribeResponse:
    return sgd.StreamsGroupDescribeResponse(
        groups=tuple(sgd.DescribedGroup(error_code=code, group_id=g) for g in req.group_ids)
    )


APIS = (
    Api(
        key=ApiKey.STREAMS_GROUP_HEARTBEAT,
        handler=streams_group_heartbeat,
        check=authz_streams.streams_group_heartbeat,
        groups=by_group_id,
        while_loading=_heartbeat_while_loading,
        coordinator=True,
    ),
    Api(
        key=ApiKey.STREAMS_GROUP_DESCRIBE,
        handler=streams_group_describe,
        check=authz_streams.streams_group_describe,
        groups=by_group_ids,
        while_loading=_describe_while_loading,
        coordinator=True,
    ),
)
