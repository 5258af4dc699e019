"""CreateAcls (API key 30), versions 1-3 (Kafka 4 dropped v0), flexible from v2.

Version notes: v1 ResourcePatternType (KIP-290 prefixed ACLs); v2 flexible encoding; v3 same layout.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct


@struct
class AclCreation:
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    resource_pattern_type: int = f(INT8, "1+", default=3)
    principal: str = f(STRING, "0+")
    host: str = f(STRING, "0+")
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@message(30, "request", valid="1-3", flexible="2+")
class CreateAclsRequest:
    creations: tuple[AclCreation, ...] = f(array(AclCreation), "0+")


@struct
class AclCreationResult:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")


@message(30, "response", valid="1-3", flexible="2+")
class CreateAclsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    results: tuple[AclCreationResult, ...] = f(array(AclCreationResult), "0+")
