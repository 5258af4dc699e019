"""ListConfigResources (74): the config resources there are, as Kafka's `KafkaApis.handleListConfigResources`.

Version notes (protocol/messages/list_config_resources.py): v0 (ListClientMetricsResources) lists the
client metrics subscriptions only; v1 takes ResourceTypes (empty: TOPIC, BROKER, BROKER_LOGGER,
CLIENT_METRICS and GROUP) and answers UNSUPPORTED_VERSION, with nothing listed, when one asked is not among
them. Listed in Kafka's order: GROUP (groups with group configs), CLIENT_METRICS (subscriptions),
BROKER_LOGGER and BROKER (every live node's id), TOPIC (every topic, `__consumer_offsets` included).
`kafka-client-metrics --list` and `kafka-configs --describe --entity-type client-metrics|groups` use it.

The ACL check (DESCRIBE_CONFIGS on CLUSTER, else CLUSTER_AUTHORIZATION_FAILED and nothing listed) is in
`authz_tools`.

Uses of the server (`ctx.services`): `configs` (groups and subscriptions with configs), `topics`, `routing`
(the live nodes in cluster mode), `config.node_id`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.list_config_resources import (
    ListConfigResourcesRequest,
    ListConfigResourcesResource,
    ListConfigResourcesResponse,
)
from groupcoord.server.apis import authz_tools
from groupcoord.server.apis.declaration import Api
from groupcoord.server.configs.types import ResourceType

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

#: what v1 lists when asked for no type in particular (`ListConfigResourcesRequest.supportedResourceTypes`)
V1_TYPES = frozenset(
    (
        ResourceType.TOPIC,
        ResourceType.BROKER,
        ResourceType.BROKER_LOGGER,
        ResourceType.CLIENT_METRICS,
        ResourceType.GROUP,
    )
)


def _node_ids(ctx: RequestContext) -> list[int]:
    routing = ctx.services.routing
    if routing is None:
        return [ctx.services.config.node_id]
    return sorted({n.node_id for n in routing.live_nodes()} | {ctx.services.config.node_id})


def list_config_resources(
    ctx: RequestContext, req: ListConfigResourcesRequest
) -> ListConfigResourcesResponse:
    supported = V1_TYPES if ctx.version >= 1 else frozenset((ResourceType.CLIENT_METRICS,))
    wanted = set(req.resource_types) if ctx.version >= 1 and req.resource_types else set(supported)
    if not wanted <= supported:
        return ListConfigResourcesResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
    state = ctx.services.configs.state
    out: list[tuple[str, int]] = []
    if ResourceType.GROUP in wanted:
        out += [(g, ResourceType.GROUP) for g in state.groups]
    if ResourceType.CLIENT_METRICS in wanted:
        out += [(n, ResourceType.CLIENT_METRICS) for n in state.client_metrics]
    for kind in (ResourceType.BROKER_LOGGER, ResourceType.BROKER):
        if kind in wanted:
            out += [(str(n), kind) for n in _node_ids(ctx)]
    if ResourceType.TOPIC in wanted:
        out += [(t, ResourceType.TOPIC) for t in ctx.services.topics.names()]
    return ListConfigResourcesResponse(
        error_code=ErrorCode.NONE,
        config_resources=tuple(ListConfigResourcesResource(resource_name=n, resource_type=t) for n, t in out),
    )


APIS = (
    Api(
        key=ApiKey.LIST_CONFIG_RESOURCES,
        handler=list_config_resources,
        check=authz_tools.list_config_resources,
    ),
)
