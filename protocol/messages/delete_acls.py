"""DeleteAcls (API key 31), versions 1-3 (Kafka 4 dropped v0), flexible from v2.

Version notes: v1 PatternTypeFilter / PatternType (KIP-290); v2 flexible encoding; v3 same layout.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct


@struct
class DeleteAclsFilter:
    resource_type_filter: int = f(INT8, "0+")
    resource_name_filter: str | None = f(STRING, "0+", nullable="0+")
    pattern_type_filter: int = f(INT8, "1+", default=3)
    principal_filter: str | None = f(STRING, "0+", nullable="0+")
    host_filter: str | None = f(STRING, "0+", nullable="0+")
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@message(31, "request", valid="1-3", flexible="2+")
class DeleteAclsRequest:
    filters: tuple[DeleteAclsFilter, ...] = f(array(DeleteAclsFilter), "0+")


@struct
class DeleteAclsMatchingAcl:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    pattern_type: int = f(INT8, "1+", default=3)
    principal: str = f(STRING, "0+")
    host: str = f(STRING, "0+")
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@struct
class DeleteAclsFilterResult:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    matching_acls: tuple[DeleteAclsMatchingAcl, ...] = f(array(DeleteAclsMatchingAcl), "0+")


@message(31, "response", valid="1-3", flexible="2+")
class DeleteAclsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    filter_results: tuple[DeleteAclsFilterResult, ...] = f(array(DeleteAclsFilterResult), "0+")
