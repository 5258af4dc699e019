"""ListOffsets (API key 2), versions 1-7; flexible from v6.

Declared from Kafka's `ListOffsetsRequest.json` / `ListOffsetsResponse.json`. Kafka has v0-v10; we declare
v1 (the first version returning a single offset and its timestamp) up to v7. Fields that only exist in v0
(request MaxNumOffsets, response OldStyleOffsets) or v10+ (request TimeoutMs) are therefore not declared.

Request:
- v1: ReplicaId, Topics[] {Name, Partitions[] {PartitionIndex, Timestamp}} (v0's MaxNumOffsets removed).
- v2: adds IsolationLevel.
- v3: same as v2.
- v4: adds Partitions.CurrentLeaderEpoch (fencing).
- v5: same as v4.
- v6: first flexible version.
- v7: same layout; Timestamp -3 lists by max timestamp (KIP-734).

Response:
- v1: Topics[] {Name, Partitions[] {PartitionIndex, ErrorCode, Timestamp, Offset}}.
- v2: adds ThrottleTimeMs (first field).
- v3: same as v2 (brokers answer before throttling).
- v4: adds Partitions.LeaderEpoch.
- v5: same as v4 (OFFSET_NOT_AVAILABLE may be returned).
- v6: first flexible version.
- v7: same as v6.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT8, INT16, INT32, INT64, STRING, array, f, message, struct


@struct
class ListOffsetsPartition:
    partition_index: int = f(INT32, "0+")
    current_leader_epoch: int = f(INT32, "4+", default=-1, ignorable=True)
    timestamp: int = f(INT64, "0+")


@struct
class ListOffsetsTopic:
    name: str = f(STRING, "0+")
    partitions: tuple[ListOffsetsPartition, ...] = f(array(ListOffsetsPartition), "0+")


@message(2, "request", valid="1-7", flexible="6+")
class ListOffsetsRequest:
    replica_id: int = f(INT32, "0+")
    isolation_level: int = f(INT8, "2+")
    topics: tuple[ListOffsetsTopic, ...] = f(array(ListOffsetsTopic), "0+")


@struct
class ListOffsetsPartitionResponse:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    timestamp: int = f(INT64, "1+", default=-1, ignorable=False)
    offset: int = f(INT64, "1+", default=-1, ignorable=False)
    leader_epoch: int = f(INT32, "4+", default=-1)


@struct
class ListOffsetsTopicResponse:
    name: str = f(STRING, "0+")
    partitions: tuple[ListOffsetsPartitionResponse, ...] = f(array(ListOffsetsPartitionResponse), "0+")


@message(2, "response", valid="1-7", flexible="6+")
class ListOffsetsResponse:
    throttle_time_ms: int = f(INT32, "2+", ignorable=True)
    topics: tuple[ListOffsetsTopicResponse, ...] = f(array(ListOffsetsTopicResponse), "0+")
