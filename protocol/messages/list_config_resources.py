"""ListConfigResources (API key 74), versions 0-1, flexible in every version, from Kafka's
`ListConfigResources*.json`.

- v0: was ListClientMetricsResources (KIP-714): lists the client metrics subscriptions only.
- v1: the request gains ResourceTypes (KIP-1142; empty: every type the broker supports) and each listed
  resource its ResourceType (default 16, CLIENT_METRICS).
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct


@message(74, "request", valid="0-1", flexible="0+")
class ListConfigResourcesRequest:
    resource_types: tuple[int, ...] = f(array(INT8), "1+")


@struct
class ListConfigResourcesResource:
    resource_name: str = f(STRING, "0+")
    resource_type: int = f(INT8, "1+", default=16, ignorable=True)


@message(74, "response", valid="0-1", flexible="0+")
class ListConfigResourcesResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    config_resources: tuple[ListConfigResourcesResource, ...] = f(array(ListConfigResourcesResource), "0+")
