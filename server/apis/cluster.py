"""DescribeCluster (60) and OffsetDelete (47): the admin calls that tools make besides configs.

DescribeCluster v0-1 (Kafka's `KafkaApis.handleDescribeCluster`): this node is the only broker and the
controller id; v1 EndpointType 1 (brokers) is answered, 2 (controllers) gets UNSUPPORTED_ENDPOINT_TYPE as
from a broker. With IncludeClusterAuthorizedOperations and no authorizer, Kafka reports every operation
supported on the CLUSTER resource.

OffsetDelete v0 (KIP-496): partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION here, as in
`KafkaApis.handleOffsetDeleteRequest`; the rest go to the coordinator (`OffsetMetadataManager.delete_offsets`),
whose tombstones are durable before the answer.

Uses of the server (`ctx.services`): `ctx.services.config` (node, host, port, rack, cluster id), `ctx.services.topics`,
`ctx.services.machine` and `ctx.services.runtime` (OffsetDelete).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from groupcoord.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from groupcoord.server.apis import authz, authz_admin, loading
from groupcoord.server.apis.declaration import Api, by_group_id
from groupcoord.server.apis.meta import CLUSTER_OPERATIONS
from groupcoord.server.net.dispatch import then

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

UNSET_OPERATIONS = -(2**31)
BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2


def describe_cluster(ctx: RequestContext, req: DescribeClusterRequest) -> DescribeClusterResponse:
    cfg = ctx.services.config
    if ctx.version >= 1 and req.endpoint_type != BROKERS_ENDPOINT:
        if req.endpoint_type == CONTROLLERS_ENDPOINT:
            error, message = (
                ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
                "CONTROLLER",
            )
        else:
            error, message = ErrorCode.INVALID_REQUEST, f"Unsupported endpoint type {req.endpoint_type}"
        return DescribeClusterResponse(
            error_code=error,
            error_message=message,
            endpoint_type=req.endpoint_type,
            cluster_id=cfg.cluster_id,
        )
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        endpoint_type=BROKERS_ENDPOINT,
        cluster_id=cfg.cluster_id,
        controller_id=cfg.node_id,
        brokers=(
            DescribeClusterBroker(
                broker_id=cfg.node_id,
                host=ctx.listener.advertised_host,
                port=ctx.listener.advertised_port,
                rack=cfg.broker_rack,
            ),
        ),
        cluster_authorized_operations=(
            CLUSTER_OPERATIONS if req.include_cluster_authorized_operations else UNSET_OPERATIONS
        ),
    )


def offset_delete(ctx: RequestContext, req: OffsetDeleteRequest) -> Any:
    if not req.group_id:
        return OffsetDeleteResponse(error_code=ErrorCode.INVALID_GROUP_ID)
    topics = ctx.services.topics
    unknown: dict[str, list[int]] = {}
    known: dict[str, list[int]] = {}
    for t in req.topics:
        for p in t.partitions:
            ok = topics.has_partition(t.name, p.partition_index) and not topics.is_internal(t.name)
            (known if ok else unknown).setdefault(t.name, []).append(p.partition_index)
    machine = ctx.services.machine
    wanted = list(known.items())
    result = ctx.services.runtime.call_global(lambda now: machine.delete_offsets(req.group_id, wanted, now))

    def answer(
        outcome: tuple[int, tuple[tuple[str, tuple[tuple[int, int], ...]], ...]],
    ) -> OffsetDeleteResponse:
        error, per_topic = outcome
        merged: dict[str, list[OffsetDeleteResponsePartition]] = {}
        for name, parts in per_topic:
            merged.setdefault(name, []).extend(
                OffsetDeleteResponsePartition(partition_index=p, error_code=e) for p, e in parts
            )
        for name, parts in unknown.items():
            merged.setdefault(name, []).extend(
                OffsetDeleteResponsePartition(
                    partition_index=p, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                for p in parts
            )
        return OffsetDeleteResponse(
            error_code=error,
            topics=tuple(OffsetDeleteResponseTopic(name=n, partitions=tuple(ps)) for n, ps in merged.items()),
        )

    return then(result, answer)


APIS = (
    Api(
        key=ApiKey.OFFSET_DELETE,
        handler=offset_delete,
        check=authz_admin.offset_delete,
        groups=by_group_id,
        while_loading=loading.offset_delete,
    ),
    Api(key=ApiKey.DESCRIBE_CLUSTER, handler=describe_cluster, check=authz.describe_cluster),
)
