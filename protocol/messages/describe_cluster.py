"""DescribeCluster (API key 60), versions 0-2, flexible in every version (KIP-700).

Declared from Kafka's `DescribeClusterRequest.json` / `DescribeClusterResponse.json`.
Request: v0 IncludeClusterAuthorizedOperations; v1 EndpointType (1 brokers, 2 controllers, KIP-919).
Response: v0 ThrottleTimeMs, ErrorCode, ErrorMessage, ClusterId, ControllerId, Brokers[] {BrokerId, Host, Port,
Rack}, ClusterAuthorizedOperations; v1 EndpointType; v2 (KIP-1073) the request's IncludeFencedBrokers and
Brokers.IsFenced (groupcoord has no fenced brokers: a node that stops heartbeating leaves the list).
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct


@message(60, "request", valid="0-2", flexible="0+")
class DescribeClusterRequest:
    include_cluster_authorized_operations: bool = f(BOOL, "0+")
    endpoint_type: int = f(INT8, "1+", default=1)
    include_fenced_brokers: bool = f(BOOL, "2+", default=False)


@struct
class DescribeClusterBroker:
    broker_id: int = f(INT32, "0+")
    host: str = f(STRING, "0+")
    port: int = f(INT32, "0+")
    rack: str | None = f(STRING, "0+", nullable="0+", default=None)
    is_fenced: bool = f(BOOL, "2+", default=False)


@message(60, "response", valid="0-2", flexible="0+")
class DescribeClusterResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    endpoint_type: int = f(INT8, "1+", default=1)
    cluster_id: str = f(STRING, "0+")
    controller_id: int = f(INT32, "0+", default=-1)
    brokers: tuple[DescribeClusterBroker, ...] = f(array(DescribeClusterBroker), "0+")
    cluster_authorized_operations: int = f(INT32, "0+", default=-2147483648)
