"""ElectLeaders (API key 43), versions 0-2, flexible from v2, from Kafka's `ElectLeaders*.json`.

- v0: preferred election only (no ElectionType); the response has no top-level ErrorCode.
- v1: ElectionType (0 preferred, 1 unclean, KIP-460); the response gains ErrorCode.
- v2: first flexible version.
TopicPartitions null means every partition.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct


@struct
class ElectLeadersTopicPartitions:
    topic: str = f(STRING, "0+")
    partitions: tuple[int, ...] = f(array(INT32), "0+")


@message(43, "request", valid="0-2", flexible="2+")
class ElectLeadersRequest:
    election_type: int = f(INT8, "1+")
    topic_partitions: tuple[ElectLeadersTopicPartitions, ...] | None = f(
        array(ElectLeadersTopicPartitions), "0+", nullable="0+"
    )
    timeout_ms: int = f(INT32, "0+", default=60000)


@struct
class ElectLeadersPartitionResult:
    partition_id: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")


@struct
class ReplicaElectionResult:
    topic: str = f(STRING, "0+")
    partition_result: tuple[ElectLeadersPartitionResult, ...] = f(array(ElectLeadersPartitionResult), "0+")


@message(43, "response", valid="0-2", flexible="2+")
class ElectLeadersResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "1+")
    replica_election_results: tuple[ReplicaElectionResult, ...] = f(array(ReplicaElectionResult), "0+")
