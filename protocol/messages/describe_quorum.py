"""DescribeQuorum (API key 55), versions 0-2, flexible in every version, from Kafka's `DescribeQuorum*.json`.

- v0: the quorum's leader, epoch, high watermark and its voters' and observers' log end offsets.
- v1: each replica gains LastFetchTimestamp and LastCaughtUpTimestamp (KIP-836); the request is unchanged.
- v2: the response gains a top-level and a per-partition ErrorMessage, each replica its ReplicaDirectoryId,
  and the voters' Nodes with their listeners (KIP-853); the request is unchanged.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, UINT16, UUID, array, f, message, struct

ZERO_UUID = uuid.UUID(int=0)


@struct
class DescribeQuorumRequestPartition:
    partition_index: int = f(INT32, "0+")


@struct
class DescribeQuorumRequestTopic:
    topic_name: str = f(STRING, "0+")
    partitions: tuple[DescribeQuorumRequestPartition, ...] = f(array(DescribeQuorumRequestPartition), "0+")


@message(55, "request", valid="0-2", flexible="0+")
class DescribeQuorumRequest:
    topics: tuple[DescribeQuorumRequestTopic, ...] = f(array(DescribeQuorumRequestTopic), "0+")


@struct
class ReplicaState:
    replica_id: int = f(INT32, "0+")
    replica_directory_id: uuid.UUID = f(UUID, "2+", default=ZERO_UUID)
    log_end_offset: int = f(INT64, "0+")
    last_fetch_timestamp: int = f(INT64, "1+", default=-1, ignorable=True)
    last_caught_up_timestamp: int = f(INT64, "1+", default=-1, ignorable=True)


@struct
class DescribeQuorumPartition:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "2+", nullable="2+", default="", ignorable=True)
    leader_id: int = f(INT32, "0+")
    leader_epoch: int = f(INT32, "0+")
    high_watermark: int = f(INT64, "0+")
    current_voters: tuple[ReplicaState, ...] = f(array(ReplicaState), "0+")
    observers: tuple[ReplicaState, ...] = f(array(ReplicaState), "0+")


@struct
class DescribeQuorumTopic:
    topic_name: str = f(STRING, "0+")
    partitions: tuple[DescribeQuorumPartition, ...] = f(array(DescribeQuorumPartition), "0+")


@struct
class DescribeQuorumListener:
    name: str = f(STRING, "2+")
    host: str = f(STRING, "2+")
    port: int = f(UINT16, "2+")


@struct
class DescribeQuorumNode:
    node_id: int = f(INT32, "2+")
    listeners: tuple[DescribeQuorumListener, ...] = f(array(DescribeQuorumListener), "2+")


@message(55, "response", valid="0-2", flexible="0+")
class DescribeQuorumResponse:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "2+", nullable="2+", default="", ignorable=True)
    topics: tuple[DescribeQuorumTopic, ...] = f(array(DescribeQuorumTopic), "0+")
    nodes: tuple[DescribeQuorumNode, ...] = f(array(DescribeQuorumNode), "2+")
