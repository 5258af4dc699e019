"""WriteTxnMarkers (API key 27), versions 1-2 (flexible), from Kafka's `WriteTxnMarkers*.json`.

A transaction coordinator's (or `Admin.abortTransaction`'s, KIP-664) request to write COMMIT/ABORT markers.
Version 0 is gone from Kafka 4 (KIP-896). v2 adds TransactionVersion per marker (KIP-1228).
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT8, INT16, INT32, INT64, STRING, array, f, message, struct


@struct
class WritableTxnMarkerTopic:
    name: str = f(STRING, "0+")
    partition_indexes: tuple[int, ...] = f(array(INT32), "0+")


@struct
class WritableTxnMarker:
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    transaction_result: bool = f(BOOL, "0+")
    topics: tuple[WritableTxnMarkerTopic, ...] = f(array(WritableTxnMarkerTopic), "0+")
    coordinator_epoch: int = f(INT32, "0+")
    transaction_version: int = f(INT8, "2+", default=0, ignorable=True)


@message(27, "request", valid="1-2", flexible="1+")
class WriteTxnMarkersRequest:
    markers: tuple[WritableTxnMarker, ...] = f(array(WritableTxnMarker), "0+")


@struct
class WritableTxnMarkerPartitionResult:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")


@struct
class WritableTxnMarkerTopicResult:
    name: str = f(STRING, "0+")
    partitions: tuple[WritableTxnMarkerPartitionResult, ...] = f(
        array(WritableTxnMarkerPartitionResult), "0+"
    )


@struct
class WritableTxnMarkerResult:
    producer_id: int = f(INT64, "0+")
    topics: tuple[WritableTxnMarkerTopicResult, ...] = f(array(WritableTxnMarkerTopicResult), "0+")


@message(27, "response", valid="1-2", flexible="1+")
class WriteTxnMarkersResponse:
    markers: tuple[WritableTxnMarkerResult, ...] = f(array(WritableTxnMarkerResult), "0+")
