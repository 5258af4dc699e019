"""AddPartitionsToTxn (API key 24), versions 0-5; flexible from v3.

Declared from Kafka's `AddPartitionsToTxnRequest.json` / `AddPartitionsToTxnResponse.json`.

Request:
- v0-v3 (what clients send): TransactionalId, ProducerId, ProducerEpoch, Topics[Name, Partitions[]].
- v2: PRODUCER_FENCED may be answered.  v3: first flexible version.
- v4: the broker form: Transactions[TransactionalId, ProducerId, ProducerEpoch, VerifyOnly, Topics] (batched,
  KIP-890 verification).  v5: same (TRANSACTION_ABORTABLE may be answered).

Response:
- v0-v3: ThrottleTimeMs, ResultsByTopicV3AndBelow[Name, ResultsByPartition[PartitionIndex, PartitionErrorCode]].
- v4+: ThrottleTimeMs, ErrorCode, ResultsByTransaction[TransactionalId, TopicResults[...]].
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT16, INT32, INT64, STRING, array, f, message, struct


@struct
class AddPartitionsToTxnTopic:
    name: str = f(STRING, "0+")
    partitions: tuple[int, ...] = f(array(INT32), "0+")


@struct
class AddPartitionsToTxnTransaction:
    transactional_id: str = f(STRING, "4+")
    producer_id: int = f(INT64, "4+")
    producer_epoch: int = f(INT16, "4+")
    verify_only: bool = f(BOOL, "4+", default=False)
    topics: tuple[AddPartitionsToTxnTopic, ...] = f(array(AddPartitionsToTxnTopic), "4+")


@message(24, "request", valid="0-5", flexible="3+")
class AddPartitionsToTxnRequest:
    transactions: tuple[AddPartitionsToTxnTransaction, ...] = f(array(AddPartitionsToTxnTransaction), "4+")
    v3_and_below_transactional_id: str = f(STRING, "0-3")
    v3_and_below_producer_id: int = f(INT64, "0-3")
    v3_and_below_producer_epoch: int = f(INT16, "0-3")
    v3_and_below_topics: tuple[AddPartitionsToTxnTopic, ...] = f(array(AddPartitionsToTxnTopic), "0-3")


@struct
class AddPartitionsToTxnPartitionResult:
    partition_index: int = f(INT32, "0+")
    partition_error_code: int = f(INT16, "0+")


@struct
class AddPartitionsToTxnTopicResult:
    name: str = f(STRING, "0+")
    results_by_partition: tuple[AddPartitionsToTxnPartitionResult, ...] = f(
        array(AddPartitionsToTxnPartitionResult), "0+"
    )


@struct
class AddPartitionsToTxnResult:
    transactional_id: str = f(STRING, "4+")
    topic_results: tuple[AddPartitionsToTxnTopicResult, ...] = f(array(AddPartitionsToTxnTopicResult), "4+")


@message(24, "response", valid="0-5", flexible="3+")
class AddPartitionsToTxnResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "4+", ignorable=True)
    results_by_transaction: tuple[AddPartitionsToTxnResult, ...] = f(array(AddPartitionsToTxnResult), "4+")
    results_by_topic_v3_and_below: tuple[AddPartitionsToTxnTopicResult, ...] = f(
        array(AddPartitionsToTxnTopicResult), "0-3"
    )
