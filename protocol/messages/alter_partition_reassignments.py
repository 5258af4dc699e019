"""AlterPartitionReassignments (API key 45), versions 0-1 (flexible), from Kafka's
`AlterPartitionReassignments*.json` (KIP-455).

- v1: AllowReplicationFactorChange in the request and (ignorable) in the response (KIP-860).
Replicas null cancels an ongoing reassignment of the partition.
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT16, INT32, STRING, array, f, message, struct


@struct
class ReassignablePartition:
    partition_index: int = f(INT32, "0+")
    replicas: tuple[int, ...] | None = f(array(INT32), "0+", nullable="0+", default=None)


@struct
class ReassignableTopic:
    name: str = f(STRING, "0+")
    partitions: tuple[ReassignablePartition, ...] = f(array(ReassignablePartition), "0+")


@message(45, "request", valid="0-1", flexible="0+")
class AlterPartitionReassignmentsRequest:
    timeout_ms: int = f(INT32, "0+", default=60000)
    allow_replication_factor_change: bool = f(BOOL, "1+", default=True)
    topics: tuple[ReassignableTopic, ...] = f(array(ReassignableTopic), "0+")


@struct
class ReassignablePartitionResponse:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")


@struct
class ReassignableTopicResponse:
    name: str = f(STRING, "0+")
    partitions: tuple[ReassignablePartitionResponse, ...] = f(array(ReassignablePartitionResponse), "0+")


@message(45, "response", valid="0-1", flexible="0+")
class AlterPartitionReassignmentsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    allow_replication_factor_change: bool = f(BOOL, "1+", default=True, ignorable=True)
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    responses: tuple[ReassignableTopicResponse, ...] = f(array(ReassignableTopicResponse), "0+")
