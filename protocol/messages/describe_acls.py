"""DescribeAcls (API key 29), versions 1-3 (Kafka 4 dropped v0), flexible from v2.

Version notes: v1 PatternTypeFilter / PatternType (KIP-290); v2 flexible encoding; v3 same layout.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct


@message(29, "request", valid="1-3", flexible="2+")
class DescribeAclsRequest:
    resource_type_filter: int = f(INT8, "0+")
    resource_name_filter: str | None = f(STRING, "0+", nullable="0+")
    pattern_type_filter: int = f(INT8, "1+", default=3)
    principal_filter: str | None = f(STRING, "0+", nullable="0+")
    host_filter: str | None = f(STRING, "0+", nullable="0+")
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@struct
class AclDescription:
    principal: str = f(STRING, "0+")
    host: str = f(STRING, "0+")
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@struct
class DescribeAclsResource:
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    pattern_type: int = f(INT8, "1+", default=3)
    acls: tuple[AclDescription, ...] = f(array(AclDescription), "0+")


@message(29, "response", valid="1-3", flexible="2+")
class DescribeAclsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    resources: tuple[DescribeAclsResource, ...] = f(array(DescribeAclsResource), "0+")
