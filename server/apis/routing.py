"""Cluster mode: a group request for a group this node does not serve never reaches the state machine.

Kafka's brokers answer NOT_COORDINATOR for a group whose `__consumer_offsets` partition they do not lead,
and COORDINATOR_LOAD_IN_PROGRESS while they replay one they just became leader of; clients then go back to
FindCoordinator, or retry. Here the shard of each group named in the request (`ctx.services.routing`)
decides; which groups a request names, and its error answer, are its API's declaration (`Api.groups`,
`Api.while_loading`). A request naming several groups (DescribeGroups, DeleteGroups, OffsetFetch v8+) is answered with
the error for all of them when any one is not served here (Kafka answers per group; clients send one
request per coordinator, so the groups of one request normally share it). ListGroups lists this node's
groups, as each Kafka broker lists those it coordinates.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.apis.declaration import answering

if TYPE_CHECKING:
    from groupcoord.server.apis.declaration import Api, Ids
    from groupcoord.server.net.dispatch import Handler, RequestContext


class Router:
    """The routing of the declared APIs that name groups (`Api.groups`), as the dispatcher's `route` hook."""

    def __init__(self, declared: Iterable[Api]) -> None:
        routed = [a for a in declared if a.groups is not None]
        self.groups: dict[int, Ids] = {int(a.key): a.groups for a in routed if a.groups is not None}
        self.not_here = {int(a.key): answering(a, ErrorCode.NOT_COORDINATOR) for a in routed}
        self.loading = {int(a.key): answering(a, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) for a in routed}

    def group_ids(self, api_key: int, version: int, req: Any) -> list[str]:
        """The groups a group request names (none for the other APIs)."""
        ids = self.groups.get(api_key)
        return [] if ids is None else list(ids(version, req))

    def route(self, ctx: RequestContext, api_key: int, req: Any) -> Handler | None:
        """None: handle here as usual; else the handler that answers NOT_COORDINATOR or LOAD_IN_PROGRESS."""
        routing = ctx.services.routing
        if routing is None or api_key not in self.groups:
            return None
        statuses = {routing.group_status(g) for g in self.group_ids(api_key, ctx.version, req)}
        statuses.discard(ErrorCode.NONE)
        if not statuses:
            return None
        if ErrorCode.NOT_COORDINATOR in statuses:
            return self.not_here[api_key]
        return self.loading[api_key]
