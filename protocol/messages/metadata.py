"""Metadata (API key 3), versions 0-13; flexible from v9.

Declared from Kafka's `MetadataRequest.json` / `MetadataResponse.json`.

Request:
- v0: Topics[] {Name}; an empty array means "all topics".
- v1: Topics becomes nullable: null means "all topics", empty means "no topics".
- v2-v3: same as v1.
- v4: adds AllowAutoTopicCreation (default true, not ignorable).
- v5-v7: same as v4.
- v8: adds IncludeClusterAuthorizedOperations and IncludeTopicAuthorizedOperations.
- v9: first flexible version.
- v10: Topics gains TopicId; Name becomes nullable (not implemented by brokers before v12).
- v11: drops IncludeClusterAuthorizedOperations (moved to DescribeCluster, KIP-700).
- v12: topic ids supported.
- v13: same as v12 (the response gains a top-level ErrorCode, KIP-1102).

Response:
- v0: Brokers[] {NodeId, Host, Port}, Topics[] {ErrorCode, Name, Partitions[] {ErrorCode, PartitionIndex,
  LeaderId, ReplicaNodes[], IsrNodes[]}}.
- v1: adds Brokers.Rack, ControllerId and Topics.IsInternal.
- v2: adds ClusterId.
- v3: adds ThrottleTimeMs (first field).
- v4: same as v3.
- v5: adds Partitions.OfflineReplicas.
- v6: same as v5 (brokers answer before throttling).
- v7: adds Partitions.LeaderEpoch.
- v8: adds Topics.TopicAuthorizedOperations and ClusterAuthorizedOperations.
- v9: first flexible version.
- v10: adds Topics.TopicId.
- v11: drops ClusterAuthorizedOperations.
- v12: Topics.Name becomes nullable (for topics queried by id).
- v13: adds the top-level ErrorCode (last field; Kafka 4.4 always answers 0 there, as we do).
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import BOOL, INT16, INT32, STRING, UUID, array, f, message, struct

ZERO_UUID = uuid.UUID(int=0)


@struct
class MetadataRequestTopic:
    topic_id: uuid.UUID = f(UUID, "10+", ignorable=True)
    name: str | None = f(STRING, "0+", nullable="10+")


@message(3, "request", valid="0-13", flexible="9+")
class MetadataRequest:
    topics: tuple[MetadataRequestTopic, ...] | None = f(array(MetadataRequestTopic), "0+", nullable="1+")
    allow_auto_topic_creation: bool = f(BOOL, "4+", default=True, ignorable=False)
    include_cluster_authorized_operations: bool = f(BOOL, "8-10")
    include_topic_authorized_operations: bool = f(BOOL, "8+")


@struct
class MetadataResponseBroker:
    node_id: int = f(INT32, "0+")
    host: str = f(STRING, "0+")
    port: int = f(INT32, "0+")
    rack: str | None = f(STRING, "1+", nullable="1+", default=None, ignorable=True)


@struct
class MetadataResponsePartition:
    error_code: int = f(INT16, "0+")
    partition_index: int = f(INT32, "0+")
    leader_id: int = f(INT32, "0+")
    leader_epoch: int = f(INT32, "7+", default=-1, ignorable=True)
    replica_nodes: tuple[int, ...] = f(array(INT32), "0+")
    isr_nodes: tuple[int, ...] = f(array(INT32), "0+")
    offline_replicas: tuple[int, ...] = f(array(INT32), "5+", ignorable=True)


@struct
class MetadataResponseTopic:
    error_code: int = f(INT16, "0+")
    name: str | None = f(STRING, "0+", nullable="12+")
    topic_id: uuid.UUID = f(UUID, "10+", ignorable=True)
    is_internal: bool = f(BOOL, "1+", default=False, ignorable=True)
    partitions: tuple[MetadataResponsePartition, ...] = f(array(MetadataResponsePartition), "0+")
    topic_authorized_operations: int = f(INT32, "8+", default=-2147483648)


@message(3, "response", valid="0-13", flexible="9+")
class MetadataResponse:
    throttle_time_ms: int = f(INT32, "3+", ignorable=True)
    brokers: tuple[MetadataResponseBroker, ...] = f(array(MetadataResponseBroker), "0+")
    cluster_id: str | None = f(STRING, "2+", nullable="2+", default=None, ignorable=True)
    controller_id: int = f(INT32, "1+", default=-1, ignorable=True)
    topics: tuple[MetadataResponseTopic, ...] = f(array(MetadataResponseTopic), "0+")
    cluster_authorized_operations: int = f(INT32, "8-10", default=-2147483648)
    error_code: int = f(INT16, "13+", default=0, ignorable=True)
