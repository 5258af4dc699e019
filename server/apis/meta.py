"""ApiVersions, Metadata, FindCoordinator, CreateTopics, DeleteTopics: what a client asks before joining.

Version notes:
- ApiVersions 0-5: the table comes from `groupcoord.protocol.api.SUPPORTED` (Produce advertised from v0,
  KAFKA-18659); an unsupported version is answered by the dispatcher (v0, UNSUPPORTED_VERSION, our range).
  v3+ client software name/version must match Kafka's pattern (else INVALID_REQUEST with no ApiKeys, as
  Kafka's `getErrorResponse`); v3+ carries the feature flags of `features.FEATURES` (below v4 without the
  supported features whose minimum is 0, KAFKA-17492); v5 with a ClusterId that is not ours, or a NodeId
  that is not this node's, gets REBOOTSTRAP_REQUIRED (KIP-1242: the client re-bootstraps).
- Metadata 0-12: this node is the only broker and the controller; topic ids from v10; v0 an empty topic list
  means all topics, v1+ null means all and empty means none; auto-creation from v4 follows the request flag
  (always requested below v4) and `--auto-create-topics-enable`.
- FindCoordinator 0-6: every group key is ours; batched keys from v4; other key types get INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import uuid
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.protocol.messages.create_topics import (
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from groupcoord.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from groupcoord.server.apis import authz, authz_admin
from groupcoord.server.apis.declaration import Api
from groupcoord.server.apis.features import features_for, supported_for_version
from groupcoord.server.apis.topic_rules import check_configs, check_create_assignments
from groupcoord.server.configs.resolve import topic_entries
from groupcoord.server.log.errors import LogError
from groupcoord.server.net.dispatch import Reply, then

if TYPE_CHECKING:
    from groupcoord.server.log.manager import LogManager
    from groupcoord.server.net.dispatch import RequestContext

# AclOperation bitfields of `AclEntry.supportedOperations`: TOPIC (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
# DESCRIBE_CONFIGS, ALTER_CONFIGS) and CLUSTER (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
# ALTER_CONFIGS, IDEMPOTENT_WRITE)
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
ZERO_UUID = uuid.UUID(int=0)


def api_versions(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    table = ctx.services.api_versions_table
    if ctx.version >= 3 and not (
        _SOFTWARE.fullmatch(req.client_software_name) and _SOFTWARE.fullmatch(req.client_software_version)
    ):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=())
    cfg = ctx.services.config
    if (
        ctx.version >= 5
        and req.cluster_id is not None
        and (req.cluster_id != cfg.cluster_id or req.node_id != cfg.node_id)
    ):
        return ApiVersionsResponse(error_code=ErrorCode.REBOOTSTRAP_REQUIRED, api_keys=())
    feats = features_for(frozenset(a.api_key for a in table))
    return ApiVersionsResponse(
        error_code=ErrorCode.NONE,
        api_keys=table,
        supported_features=supported_for_version(feats, ctx.version),
        finalized_features_epoch=feats.epoch,
        finalized_features=feats.finalized,
    )


def _broker(ctx: RequestContext) -> MetadataResponseBroker:
    cfg = ctx.services.config
    return MetadataResponseBroker(
        node_id=cfg.node_id,
        host=ctx.listener.advertised_host,
        port=ctx.listener.advertised_port,
        rack=cfg.broker_rack,
    )


def _brokers(ctx: RequestContext) -> tuple[MetadataResponseBroker, ...]:
    """This node; in cluster mode every live node (the others' rack is not known here: None)."""
    routing = ctx.services.routing
    if routing is None:
        return (_broker(ctx),)
    me, out = ctx.services.config.node_id, []
    for n in routing.live_nodes():
        # each node's endpoint of the listener the request came in on, as Kafka answers
        host, port = n.address(ctx.listener.name)
        out.append(
            _broker(ctx)
            if n.node_id == me
            else MetadataResponseBroker(node_id=n.node_id, host=host, port=port)
        )
    return tuple(out) or (_broker(ctx),)


def topic_entry(ctx: RequestContext, name: str) -> MetadataResponseTopic:
    """One topic as Metadata answers it (DescribeTopicPartitions answers its partitions alike)."""
    topics = ctx.services.topics
    info = topics.get(name)
    node = ctx.services.config.node_id
    if info is None:
        return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
    routing = ctx.services.routing
    if routing is not None and not topics.is_internal(name):  # cluster mode: each partition's lease holder
        parts = tuple(_led_partition(routing.partition_leader(name, p), p) for p in range(info.partitions))
    elif (
        routing is not None
    ):  # __consumer_offsets: partition i is shard i, led by the coordinator of its groups
        parts = tuple(_led_partition(routing.shard_leader(p), p) for p in range(info.partitions))
    else:
        parts = tuple(
            MetadataResponsePartition(
                error_code=0,
                partition_index=p,
                leader_id=node,
                leader_epoch=0,
                replica_nodes=(node,),
                isr_nodes=(node,),
            )
            for p in range(info.partitions)
        )
    topic_id = info.topic_id if ctx.version >= 10 else ZERO_UUID
    return MetadataResponseTopic(
        error_code=0, name=name, topic_id=topic_id, is_internal=topics.is_internal(name), partitions=parts
    )


def _led_partition(leader: tuple[Any, int] | None, p: int) -> MetadataResponsePartition:
    """A partition as cluster mode answers it: its lease holder and leader epoch, or LEADER_NOT_AVAILABLE
    (leader -1) while no live node holds its lease (a failover within the lease TTL); clients retry."""
    if leader is None:
        return MetadataResponsePartition(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE, partition_index=p, leader_id=-1, leader_epoch=-1
        )
    node, epoch = leader
    return MetadataResponsePartition(
        error_code=0,
        partition_index=p,
        leader_id=node.node_id,
        leader_epoch=epoch,
        replica_nodes=(node.node_id,),
        isr_nodes=(node.node_id,),
    )


def metadata(ctx: RequestContext, req: MetadataRequest) -> Reply[MetadataResponse]:
    """Metadata, with the authorized operations v8+ may ask for (librdkafka's `describe_cluster` and
    `describe_topics` read them from here): with no authorizer Kafka reports every operation the resource
    supports."""
    result = _metadata(ctx, req)
    cluster_ops = ctx.version <= 10 and req.include_cluster_authorized_operations
    topic_ops = req.include_topic_authorized_operations
    if ctx.version < 8 or not (cluster_ops or topic_ops):
        return result

    def add_operations(resp: MetadataResponse) -> MetadataResponse:
        topics = resp.topics
        if topic_ops:
            topics = tuple(
                dataclasses.replace(t, topic_authorized_operations=TOPIC_OPERATIONS)
                if t.error_code == 0
                else t
                for t in topics
            )
        ops = CLUSTER_OPERATIONS if cluster_ops else resp.cluster_authorized_operations
        return dataclasses.replace(resp, topics=topics, cluster_authorized_operations=ops)

    return then(result, add_operations)


def _metadata(ctx: RequestContext, req: MetadataRequest) -> Any:
    """Kafka's `handleTopicMetadataRequest`: all topics, topics by name, or (v12) topics by id.

    When any requested topic carries a non-zero id the request is by id (names are then ignored, as in Kafka):
    the Java AdminClient's `describeTopics(TopicCollection.ofTopicIds(...))` sends the id with an empty name.
    Unknown ids are answered UNKNOWN_TOPIC_ID with the id echoed and a null name.
    """
    services = ctx.services
    topics = services.topics
    if req.topics is None or (ctx.version == 0 and not req.topics):
        return _metadata_response(ctx, sorted(topics.names()))
    if any(t.name is None or t.topic_id != ZERO_UUID for t in req.topics):
        if ctx.version < 12 or any(t.name is None and t.topic_id == ZERO_UUID for t in req.topics):
            return _invalid_request(ctx, req)
        wanted: list[str] = []
        unknown: list[uuid.UUID] = []
        for topic_id in dict.fromkeys(t.topic_id for t in req.topics if t.topic_id != ZERO_UUID):
            info = topics.by_id(topic_id)
            if info is None:
                unknown.append(topic_id)
            else:
                wanted.append(info.name)
        return _metadata_response(ctx, wanted, unknown)
    wanted = [t.name for t in req.topics if t.name is not None]
    auto = services.config.auto_create_topics_enable and (ctx.version < 4 or req.allow_auto_topic_creation)
    missing = [n for n in dict.fromkeys(wanted) if auto and topics.get(n) is None and topics.valid_name(n)]
    if missing:
        return asyncio.ensure_future(_create_then_answer(ctx, wanted, missing))
    return _metadata_response(ctx, wanted)


def _invalid_request(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse:
    """Kafka's answer to a topic without a name before v12 ("Topic name can not be null"), or with neither a
    name nor an id: the request's error response, INVALID_REQUEST for every topic asked for."""
    cfg = ctx.services.config
    entries = tuple(
        MetadataResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name=t.name or "", topic_id=t.topic_id)
        for t in req.topics or ()
    )
    return MetadataResponse(
        brokers=_brokers(ctx), cluster_id=cfg.cluster_id, controller_id=cfg.node_id, topics=entries
    )


async def _create_then_answer(ctx: RequestContext, wanted: list[str], missing: list[str]) -> MetadataResponse:
    partitions = ctx.services.config.num_partitions
    for name in missing:
        await ctx.services.topics.create(name, partitions)
    return _metadata_response(ctx, wanted)


def _metadata_response(
    ctx: RequestContext, wanted: list[str], unknown_ids: list[uuid.UUID] | tuple[()] = ()
) -> MetadataResponse:
    topics = ctx.services.topics
    cfg = ctx.services.config
    entries = []
    for name in wanted:
        if not topics.valid_name(name):
            entries.append(MetadataResponseTopic(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name))
        else:
            entries.append(topic_entry(ctx, name))
    for topic_id in unknown_ids:
        entries.append(
            MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id)
        )
    return MetadataResponse(
        brokers=_brokers(ctx),
        cluster_id=cfg.cluster_id,
        controller_id=cfg.node_id,
        topics=tuple(entries),
    )


