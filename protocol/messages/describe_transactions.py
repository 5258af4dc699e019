"""DescribeTransactions (API key 65), version 0 (flexible), from Kafka's `DescribeTransactions*.json`.

An operator's view (kafka-transactions.sh describe) of the coordinator's state per transactional id.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct


@message(65, "request", valid="0", flexible="0+")
class DescribeTransactionsRequest:
    transactional_ids: tuple[str, ...] = f(array(STRING), "0+")


@struct
class TopicData:
    topic: str = f(STRING, "0+")
    partitions: tuple[int, ...] = f(array(INT32), "0+")


@struct
class TransactionState:
    error_code: int = f(INT16, "0+")
    transactional_id: str = f(STRING, "0+")
    transaction_state: str = f(STRING, "0+")
    transaction_timeout_ms: int = f(INT32, "0+")
    transaction_start_time_ms: int = f(INT64, "0+")
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    topics: tuple[TopicData, ...] = f(array(TopicData), "0+")


@message(65, "response", valid="0", flexible="0+")
class DescribeTransactionsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    transaction_states: tuple[TransactionState, ...] = f(array(TransactionState), "0+")
