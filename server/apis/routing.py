"""Cluster mode: a group request for a group this node does not serve never reaches the state machine.

Kafka's brokers answer NOT_COORDINATOR for a group whose `__consumer_offsets` partition they do not lead,
and COORDINATOR_LOAD_IN_PROGRESS while they replay one they just became leader of; clients then go back to
FindCoordinator, or retry. Here the shard of each group named in the request (`ctx.services.routing`)
decides. A request naming several groups (DescribeGroups, DeleteGroups, OffsetFetch v8+) is answered with
the error for all of them when any one is not served here (Kafka answers per group; clients send one
request per coordinator, so the groups of one request normally share it). ListGroups lists this node's
groups, as each Kafka broker lists those it coordinates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.apis.loading import answers_with

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

Handler = Callable[[Any, Any], Any]

_NOT_HERE = {int(k): v for k, v in answers_with(ErrorCode.NOT_COORDINATOR).items()}
_LOADING = {int(k): v for k, v in answers_with(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS).items()}
_SINGLE = {
    int(k)
    for k in (
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_DELETE,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.SHARE_GROUP_HEARTBEAT,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    )
}


def group_ids(api_key: int, version: int, req: Any) -> list[str]:
    """The groups a group request names (none for the other APIs)."""
    if api_key in _SINGLE:
        return [req.group_id]
    if api_key == ApiKey.OFFSET_FETCH:
        return [g.group_id for g in req.groups] if version >= 8 else [req.group_id]
    if api_key == ApiKey.DESCRIBE_GROUPS:
        return list(req.groups)
    if api_key == ApiKey.DELETE_GROUPS:
        return list(req.groups_names)
    if api_key in (ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.SHARE_GROUP_DESCRIBE):
        return list(req.group_ids)
    if api_key == ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS:
        return [g.group_id for g in req.groups]
    return []


def route(ctx: RequestContext, api_key: int, req: Any) -> Handler | None:
    """None: handle here as usual; else the handler that answers NOT_COORDINATOR or LOAD_IN_PROGRESS."""
    routing = ctx.services.routing
    if routing is None or api_key not in _NOT_HERE:
        return None
    statuses = {routing.group_status(g) for g in group_ids(api_key, ctx.version, req)}
    statuses.discard(ErrorCode.NONE)
    if not statuses:
        return None
    if ErrorCode.NOT_COORDINATOR in statuses:
        return _NOT_HERE[api_key]
    return _LOADING[api_key]
