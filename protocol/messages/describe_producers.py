"""DescribeProducers (API key 61), version 0 (flexible), from Kafka's `DescribeProducers*.json` (KIP-664).

The active producers of each asked partition, from the partition log's producer state: what
`kafka-transactions.sh describe-producers` and `find-hanging` read.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct


@struct
class DescribeProducersTopicRequest:
    name: str = f(STRING, "0+")
    partition_indexes: tuple[int, ...] = f(array(INT32), "0+")


@message(61, "request", valid="0", flexible="0+")
class DescribeProducersRequest:
    topics: tuple[DescribeProducersTopicRequest, ...] = f(array(DescribeProducersTopicRequest), "0+")


@struct
class ProducerState:
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT32, "0+")
    last_sequence: int = f(INT32, "0+", default=-1)
    last_timestamp: int = f(INT64, "0+", default=-1)
    coordinator_epoch: int = f(INT32, "0+")
    current_txn_start_offset: int = f(INT64, "0+", default=-1)


@struct
class DescribeProducersPartitionResponse:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    active_producers: tuple[ProducerState, ...] = f(array(ProducerState), "0+")


@struct
class DescribeProducersTopicResponse:
    name: str = f(STRING, "0+")
    partitions: tuple[DescribeProducersPartitionResponse, ...] = f(
        array(DescribeProducersPartitionResponse), "0+"
    )


@message(61, "response", valid="0", flexible="0+")
class DescribeProducersResponse:
    throttle_time_ms: int = f(INT32, "0+")
    topics: tuple[DescribeProducersTopicResponse, ...] = f(array(DescribeProducersTopicResponse), "0+")
