"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44): Kafka's `ConfigHelper` and
`ConfigAdminManager` for TOPIC and BROKER resources.

Version notes: DescribeConfigs v0 reports IsDefault instead of ConfigSource and has no synonyms; v1 adds
IncludeSynonyms and ConfigSource; v3 IncludeDocumentation and ConfigType; v4 and AlterConfigs v2 /
IncrementalAlterConfigs v1 are the flexible encodings. A BROKER resource is this node's id (its effective
configs) or "" (the cluster-wide dynamic defaults). GROUP resources (group configs) are in group_configs.py,
CLIENT_METRICS resources (KIP-714 subscriptions) in client_metrics_configs.py.
Other resource types get INVALID_REQUEST (docs/differences.md).

Uses of the server (`ctx.services`): `ctx.services.configs` (the ConfigManager), `ctx.services.topics` (name -> TopicInfo).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.alter_configs import (
    AlterConfigsRequest,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
)
from groupcoord.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from groupcoord.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)
from groupcoord.server.apis import authz_admin
from groupcoord.server.apis.client_metrics_configs import alter_client_metrics, describe_client_metrics
from groupcoord.server.apis.declaration import Api
from groupcoord.server.apis.group_configs import alter_group, describe_group
from groupcoord.server.configs.broker_defs import BROKER_CONFIGS
from groupcoord.server.configs.client_metrics_defs import CLIENT_METRICS_CONFIGS
from groupcoord.server.configs.group_defs import GROUP_CONFIGS
from groupcoord.server.configs.manager import (
    INTERNAL_TOPIC_CONFIGS,
    ConfigManager,
    Refusal,
    check_broker_configs,
    check_topic_configs,
    entries_for,
    incremental,
)
from groupcoord.server.configs.resolve import (
    ConfigEntry,
    broker_entries,
    cluster_default_entries,
    topic_entries,
)
from groupcoord.server.configs.topic_defs import TOPIC_CONFIGS
from groupcoord.server.configs.types import ConfigSource, ResourceType

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

OK: Refusal = (ErrorCode.NONE, "")


def _unsupported(resource_type: int) -> Refusal:
    try:
        kind = ResourceType(resource_type).name
    except ValueError:
        kind = str(resource_type)
    return ErrorCode.INVALID_REQUEST, f"groupcoord does not support {kind} config resources"


def _topic_refusal(topics: Any, name: str) -> Refusal | None:
    if not topics.valid_name(name):
        return ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: '{name}'"
    if topics.get(name) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
    return None


def topic_overrides(ctx: RequestContext, name: str) -> dict[str, str]:
    """A topic's own settings; `__consumer_offsets` starts from what Kafka sets on it."""
    topics, configs = ctx.services.topics, ctx.services.configs
    info = topics.get(name)
    assert info is not None
    base = dict(INTERNAL_TOPIC_CONFIGS) if topics.is_internal(name) else {}
    base.update(configs.topic_overrides(name, str(info.topic_id)))
    return base


# ------------------------------------------------------------------------------------------ DescribeConfigs


