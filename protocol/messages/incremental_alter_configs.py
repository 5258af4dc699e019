"""IncrementalAlterConfigs (API key 44), versions 0-1, flexible from v1 (KIP-339).

Declared from Kafka's `IncrementalAlterConfigsRequest.json` / `IncrementalAlterConfigsResponse.json`.
Request: Resources[] {ResourceType, ResourceName, Configs[] {Name, ConfigOperation (0 SET, 1 DELETE, 2 APPEND,
3 SUBTRACT), Value (nullable)}}, ValidateOnly. Response: ThrottleTimeMs, Responses[] {ErrorCode, ErrorMessage,
ResourceType, ResourceName}. v1 only adds the flexible encoding.
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct


@struct
class IncrementalAlterableConfig:
    name: str = f(STRING, "0+")
    config_operation: int = f(INT8, "0+")
    value: str | None = f(STRING, "0+", nullable="0+")


@struct
class IncrementalAlterConfigsResource:
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    configs: tuple[IncrementalAlterableConfig, ...] = f(array(IncrementalAlterableConfig), "0+")


@message(44, "request", valid="0-1", flexible="1+")
class IncrementalAlterConfigsRequest:
    resources: tuple[IncrementalAlterConfigsResource, ...] = f(array(IncrementalAlterConfigsResource), "0+")
    validate_only: bool = f(BOOL, "0+")


@struct
class IncrementalAlterConfigsResourceResponse:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")


@message(44, "response", valid="0-1", flexible="1+")
class IncrementalAlterConfigsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    responses: tuple[IncrementalAlterConfigsResourceResponse, ...] = f(
        array(IncrementalAlterConfigsResourceResponse), "0+"
    )
