"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31), versions 1-3, as Kafka's AclApis answers them.

DescribeAcls needs DESCRIBE on the cluster, the other two ALTER (CLUSTER_AUTHORIZATION_FAILED otherwise);
without an authorizer all three answer SECURITY_DISABLED. Bindings are stored durably before the answer
(`server.security.Security`; in cluster mode in PostgreSQL, seen by every node); when they cannot be stored,
every result is UNKNOWN_SERVER_ERROR and nothing changed.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import structlog

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import create_acls as ca
from groupcoord.protocol.messages import delete_acls as da
from groupcoord.protocol.messages import describe_acls as ds
from groupcoord.server.apis import authz
from groupcoord.server.apis.declaration import Api
from groupcoord.server.net.dispatch import RequestContext
from groupcoord.server.security.authorizer import (
    ALTER,
    CLUSTER,
    CLUSTER_NAME,
    DESCRIBE,
    AclBinding,
    AclFilter,
)

DISABLED = "No Authorizer is configured."
log = structlog.get_logger("groupcoord.acls")


def _cluster(ctx: RequestContext, operation: int) -> bool:
    return ctx.services.access.authorize(ctx.principal, ctx.conn.peer_host, operation, CLUSTER, CLUSTER_NAME)


def describe_acls(ctx: RequestContext, req: ds.DescribeAclsRequest) -> ds.DescribeAclsResponse:
    access = ctx.services.access
    if not access.enabled:
        return ds.DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED, error_message=DISABLED)
    if not _cluster(ctx, DESCRIBE):
        return ds.DescribeAclsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    flt = AclFilter(
        req.resource_type_filter,
        req.resource_name_filter,
        req.pattern_type_filter,
        req.principal_filter,
        req.host_filter,
        req.operation,
        req.permission_type,
    )
    grouped: dict[tuple[int, str, int], list[ds.AclDescription]] = defaultdict(list)
    for b in access.describe_acls(flt):
        grouped[(b.resource_type, b.resource_name, b.pattern_type)].append(
            ds.AclDescription(
                principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission
            )
        )
    return ds.DescribeAclsResponse(
        error_code=ErrorCode.NONE,
        resources=tuple(
            ds.DescribeAclsResource(resource_type=rt, resource_name=name, pattern_type=pt, acls=tuple(acls))
            for (rt, name, pt), acls in grouped.items()
        ),
    )


def create_acls(ctx: RequestContext, req: ca.CreateAclsRequest) -> Any:
    access = ctx.services.access
    if not access.enabled or not _cluster(ctx, ALTER):
        code = ErrorCode.SECURITY_DISABLED if not access.enabled else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return ca.CreateAclsResponse(
            results=tuple(ca.AclCreationResult(error_code=code) for _ in req.creations)
        )
    bindings = [
        AclBinding(
            c.resource_type,
            c.resource_name,
            c.resource_pattern_type,
            c.principal,
            c.host,
            c.operation,
            c.permission_type,
        )
        for c in req.creations
    ]
    return asyncio.ensure_future(_create(ctx, bindings))


async def _create(ctx: RequestContext, bindings: list[AclBinding]) -> ca.CreateAclsResponse:
    try:
        problems = await ctx.services.access.create_acls(bindings)
    except Exception as e:  # the store could not make them durable: nothing was added
        log.warning("CreateAcls not stored", error=repr(e))
        return ca.CreateAclsResponse(
            results=tuple(
                ca.AclCreationResult(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(e))
                for _ in bindings
            )
        )
    return ca.CreateAclsResponse(
        results=tuple(
            ca.AclCreationResult(error_code=ErrorCode.NONE)
            if p is None
            else ca.AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=p)
            for p in problems
        )
    )


def delete_acls(ctx: RequestContext, req: da.DeleteAclsRequest) -> Any:
    access = ctx.services.access
    if not access.enabled or not _cluster(ctx, ALTER):
        code = ErrorCode.SECURITY_DISABLED if not access.enabled else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return da.DeleteAclsResponse(
            filter_results=tuple(da.DeleteAclsFilterResult(error_code=code) for _ in req.filters)
        )
    filters = [
        AclFilter(
            f.resource_type_filter,
            f.resource_name_filter,
            f.pattern_type_filter,
            f.principal_filter,
            f.host_filter,
            f.operation,
            f.permission_type,
        )
        for f in req.filters
    ]
    return asyncio.ensure_future(_delete(ctx, filters))


async def _delete(ctx: RequestContext, filters: list[AclFilter]) -> da.DeleteAclsResponse:
    try:
        matched = await ctx.services.access.delete_acls(filters)
    except Exception as e:  # the store could not make the deletion durable: nothing was deleted
        log.warning("DeleteAcls not stored", error=repr(e))
        return da.DeleteAclsResponse(
            filter_results=tuple(
                da.DeleteAclsFilterResult(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(e))
                for _ in filters
            )
        )
    return da.DeleteAclsResponse(
        filter_results=tuple(
            da.DeleteAclsFilterResult(
                error_code=ErrorCode.NONE,
                matching_acls=tuple(
                    da.DeleteAclsMatchingAcl(
                        error_code=ErrorCode.NONE,
                        resource_type=b.resource_type,
                        resource_name=b.resource_name,
                        pattern_type=b.pattern_type,
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission,
                    )
                    for b in bindings
                ),
            )
            for bindings in matched
        )
    )


# the handlers check CLUSTER themselves
APIS = (
    Api(key=ApiKey.DESCRIBE_ACLS, handler=describe_acls, check=authz.open_to_all),
    Api(key=ApiKey.CREATE_ACLS, handler=create_acls, check=authz.open_to_all),
    Api(key=ApiKey.DELETE_ACLS, handler=delete_acls, check=authz.open_to_all),
)
