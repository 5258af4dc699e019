"""ElectLeaders (43), AlterPartitionReassignments (45) and ListPartitionReassignments (46), answered as a
one-broker Kafka cluster answers them: each partition has one replica, this node, which is its preferred
leader and always leads, and no reassignment is ever in progress.

As Kafka's controller (`ReplicationControlManager`) decides:
- ElectLeaders v0-2: ElectionType 0 (preferred) or 1 (unclean) finds the leader already in place:
  ELECTION_NOT_NEEDED per asked partition; an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION. With
  TopicPartitions null every topic is listed with no partition results (Kafka leaves out the partitions
  that need no election). Another ElectionType is INVALID_REQUEST for the whole request and each partition.
- AlterPartitionReassignments v0-1: unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; Replicas null
  (cancel) NO_REASSIGNMENT_IN_PROGRESS; an empty list, a duplicate or a broker other than this node
  INVALID_REPLICA_ASSIGNMENT with Kafka's message (only this node is registered); [this node] is the current
  assignment: a no-op success (so AllowReplicationFactorChange, v1, never matters: the factor stays 1).
- ListPartitionReassignments v0: no partition is reassigning, so the answer lists nothing.
The ACL checks (ALTER on CLUSTER; DESCRIBE for the listing) are in `authz_tools`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import alter_partition_reassignments as apr
from groupcoord.protocol.messages import elect_leaders as el
from groupcoord.protocol.messages import list_partition_reassignments as lpr
from groupcoord.server.apis import authz_tools
from groupcoord.server.apis.declaration import Api
from groupcoord.server.apis.error_answers import elect_error

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."
NO_REASSIGNMENT_MESSAGE = "No partition reassignment is in progress."


def elect_leaders(ctx: RequestContext, req: el.ElectLeadersRequest) -> el.ElectLeadersResponse:
    topics = ctx.services.topics
    election = req.election_type if ctx.version >= 1 else PREFERRED
    if election not in (PREFERRED, UNCLEAN):
        return elect_error(req, ErrorCode.INVALID_REQUEST, f"Unknown election type {election}")
    if req.topic_partitions is None:
        results = tuple(el.ReplicaElectionResult(topic=name) for name in sorted(topics.names()))
        return el.ElectLeadersResponse(error_code=ErrorCode.NONE, replica_election_results=results)
    out = []
    for t in req.topic_partitions:
        parts = []
        for p in t.partitions:
            if topics.get(t.topic) is None:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {t.topic}"
            elif not topics.has_partition(t.topic, p):
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {t.topic}-{p}"
            else:
                code, message = ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED_MESSAGE
            parts.append(
                el.ElectLeadersPartitionResult(partition_id=p, error_code=code, error_message=message)
            )
        out.append(el.ReplicaElectionResult(topic=t.topic, partition_result=tuple(parts)))
    return el.ElectLeadersResponse(error_code=ErrorCode.NONE, replica_election_results=tuple(out))


def alter_partition_reassignments(
    ctx: RequestContext, req: apr.AlterPartitionReassignmentsRequest
) -> apr.AlterPartitionReassignmentsResponse:
    topics = ctx.services.topics
    node = ctx.services.config.node_id
    allow_rf_change = req.allow_replication_factor_change if ctx.version >= 1 else True
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            code, message = _reassign(
                topics.get(t.name) is not None,
                topics.has_partition(t.name, p.partition_index),
                t.name,
                p,
                node,
            )
            parts.append(
                apr.ReassignablePartitionResponse(
                    partition_index=p.partition_index, error_code=code, error_message=message
                )
            )
        out.append(apr.ReassignableTopicResponse(name=t.name, partitions=tuple(parts)))
    return apr.AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=allow_rf_change,
        error_code=ErrorCode.NONE,
        error_message=None,
        responses=tuple(out),
    )


def _reassign(
    topic_known: bool,
    partition_known: bool,
    topic: str,
    p: apr.ReassignablePartition,
    node: int,
) -> tuple[int, str | None]:
    """The error of one partition's reassignment, in the order Kafka's controller checks."""
    if not topic_known:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    if not partition_known:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{p.partition_index}."
    if p.replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, NO_REASSIGNMENT_MESSAGE
    if not p.replicas:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
            "The manual partition assignment includes an empty replica list."
        )
    previous = None
    for broker in sorted(p.replicas):
        if broker != node:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"The manual partition assignment includes broker {broker}, but no such broker is registered."
            )
        if broker == previous:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"The manual partition assignment includes the broker {previous} more than once."
            )
        previous = broker
    # the one valid target is [this node]: a replication factor of 1, as now, so Kafka's
    # AllowReplicationFactorChange check (INVALID_REPLICATION_FACTOR) can never fail here
    return ErrorCode.NONE, None


def list_partition_reassignments(
    ctx: RequestContext, req: lpr.ListPartitionReassignmentsRequest
) -> lpr.ListPartitionReassignmentsResponse:
    """Nothing is ever reassigning on one broker: Kafka's listing of no reassigning partitions."""
    return lpr.ListPartitionReassignmentsResponse(error_code=ErrorCode.NONE, error_message=None, topics=())


APIS = (
    Api(key=ApiKey.ELECT_LEADERS, handler=elect_leaders, check=authz_tools.elect_leaders),
    Api(
        key=ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        handler=alter_partition_reassignments,
        check=authz_tools.alter_partition_reassignments,
    ),
    Api(
        key=ApiKey.LIST_PARTITION_REASSIGNMENTS,
        handler=list_partition_reassignments,
        check=authz_tools.list_partition_reassignments,
    ),
)
