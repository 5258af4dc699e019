"""What the ACL check modules share (issue 18): the authorizer question and response rewriting.

A module of its own so that `authz` (the `CHECKS` table) and the per-subject check modules
(`authz_txn`, `authz_admin`) can all use it without importing one another in a circle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.net.dispatch import RequestContext

Handler = Callable[[RequestContext, Any], Any]
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_ID_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def allowed(ctx: RequestContext, operation: int, resource_type: int, name: str) -> bool:
    return ctx.services.access.authorize(ctx.principal, ctx.conn.peer_host, operation, resource_type, name)


def replace_fields(obj: Any, **changes: Any) -> Any:
    """A copy of a (frozen) message dataclass with some fields changed."""
    return dataclasses.replace(obj, **changes)


def allowed_names(ctx: RequestContext, operation: int, resource_type: int, names: Any) -> set[str]:
    """The names among `names` the principal may `operation` (Kafka's `AuthHelper.filterByAuthorized`)."""
    return {n for n in set(names) if allowed(ctx, operation, resource_type, n)}