def describe_configs(ctx: RequestContext, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for r in req.resources:
        entries: list[ConfigEntry] = []
        refusal: Refusal | None
        if r.resource_type == ResourceType.TOPIC:
            refusal = _topic_refusal(ctx.services.topics, r.resource_name)
            if refusal is None:
                entries = topic_entries(topic_overrides(ctx, r.resource_name), ctx.services.configs.layers)
        elif r.resource_type == ResourceType.BROKER:
            cm: ConfigManager = ctx.services.configs
            refusal = cm.broker_name_refusal(r.resource_name)
            if refusal is None:
                layers = cm.layers
                entries = cluster_default_entries(layers) if r.resource_name == "" else broker_entries(layers)
        elif r.resource_type == ResourceType.GROUP:
            refusal, entries = describe_group(ctx, r.resource_name)
        elif r.resource_type == ResourceType.CLIENT_METRICS:
            refusal, entries = describe_client_metrics(ctx, r.resource_name)
        else:
            refusal = _unsupported(r.resource_type)
        if refusal is not None:
            results.append(
                DescribeConfigsResult(
                    error_code=refusal[0],
                    error_message=refusal[1],
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
            )
            continue
        shown = entries_for(entries, r.configuration_keys)
        results.append(
            DescribeConfigsResult(
                error_code=ErrorCode.NONE,
                error_message=None,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                configs=tuple(_entry(ctx.version, req, e) for e in shown),
            )
        )
    return DescribeConfigsResponse(results=tuple(results))


def _entry(version: int, req: DescribeConfigsRequest, e: ConfigEntry) -> DescribeConfigsResourceResult:
    synonyms = ()
    if version >= 1 and req.include_synonyms:
        synonyms = tuple(
            DescribeConfigsSynonym(name=s.name, value=s.value, source=s.source) for s in e.synonyms
        )
    return DescribeConfigsResourceResult(
        name=e.name,
        value=e.value,
        read_only=e.read_only,
        config_source=int(e.source),
        is_default=version == 0 and e.source == ConfigSource.DEFAULT_CONFIG,
        is_sensitive=e.sensitive,
        synonyms=synonyms,
        config_type=int(e.type),
        documentation=e.doc if version >= 3 and req.include_documentation else None,
    )


# ------------------------------------------------------------------------------ AlterConfigs (both kinds)


def alter_configs(ctx: RequestContext, req: AlterConfigsRequest) -> Any:
    """The legacy API: each resource's given configs replace all of its settings."""
    changes = [
        (r.resource_type, r.resource_name, lambda current, r=r: _replace_all(r.configs))
        for r in req.resources
    ]
    return asyncio.ensure_future(_alter(ctx, changes, req.validate_only, incremental_api=False))


def _replace_all(configs: Any) -> dict[str, str] | Refusal:
    out: dict[str, str] = {}
    for c in configs:
        if c.value is None:
            return ErrorCode.INVALID_REQUEST, f"Null value not supported for : {c.name}"
        out[c.name] = c.value
    return out


def incremental_alter_configs(ctx: RequestContext, req: IncrementalAlterConfigsRequest) -> Any:
    changes = []
    for r in req.resources:
        defs = {
            ResourceType.TOPIC: TOPIC_CONFIGS,
            ResourceType.GROUP: GROUP_CONFIGS,
            ResourceType.CLIENT_METRICS: CLIENT_METRICS_CONFIGS,
        }.get(r.resource_type, BROKER_CONFIGS)
        ops = [(c.name, c.config_operation, c.value) for c in r.configs]
        changes.append(
            (
                r.resource_type,
                r.resource_name,
                lambda current, defs=defs, ops=ops: incremental(current, defs, ops),
            )
        )
    return asyncio.ensure_future(_alter(ctx, changes, req.validate_only, incremental_api=True))


async def _alter(ctx: RequestContext, changes: list, validate_only: bool, *, incremental_api: bool) -> Any:  # type: ignore[type-arg]
    results: list[tuple[int, str, Refusal]] = []
    seen = [(t, n) for t, n, _ in changes]
    for resource_type, name, change in changes:
        if seen.count((resource_type, name)) > 1:
            outcome: Refusal = (ErrorCode.INVALID_REQUEST, "Duplicate resource in the request")
        elif resource_type == ResourceType.TOPIC:
            outcome = await _alter_topic(ctx, name, change, validate_only)
        elif resource_type == ResourceType.BROKER:
            outcome = await _alter_broker(ctx, name, change, validate_only)
        elif resource_type == ResourceType.GROUP:
            outcome = await alter_group(ctx, name, change, validate_only)
        elif resource_type == ResourceType.CLIENT_METRICS:
            outcome = await alter_client_metrics(ctx, name, change, validate_only)
        else:
            outcome = _unsupported(resource_type)
        results.append((resource_type, name, outcome))
    if incremental_api:
        return IncrementalAlterConfigsResponse(
            responses=tuple(
                IncrementalAlterConfigsResourceResponse(
                    error_code=o[0], error_message=o[1] or None, resource_type=t, resource_name=n
                )
                for t, n, o in results
            )
        )
    return AlterConfigsResponse(
        responses=tuple(
            AlterConfigsResourceResponse(
                error_code=o[0], error_message=o[1] or None, resource_type=t, resource_name=n
            )
            for t, n, o in results
        )
    )


async def _alter_topic(ctx: RequestContext, name: str, change: Any, validate_only: bool) -> Refusal:
    topics, configs = ctx.services.topics, ctx.services.configs
    refusal = _topic_refusal(topics, name)
    if refusal is not None:
        return refusal
    info = topics.get(name)
    current = configs.topic_overrides(name, str(info.topic_id))
    wanted = change(current)
    if isinstance(wanted, tuple):
        return wanted
    refusal = check_topic_configs(wanted)
    if refusal is not None:
        return refusal
    if not validate_only:
        return await _write(configs.set_topic(name, str(info.topic_id), wanted))
    return OK


async def _alter_broker(ctx: RequestContext, name: str, change: Any, validate_only: bool) -> Refusal:
    configs: ConfigManager = ctx.services.configs
    refusal = configs.broker_name_refusal(name)
    if refusal is not None:
        return refusal
    scope_default = name == ""
    current = configs.state.cluster_default if scope_default else configs.state.node
    wanted = change(dict(current))
    if isinstance(wanted, tuple):
        return wanted
    refusal = check_broker_configs(wanted)
    if refusal is not None:
        return refusal
    if not validate_only:
        return await _write(configs.set_broker(scope_default, wanted, _topic_ids(ctx.services.topics)))
    return OK


def _topic_ids(topics: Any) -> Mapping[str, str]:
    out = {}
    for name in topics.names():
        info = topics.get(name)
        if info is not None and not topics.is_internal(name):
            out[name] = str(info.topic_id)
    return out


async def _write(step: Any) -> Refusal:
    try:
        await step
    except OSError as exc:
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"could not write the configs: {exc.strerror}"
    return OK


APIS = (
    Api(key=ApiKey.DESCRIBE_CONFIGS, handler=describe_configs, check=authz_admin.describe_configs),
    Api(key=ApiKey.ALTER_CONFIGS, handler=alter_configs, check=authz_admin.alter_configs),
    Api(
        key=ApiKey.INCREMENTAL_ALTER_CONFIGS,
        handler=incremental_alter_configs,
        check=authz_admin.incremental_alter_configs,
    ),
)
