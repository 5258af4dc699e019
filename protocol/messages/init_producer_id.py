"""InitProducerId (API key 22), versions 0-5; flexible from v2.

Declared from Kafka's `InitProducerIdRequest.json` / `InitProducerIdResponse.json` (Kafka 4.4 declares v6
(KIP-939 two-phase commit) but advertises up to v5, as we do).

Request:
- v0: TransactionalId (nullable), TransactionTimeoutMs.
- v1: same as v0.
- v2: first flexible version.
- v3: adds ProducerId and ProducerEpoch (both default -1, not ignorable) so a producer can resume after
  INVALID_PRODUCER_EPOCH.
- v4: same as v3 (PRODUCER_FENCED may be returned).
- v5: same as v4 (TRANSACTION_ABORTABLE may be returned, KIP-890; groupcoord never returns it here).

Response (same fields in every version):
- v0: ThrottleTimeMs, ErrorCode, ProducerId (default -1), ProducerEpoch.
- v1: same as v0 (brokers answer before throttling).
- v2: first flexible version.
- v3: same as v2.
- v4: same as v3 (PRODUCER_FENCED may be returned).
- v5: same as v4 (TRANSACTION_ABORTABLE may be returned, KIP-890; groupcoord never returns it here).
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, f, message


@message(22, "request", valid="0-5", flexible="2+")
class InitProducerIdRequest:
    transactional_id: str | None = f(STRING, "0+", nullable="0+")
    transaction_timeout_ms: int = f(INT32, "0+")
    producer_id: int = f(INT64, "3+", default=-1)
    producer_epoch: int = f(INT16, "3+", default=-1)


@message(22, "response", valid="0-5", flexible="2+")
class InitProducerIdResponse:
    throttle_time_ms: int = f(INT32, "0+", ignorable=True)
    error_code: int = f(INT16, "0+")
    producer_id: int = f(INT64, "0+", default=-1)
    producer_epoch: int = f(INT16, "0+")
