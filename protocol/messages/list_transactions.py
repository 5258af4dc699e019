"""ListTransactions (API key 66), versions 0-2 (all flexible), from Kafka's `ListTransactions*.json`.

- v0: StateFilters, ProducerIdFilters.
- v1: adds DurationFilter (default -1: transactions running longer than this many ms, KIP-994).
- v2: adds TransactionalIdPattern (nullable regular expression, KIP-1152; a bad one answers
  INVALID_REGULAR_EXPRESSION).
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct


@message(66, "request", valid="0-2", flexible="0+")
class ListTransactionsRequest:
    state_filters: tuple[str, ...] = f(array(STRING), "0+")
    producer_id_filters: tuple[int, ...] = f(array(INT64), "0+")
    duration_filter: int = f(INT64, "1+", default=-1)
    transactional_id_pattern: str | None = f(STRING, "2+", nullable="2+", default=None)


@struct
class ListedTransaction:
    transactional_id: str = f(STRING, "0+")
    producer_id: int = f(INT64, "0+")
    transaction_state: str = f(STRING, "0+")


@message(66, "response", valid="0-2", flexible="0+")
class ListTransactionsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    unknown_state_filters: tuple[str, ...] = f(array(STRING), "0+")
    transaction_states: tuple[ListedTransaction, ...] = f(array(ListedTransaction), "0+")
