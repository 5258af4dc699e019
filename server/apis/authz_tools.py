"""ACL checks of the admin APIs that tools call (issue 30), as Kafka's `KafkaApis`/`ControllerApis` make them.

| API | needs | denied |
|---|---|---|
| DescribeLogDirs | DESCRIBE cluster | top-level CLUSTER_AUTHORIZATION_FAILED, no results (v3+; older versions see no results) |
| DescribeProducers | READ topic | TOPIC_AUTHORIZATION_FAILED on each partition of the topic (an invalid name keeps its error) |
| WriteTxnMarkers | ALTER or CLUSTER_ACTION cluster | CLUSTER_AUTHORIZATION_FAILED on every partition |
| ElectLeaders | ALTER cluster | CLUSTER_AUTHORIZATION_FAILED at the top (v1+) and on every asked partition |
| AlterPartitionReassignments | ALTER cluster | CLUSTER_AUTHORIZATION_FAILED at the top and on every partition |
| ListPartitionReassignments | DESCRIBE cluster | CLUSTER_AUTHORIZATION_FAILED at the top, asked partitions echoed |
| ListConfigResources | DESCRIBE_CONFIGS cluster | CLUSTER_AUTHORIZATION_FAILED at the top, nothing listed |
| DescribeQuorum | DESCRIBE cluster | CLUSTER_AUTHORIZATION_FAILED at the top |

The denied answers are the requests' `getErrorResponse` shapes, which Kafka sends when
`authorizeClusterOperation` throws.
"""

from __future__ import annotations

from typing import Any

from groupcoord.protocol.messages import alter_partition_reassignments as apr
from groupcoord.protocol.messages import describe_producers as dp
from groupcoord.protocol.messages import list_partition_reassignments as lpr
from groupcoord.protocol.messages import write_txn_markers as wm
from groupcoord.protocol.messages.describe_log_dirs import DescribeLogDirsResponse
from groupcoord.protocol.messages.describe_quorum import DescribeQuorumResponse
from groupcoord.protocol.messages.list_config_resources import ListConfigResourcesResponse
from groupcoord.server.apis.authz_admin import split_checked
from groupcoord.server.apis.authz_common import CLUSTER_DENIED, TOPIC_DENIED, Handler, allowed, replace_fields
from groupcoord.server.apis.error_answers import elect_error
from groupcoord.server.net.dispatch import RequestContext
from groupcoord.server.security.authorizer import (
    ALTER,
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    READ,
    TOPIC,
)

CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."
TOPIC_DENIED_MESSAGE = "Topic authorization failed."


def _on_cluster(ctx: RequestContext, operation: int) -> bool:
    return allowed(ctx, operation, CLUSTER, CLUSTER_NAME)


def describe_log_dirs(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if _on_cluster(ctx, DESCRIBE):
            return handler(ctx, req)
        return DescribeLogDirsResponse(error_code=CLUSTER_DENIED, results=())

    return checked


def describe_producers(handler: Handler) -> Handler:
    def refuse(denied: tuple[dp.DescribeProducersTopicRequest, ...]) -> dp.DescribeProducersResponse:
        return dp.DescribeProducersResponse(
            topics=tuple(
                dp.DescribeProducersTopicResponse(
                    name=t.name,
                    partitions=tuple(
                        dp.DescribeProducersPartitionResponse(p, TOPIC_DENIED, TOPIC_DENIED_MESSAGE)
                        for p in t.partition_indexes
                    ),
                )
                for t in denied
            )
        )

    def checked(ctx: RequestContext, req: Any) -> Any:
        def ok(t: dp.DescribeProducersTopicRequest) -> bool:
            # Kafka checks the name first: an invalid one keeps INVALID_TOPIC_EXCEPTION even when denied
            return not ctx.services.topics.valid_name(t.name) or allowed(ctx, READ, TOPIC, t.name)

        return split_checked(
            handler,
            ctx,
            req,
            "topics",
            ok,
            refuse,
            lambda resp, refused: replace_fields(resp, topics=tuple(resp.topics) + tuple(refused.topics)),
        )

    return checked


def write_txn_markers(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if _on_cluster(ctx, ALTER) or _on_cluster(ctx, CLUSTER_ACTION):
            return handler(ctx, req)
        by_producer: dict[int, list[wm.WritableTxnMarkerTopicResult]] = {}
        for m in req.markers:
            by_producer.setdefault(m.producer_id, []).extend(
                wm.WritableTxnMarkerTopicResult(
                    name=t.name,
                    partitions=tuple(
                        wm.WritableTxnMarkerPartitionResult(p, CLUSTER_DENIED) for p in t.partition_indexes
                    ),
                )
                for t in m.topics
            )
        return wm.WriteTxnMarkersResponse(
            markers=tuple(
                wm.WritableTxnMarkerResult(producer_id=pid, topics=tuple(ts))
                for pid, ts in by_producer.items()
            )
        )

    return checked


def elect_leaders(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if _on_cluster(ctx, ALTER):
            return handler(ctx, req)
        return elect_error(req, CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE)

    return checked


def alter_partition_reassignments(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if _on_cluster(ctx, ALTER):
            return handler(ctx, req)
        return apr.AlterPartitionReassignmentsResponse(
            allow_replication_factor_change=req.allow_replication_factor_change,
            error_code=CLUSTER_DENIED,
            error_message=CLUSTER_DENIED_MESSAGE,
            responses=tuple(
                apr.ReassignableTopicResponse(
                    name=t.name,
                    partitions=tuple(
                        apr.ReassignablePartitionResponse(
                            p.partition_index, CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE
                        )
                        for p in t.partitions
                    ),
                )
                for t in req.topics
            ),
        )

    return checked


def list_partition_reassignments(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if _on_cluster(ctx, DESCRIBE):
            return handler(ctx, req)
        return lpr.ListPartitionReassignmentsResponse(
            error_code=CLUSTER_DENIED,
            error_message=CLUSTER_DENIED_MESSAGE,
            topics=tuple(
                lpr.OngoingTopicReassignment(
                    name=t.name,
                    partitions=tuple(
                        lpr.OngoingPartitionReassignment(partition_index=p) for p in t.partition_indexes
                    ),
                )
                for t in req.topics or ()
            ),
        )

    return checked


def list_config_resources(handler: Handler) -> Handler:
    """ListConfigResources: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED, nothing listed."""

    def checked(ctx: RequestContext, req: Any) -> Any:
        if _on_cluster(ctx, DESCRIBE_CONFIGS):
            return handler(ctx, req)
        return ListConfigResourcesResponse(error_code=CLUSTER_DENIED)

    return checked


def describe_quorum(handler: Handler) -> Handler:
    """DescribeQuorum: DESCRIBE on the cluster, else a top-level CLUSTER_AUTHORIZATION_FAILED."""

    def checked(ctx: RequestContext, req: Any) -> Any:
        if _on_cluster(ctx, DESCRIBE):
            return handler(ctx, req)
        return DescribeQuorumResponse(error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED_MESSAGE)

    return checked
