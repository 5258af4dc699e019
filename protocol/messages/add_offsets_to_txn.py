"""AddOffsetsToTxn (API key 25), versions 0-4; flexible from v3.

Declared from Kafka's `AddOffsetsToTxnRequest.json` / `AddOffsetsToTxnResponse.json`. Every version has the
same fields: v2 may answer PRODUCER_FENCED, v3 is the first flexible version, v4 may answer
TRANSACTION_ABORTABLE (KIP-890).
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, f, message


@message(25, "request", valid="0-4", flexible="3+")
class AddOffsetsToTxnRequest:
    transactional_id: str = f(STRING, "0+")
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    group_id: str = f(STRING, "0+")


@message(25, "response", valid="0-4", flexible="3+")
class AddOffsetsToTxnResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
