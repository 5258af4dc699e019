"""DescribeConfigs (API key 32), versions 0-4, flexible from v4.

Declared from Kafka's `DescribeConfigsRequest.json` / `DescribeConfigsResponse.json` (the bundled JSON starts at
v1; v0 is the same layout without IncludeSynonyms, with IsDefault instead of ConfigSource and no synonyms).

Request: v0 Resources[] {ResourceType, ResourceName, ConfigurationKeys (nullable: all)}; v1 IncludeSynonyms;
v2 same; v3 IncludeDocumentation; v4 flexible.
Response: v0 ThrottleTimeMs, Results[] {ErrorCode, ErrorMessage, ResourceType, ResourceName, Configs[] {Name,
Value, ReadOnly, IsDefault (v0 only), IsSensitive}}; v1 ConfigSource and Synonyms[] {Name, Value, Source};
v2 same; v3 ConfigType and Documentation; v4 flexible.
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct


@struct
class DescribeConfigsResource:
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    configuration_keys: tuple[str, ...] | None = f(array(STRING), "0+", nullable="0+")


@message(32, "request", valid="0-4", flexible="4+")
class DescribeConfigsRequest:
    resources: tuple[DescribeConfigsResource, ...] = f(array(DescribeConfigsResource), "0+")
    include_synonyms: bool = f(BOOL, "1+", default=False, ignorable=False)
    include_documentation: bool = f(BOOL, "3+", default=False, ignorable=False)


@struct
class DescribeConfigsSynonym:
    name: str = f(STRING, "1+")
    value: str | None = f(STRING, "1+", nullable="0+")
    source: int = f(INT8, "1+")


@struct
class DescribeConfigsResourceResult:
    name: str = f(STRING, "0+")
    value: str | None = f(STRING, "0+", nullable="0+")
    read_only: bool = f(BOOL, "0+")
    config_source: int = f(INT8, "1+", default=-1, ignorable=True)
    is_default: bool = f(BOOL, "0")
    is_sensitive: bool = f(BOOL, "0+")
    synonyms: tuple[DescribeConfigsSynonym, ...] = f(array(DescribeConfigsSynonym), "1+", ignorable=True)
    config_type: int = f(INT8, "3+", default=0, ignorable=True)
    documentation: str | None = f(STRING, "3+", nullable="0+", ignorable=True)


@struct
class DescribeConfigsResult:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    configs: tuple[DescribeConfigsResourceResult, ...] = f(array(DescribeConfigsResourceResult), "0+")


@message(32, "response", valid="0-4", flexible="4+")
class DescribeConfigsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    results: tuple[DescribeConfigsResult, ...] = f(array(DescribeConfigsResult), "0+")
