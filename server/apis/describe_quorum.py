"""DescribeQuorum (55): the KRaft metadata quorum, as `kafka-metadata-quorum describe` asks for it.

groupcoord has no metadata quorum (no `__cluster_metadata` log, no controllers: a node's own state store, or
PostgreSQL in cluster mode, holds what the quorum holds in Kafka), so it answers as Kafka's
`KafkaRaftClient.handleDescribeQuorumRequest` would for a quorum of the nodes there are:

- single node: this node is the one voter and the leader, as a combined broker+controller Kafka node is;
- cluster mode: every live node is a voter (each holds the cluster's state, as a combined Kafka node does)
  and the lowest live node id is the leader, so every node answers alike; no observers.

Leader epoch 1 (the first election), high watermark and every log end offset 0 (there is no metadata log),
LastFetchTimestamp and LastCaughtUpTimestamp now for every voter (a live node's lease is current), each
voter's directory id a stable uuid from the cluster id and its node id, and (v2) each voter's listeners as
the nodes advertise them (Kafka shows its CONTROLLER listener; groupcoord has none). All of it is in
docs/differences.md.

Version notes (protocol/messages/describe_quorum.py): v1 adds the two timestamps, v2 the error messages,
directory ids and Nodes. A request that does not name exactly `__cluster_metadata` partition 0 gets
UNKNOWN_TOPIC_OR_PARTITION on each asked partition, as Kafka answers. The ACL check (DESCRIBE on CLUSTER,
else a top-level CLUSTER_AUTHORIZATION_FAILED) is in `authz_tools`.

Uses of the server (`ctx.services`): `config` (node id, cluster id), `routing` (the live nodes in cluster
mode), and the listener the request came in on.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.describe_quorum import (
    ZERO_UUID,
    DescribeQuorumListener,
    DescribeQuorumNode,
    DescribeQuorumPartition,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    DescribeQuorumTopic,
    ReplicaState,
)
from groupcoord.server.apis import authz_tools
from groupcoord.server.apis.declaration import Api

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
_DIRECTORY_NS = uuid.UUID("5b0f3a52-6d2c-4c1e-9a43-0d6c2f1d7e11")


def directory_id(cluster_id: str, node_id: int) -> uuid.UUID:
    """A voter's stable stand-in for Kafka's log directory id."""
    return uuid.uuid5(_DIRECTORY_NS, f"{cluster_id}/{node_id}")


def _valid(req: DescribeQuorumRequest) -> bool:
    """`RaftUtil.hasValidTopicPartition`: exactly `__cluster_metadata` partition 0."""
    return (
        len(req.topics) == 1
        and req.topics[0].topic_name == METADATA_TOPIC
        and len(req.topics[0].partitions) == 1
        and req.topics[0].partitions[0].partition_index == 0
    )


def _unknown(ctx: RequestContext, req: DescribeQuorumRequest) -> DescribeQuorumResponse:
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    message = "This server does not host this topic-partition." if ctx.version >= 2 else ""
    return DescribeQuorumResponse(
        error_code=ErrorCode.NONE,
        topics=tuple(
            DescribeQuorumTopic(
                topic_name=t.topic_name,
                partitions=tuple(
                    DescribeQuorumPartition(
                        partition_index=p.partition_index, error_code=code, error_message=message
                    )
                    for p in t.partitions
                ),
            )
            for t in req.topics
        ),
    )


def _voters(ctx: RequestContext) -> list[tuple[int, tuple[tuple[str, str, int], ...]]]:
    """(node id, listeners) of every voter, by node id."""
    me = ctx.services.config.node_id
    own = ((ctx.listener.name, ctx.listener.advertised_host, ctx.listener.advertised_port),)
    routing = ctx.services.routing
    if routing is None:
        return [(me, own)]
    voters = {me: own}
    for n in routing.live_nodes():
        if n.node_id != me:
            host, port = n.address(ctx.listener.name)
            voters[n.node_id] = ((ctx.listener.name, host, port),)
    return sorted(voters.items())


def describe_quorum(ctx: RequestContext, req: DescribeQuorumRequest) -> DescribeQuorumResponse:
    if not _valid(req):
        return _unknown(ctx, req)
    cluster_id = ctx.services.config.cluster_id
    now = int(time.time() * 1000)
    voters = _voters(ctx)
    states = tuple(
        ReplicaState(
            replica_id=node_id,
            replica_directory_id=directory_id(cluster_id, node_id) if ctx.version >= 2 else ZERO_UUID,
            log_end_offset=0,
            last_fetch_timestamp=now,
            last_caught_up_timestamp=now,
        )
        for node_id, _ in voters
    )
    partition = DescribeQuorumPartition(
        partition_index=0,
        error_code=ErrorCode.NONE,
        leader_id=voters[0][0],
        leader_epoch=LEADER_EPOCH,
        high_watermark=0,
        current_voters=states,
        observers=(),
    )
    nodes = tuple(
        DescribeQuorumNode(
            node_id=node_id,
            listeners=tuple(DescribeQuorumListener(name=n, host=h, port=p) for n, h, p in listeners),
        )
        for node_id, listeners in voters
    )
    return DescribeQuorumResponse(
        error_code=ErrorCode.NONE,
        topics=(DescribeQuorumTopic(topic_name=METADATA_TOPIC, partitions=(partition,)),),
        nodes=nodes if ctx.version >= 2 else (),
    )


APIS = (Api(key=ApiKey.DESCRIBE_QUORUM, handler=describe_quorum, check=authz_tools.describe_quorum),)
