"""DescribeTopicPartitions (API key 75), version 0, flexible, from Kafka's `DescribeTopicPartitions*.json`
(KIP-966): Metadata's topic and partition part, paged by a partition limit and a cursor, with each
partition's eligible leader replicas (ELR) and last known ELR. `kafka-topics --describe` and the 4.x
AdminClient's `describeTopics` use it (falling back to Metadata only where it is not advertised).
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import BOOL, INT16, INT32, STRING, UUID, array, f, message, struct

ZERO_UUID = uuid.UUID(int=0)


@struct
class TopicRequest:
    name: str = f(STRING, "0+")


@struct
class Cursor:
    topic_name: str = f(STRING, "0+")
    partition_index: int = f(INT32, "0+")


@message(75, "request", valid="0", flexible="0+")
class DescribeTopicPartitionsRequest:
    topics: tuple[TopicRequest, ...] = f(array(TopicRequest), "0+")
    response_partition_limit: int = f(INT32, "0+", default=2000)
    cursor: Cursor | None = f(Cursor, "0+", nullable="0+", default=None)


@struct
class DescribeTopicPartitionsResponsePartition:
    error_code: int = f(INT16, "0+")
    partition_index: int = f(INT32, "0+")
    leader_id: int = f(INT32, "0+")
    leader_epoch: int = f(INT32, "0+", default=-1, ignorable=True)
    replica_nodes: tuple[int, ...] = f(array(INT32), "0+")
    isr_nodes: tuple[int, ...] = f(array(INT32), "0+")
    eligible_leader_replicas: tuple[int, ...] | None = f(array(INT32), "0+", nullable="0+", default=None)
    last_known_elr: tuple[int, ...] | None = f(array(INT32), "0+", nullable="0+", default=None)
    offline_replicas: tuple[int, ...] = f(array(INT32), "0+", ignorable=True)


@struct
class DescribeTopicPartitionsResponseTopic:
    error_code: int = f(INT16, "0+")
    name: str | None = f(STRING, "0+", nullable="0+")
    topic_id: uuid.UUID = f(UUID, "0+", default=ZERO_UUID, ignorable=True)
    is_internal: bool = f(BOOL, "0+", default=False, ignorable=True)
    partitions: tuple[DescribeTopicPartitionsResponsePartition, ...] = f(
        array(DescribeTopicPartitionsResponsePartition), "0+"
    )
    topic_authorized_operations: int = f(INT32, "0+", default=-2147483648)


@message(75, "response", valid="0", flexible="0+")
class DescribeTopicPartitionsResponse:
    throttle_time_ms: int = f(INT32, "0+", ignorable=True)
    topics: tuple[DescribeTopicPartitionsResponseTopic, ...] = f(
        array(DescribeTopicPartitionsResponseTopic), "0+"
    )
    next_cursor: Cursor | None = f(Cursor, "0+", nullable="0+", default=None)
