"""EndTxn (API key 26), versions 0-5; flexible from v3.

Declared from Kafka's `EndTxnRequest.json` / `EndTxnResponse.json`.

- v0-v1: TransactionalId, ProducerId, ProducerEpoch, Committed.  v2: PRODUCER_FENCED may be answered.
- v3: first flexible version.  v4: TRANSACTION_ABORTABLE may be answered.
- v5 (KIP-890 part 2, transaction.version 2): the response adds ProducerId and ProducerEpoch (default -1).
  groupcoord does not finalize transaction.version 2, so clients stay on the v1 protocol (EndTxn <= v4).
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT16, INT32, INT64, STRING, f, message


@message(26, "request", valid="0-5", flexible="3+")
class EndTxnRequest:
    transactional_id: str = f(STRING, "0+")
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    committed: bool = f(BOOL, "0+")


@message(26, "response", valid="0-5", flexible="3+")
class EndTxnResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    producer_id: int = f(INT64, "5+", default=-1, ignorable=True)
    producer_epoch: int = f(INT16, "5+", default=-1, ignorable=True)
