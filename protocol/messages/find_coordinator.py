"""FindCoordinator (API key 10), versions 0-6; flexible from v3.

Declared from Kafka's `FindCoordinatorRequest.json` / `FindCoordinatorResponse.json`.

Request:
- v0: Key.
- v1: adds KeyType (int8, default 0 = group; 1 = transaction; not ignorable).
- v2: same as v1.
- v3: first flexible version.
- v4: replaces Key with CoordinatorKeys[] (batching, KIP-699).
- v5: same as v4 (TRANSACTION_ABORTABLE may be returned, KIP-890).
- v6: same as v5 (share groups, KIP-932).

Response:
- v0: ErrorCode, NodeId, Host, Port.
- v1: adds ThrottleTimeMs (first) and ErrorMessage (nullable, after ErrorCode).
- v2: same as v1 (brokers answer before throttling).
- v3: first flexible version.
- v4: replaces the single result with Coordinators[] {Key, NodeId, Host, Port, ErrorCode, ErrorMessage}.
- v5-v6: same as v4.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct


@message(10, "request", valid="0-6", flexible="3+")
class FindCoordinatorRequest:
    key: str = f(STRING, "0-3")
    key_type: int = f(INT8, "1+", default=0, ignorable=False)
    coordinator_keys: tuple[str, ...] = f(array(STRING), "4+")


@struct
class Coordinator:
    key: str = f(STRING, "4+")
    node_id: int = f(INT32, "4+")
    host: str = f(STRING, "4+")
    port: int = f(INT32, "4+")
    error_code: int = f(INT16, "4+")
    error_message: str | None = f(STRING, "4+", nullable="4+", ignorable=True)


@message(10, "response", valid="0-6", flexible="3+")
class FindCoordinatorResponse:
    throttle_time_ms: int = f(INT32, "1+", ignorable=True)
    error_code: int = f(INT16, "0-3")
    error_message: str | None = f(STRING, "1-3", nullable="1-3", ignorable=True)
    node_id: int = f(INT32, "0-3")
    host: str = f(STRING, "0-3")
    port: int = f(INT32, "0-3")
    coordinators: tuple[Coordinator, ...] = f(array(Coordinator), "4+")
