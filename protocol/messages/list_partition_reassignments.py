"""ListPartitionReassignments (API key 46), version 0 (flexible), from Kafka's
`ListPartitionReassignments*.json` (KIP-455). Topics null lists every reassigning partition.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, STRING, array, f, message, struct


@struct
class ListPartitionReassignmentsTopics:
    name: str = f(STRING, "0+")
    partition_indexes: tuple[int, ...] = f(array(INT32), "0+")


@message(46, "request", valid="0", flexible="0+")
class ListPartitionReassignmentsRequest:
    timeout_ms: int = f(INT32, "0+", default=60000)
    topics: tuple[ListPartitionReassignmentsTopics, ...] | None = f(
        array(ListPartitionReassignmentsTopics), "0+", nullable="0+", default=None
    )


@struct
class OngoingPartitionReassignment:
    partition_index: int = f(INT32, "0+")
    replicas: tuple[int, ...] = f(array(INT32), "0+")
    adding_replicas: tuple[int, ...] = f(array(INT32), "0+")
    removing_replicas: tuple[int, ...] = f(array(INT32), "0+")


@struct
class OngoingTopicReassignment:
    name: str = f(STRING, "0+")
    partitions: tuple[OngoingPartitionReassignment, ...] = f(array(OngoingPartitionReassignment), "0+")


@message(46, "response", valid="0", flexible="0+")
class ListPartitionReassignmentsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    topics: tuple[OngoingTopicReassignment, ...] = f(array(OngoingTopicReassignment), "0+")
