"""Which node answers for a transactional id: this one on a single node; in cluster mode the owner of the
id's shard (the same hash and leases as groups, docs/cluster.md), others answering NOT_COORDINATOR and a node
still loading the shard COORDINATOR_LOAD_IN_PROGRESS, as Kafka's brokers answer for a `__transaction_state`
partition they do not lead or are loading."""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupcoord.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext


def txn_status(ctx: RequestContext, transactional_id: str) -> ErrorCode:
    """NONE: this node coordinates `transactional_id` now; else the error to answer for it."""
    if ctx.services.loading:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    routing = ctx.services.routing
    return ErrorCode.NONE if routing is None else routing.group_status(transactional_id)