def find_coordinator(ctx: RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
    cfg = ctx.services.config
    if req.key_type in (0, 1):  # groups and transactional ids: this node coordinates both
        error, message = ErrorCode.NONE, None
    elif req.key_type == 2:
        error, message = (
            ErrorCode.INVALID_REQUEST,
            "groupcoord coordinates consumer groups and transactions, not share-group keys",
        )
    else:
        error, message = ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {req.key_type}"
    ok = error == ErrorCode.NONE
    # the advertised address of the listener the request came in on, as Kafka answers
    here = (cfg.node_id, ctx.listener.advertised_host, ctx.listener.advertised_port) if ok else (-1, "", -1)

    def answer(key: str) -> tuple[int, str, int, ErrorCode, str | None]:
        routing = ctx.services.routing
        if not ok or routing is None:
            return (*here, error, message)
        owner = routing.coordinator_of(
            key
        )  # cluster mode: the owner of the group's (transactional id's) shard
        if owner is None:
            return (
                -1,
                "",
                -1,
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                "the coordinator's shard is being failed over",
            )
        return owner.node_id, *owner.address(ctx.listener.name), ErrorCode.NONE, None

    if ctx.version >= 4:
        coordinators = []
        for k in req.coordinator_keys:
            node, host, port, err, msg = answer(k)
            coordinators.append(
                Coordinator(key=k, node_id=node, host=host, port=port, error_code=err, error_message=msg)
            )
        return FindCoordinatorResponse(coordinators=tuple(coordinators))
    node, host, port, err, msg = answer(req.key)
    return FindCoordinatorResponse(error_code=err, error_message=msg, node_id=node, host=host, port=port)


def create_topics(ctx: RequestContext, req: CreateTopicsRequest) -> Reply[CreateTopicsResponse]:
    return asyncio.ensure_future(_create_topics(ctx, req))


async def _create_topics(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    """Kafka's order of checks: duplicates, the reserved `__consumer_offsets` (it exists), configs, then
    `ReplicationControlManager.createTopic` (manual assignments, replication factor), then the name and
    the log."""
    logs = ctx.services.logs
    node = ctx.services.config.node_id
    results = []
    seen: set[str] = set()
    for t in req.topics:
        error, message = ErrorCode.NONE, None
        partitions = t.num_partitions if t.num_partitions != -1 else ctx.services.config.num_partitions
        topic_id = ZERO_UUID
        configs, refused = check_configs((c.name, c.value) for c in t.configs)
        if t.name in seen:
            error, message = ErrorCode.INVALID_REQUEST, "topic named twice in one request"
        elif ctx.services.topics.is_internal(t.name):
            error, message = ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists."
        elif (named := _name_refusal(logs, t.name)) is not None:
            error, message = named
        elif refused is not None:
            error, message = refused
        else:
            if t.assignments:
                counted = check_create_assignments(
                    t.num_partitions,
                    t.replication_factor,
                    [(a.partition_index, a.broker_ids) for a in t.assignments],
                    node,
                )
                if isinstance(counted, tuple):
                    error, message = counted
                else:
                    partitions = counted
            elif t.replication_factor not in (1, -1):
                error, message = (
                    ErrorCode.INVALID_REPLICATION_FACTOR,
                    "groupcoord has one broker: use replication factor 1",
                )
        if error == ErrorCode.NONE:
            try:
                if req.validate_only:
                    logs.validate_new_topic(t.name, partitions)
                else:
                    topic_id = await logs.create_topic(t.name, partitions, configs)
                    await ctx.services.configs.set_topic(t.name, str(topic_id), dict(configs))
            except LogError as exc:
                error, message = exc.code, exc.message
            except OSError as exc:
                error, message = (
                    ErrorCode.UNKNOWN_SERVER_ERROR,
                    f"could not write the configs: {exc.strerror}",
                )
        seen.add(t.name)
        ok = error == ErrorCode.NONE
        results.append(
            CreatableTopicResult(
                name=t.name,
                topic_id=topic_id,
                error_code=error,
                error_message=message,
                num_partitions=partitions if ok and ctx.version >= 5 else -1,
                replication_factor=1 if ok and ctx.version >= 5 else -1,
                configs=_result_configs(ctx, configs) if ok and ctx.version >= 5 else None,
            )
        )
    return CreateTopicsResponse(topics=tuple(results))


def _name_refusal(logs: LogManager, name: str) -> tuple[ErrorCode, str] | None:
    """Kafka checks the name and whether the topic exists before configs and assignments."""
    try:
        logs.validate_new_topic(name, 1)
    except LogError as exc:
        return ErrorCode(exc.code), exc.message
    return None


def _result_configs(
    ctx: RequestContext, configs: tuple[tuple[str, str], ...]
) -> tuple[CreatableTopicConfigs, ...]:
    """Every topic config with its effective value and source, as Kafka's v5+ answer lists them (the given
    ones as TOPIC_CONFIG, the rest from the broker's defaults)."""
    return tuple(
        CreatableTopicConfigs(
            name=e.name,
            value=e.value,
            read_only=e.read_only,
            config_source=int(e.source),
            is_sensitive=e.sensitive,
        )
        for e in topic_entries(dict(configs), ctx.services.configs.layers)
    )


APIS = (
    Api(key=ApiKey.API_VERSIONS, handler=api_versions, check=authz.open_to_all),
    Api(key=ApiKey.METADATA, handler=metadata, check=authz.metadata),
    Api(
        key=ApiKey.FIND_COORDINATOR, handler=find_coordinator, check=authz.find_coordinator, coordinator=True
    ),
    Api(key=ApiKey.CREATE_TOPICS, handler=create_topics, check=authz_admin.create_topics),
)
