"""AlterConfigs (API key 33), versions 0-2, flexible from v2.

Declared from Kafka's `AlterConfigsRequest.json` / `AlterConfigsResponse.json`. The layout is the same in every
version (v1: throttling behaviour, KIP-219; v2: flexible encoding).
Request: Resources[] {ResourceType, ResourceName, Configs[] {Name, Value (nullable)}}, ValidateOnly.
Response: ThrottleTimeMs, Responses[] {ErrorCode, ErrorMessage, ResourceType, ResourceName}.
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct


@struct
class AlterableConfig:
    name: str = f(STRING, "0+")
    value: str | None = f(STRING, "0+", nullable="0+")


@struct
class AlterConfigsResource:
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    configs: tuple[AlterableConfig, ...] = f(array(AlterableConfig), "0+")


@message(33, "request", valid="0-2", flexible="2+")
class AlterConfigsRequest:
    resources: tuple[AlterConfigsResource, ...] = f(array(AlterConfigsResource), "0+")
    validate_only: bool = f(BOOL, "0+")


@struct
class AlterConfigsResourceResponse:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")


@message(33, "response", valid="0-2", flexible="2+")
class AlterConfigsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    responses: tuple[AlterConfigsResourceResponse, ...] = f(array(AlterConfigsResourceResponse), "0+")
