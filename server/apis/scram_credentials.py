"""DescribeUserScramCredentials (50) v0 and AlterUserScramCredentials (51) v0 (KIP-554), as Kafka answers.

Describe needs DESCRIBE on the cluster, Alter ALTER (CLUSTER_AUTHORIZATION_FAILED otherwise; everything is
allowed without an authorizer). Describing a user without credentials is RESOURCE_NOT_FOUND, naming a user
twice DUPLICATE_RESOURCE. An alteration of a user is all or nothing: an unknown mechanism is
UNSUPPORTED_SASL_MECHANISM, iterations outside 4096-16384 or an empty name, salt or salted password
UNACCEPTABLE_CREDENTIAL, deleting a credential that does not exist RESOURCE_NOT_FOUND, the same user and
mechanism twice DUPLICATE_RESOURCE. Changes are stored durably before the answer (in cluster mode in
PostgreSQL, seen by every node); when they cannot be stored, every user's result is UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import structlog

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import alter_user_scram_credentials as al
from groupcoord.protocol.messages import describe_user_scram_credentials as ds
from groupcoord.server.apis import authz
from groupcoord.server.apis.declaration import Api
from groupcoord.server.net.dispatch import RequestContext
from groupcoord.server.security.authorizer import ALTER, CLUSTER, CLUSTER_NAME, DESCRIBE
from groupcoord.server.security.scram import MAX_ITERATIONS, MECHANISM_IDS, MIN_ITERATIONS

MECHANISM_NAMES = {v: k for k, v in MECHANISM_IDS.items()}
log = structlog.get_logger("groupcoord.scram")


def _cluster(ctx: RequestContext, operation: int) -> bool:
    return ctx.services.access.authorize(ctx.principal, ctx.conn.peer_host, operation, CLUSTER, CLUSTER_NAME)


def describe_user_scram_credentials(
    ctx: RequestContext, req: ds.DescribeUserScramCredentialsRequest
) -> ds.DescribeUserScramCredentialsResponse:
    if not _cluster(ctx, DESCRIBE):
        return ds.DescribeUserScramCredentialsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    stored = ctx.services.access.scram_users()
    names = [u.name for u in req.users] if req.users else sorted(stored)
    counts = Counter(names)
    results = []
    for name in dict.fromkeys(names):
        if counts[name] > 1:
            code, message, infos = (
                ErrorCode.DUPLICATE_RESOURCE,
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}",
                (),
            )
        elif name not in stored:
            code, message, infos = (
                ErrorCode.RESOURCE_NOT_FOUND,
                f"Attempt to describe a user credential that does not exist: {name}",
                (),
            )
        else:
            code, message = ErrorCode.NONE, None
            infos = tuple(
                ds.CredentialInfo(mechanism=MECHANISM_IDS[mech], iterations=iterations)
                for mech, iterations in sorted(stored[name].items())
            )
        results.append(
            ds.DescribeUserScramCredentialsResult(
                user=name, error_code=code, error_message=message, credential_infos=infos
            )
        )
    return ds.DescribeUserScramCredentialsResponse(error_code=ErrorCode.NONE, results=tuple(results))


def alter_user_scram_credentials(ctx: RequestContext, req: al.AlterUserScramCredentialsRequest) -> Any:
    users = list(dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions]))
    if not _cluster(ctx, ALTER):
        return al.AlterUserScramCredentialsResponse(
            results=tuple(
                al.AlterUserScramCredentialsResult(user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                for u in users
            )
        )
    access = ctx.services.access
    stored = access.scram_users()
    pairs = Counter(
        [(d.name, d.mechanism) for d in req.deletions] + [(u.name, u.mechanism) for u in req.upsertions]
    )
    errors: dict[str, tuple[int, str]] = {}

    def fail(user: str, code: int, message: str) -> None:
        errors.setdefault(user, (code, message))

    for (user, mech), n in pairs.items():
        if n > 1:
            fail(
                user,
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
        if mech not in MECHANISM_NAMES:
            fail(user, ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {mech}")
        if not user:
            fail(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    for d in req.deletions:
        if d.mechanism in MECHANISM_NAMES and MECHANISM_NAMES[d.mechanism] not in stored.get(d.name, {}):
            fail(
                d.name,
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
    for u in req.upsertions:
        if u.iterations < MIN_ITERATIONS:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        if not u.salt or not u.salted_password:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")
    deletions = [(d.name, MECHANISM_NAMES[d.mechanism]) for d in req.deletions if d.name not in errors]
    upsertions = [
        (u.name, MECHANISM_NAMES[u.mechanism], u.iterations, u.salt, u.salted_password)
        for u in req.upsertions
        if u.name not in errors
    ]
    return asyncio.ensure_future(_alter(ctx, users, errors, deletions, upsertions))


async def _alter(
    ctx: RequestContext,
    users: list[str],
    errors: dict[str, tuple[int, str]],
    deletions: list[tuple[str, str]],
    upsertions: list[tuple[str, str, int, bytes, bytes]],
) -> al.AlterUserScramCredentialsResponse:
    try:
        await ctx.services.access.alter_scram(deletions, upsertions)
    except Exception as e:  # the store could not make them durable: nothing changed
        log.warning("AlterUserScramCredentials not stored", error=repr(e))
        for u in users:
            errors.setdefault(u, (ErrorCode.UNKNOWN_SERVER_ERROR, str(e)))
    return al.AlterUserScramCredentialsResponse(
        results=tuple(
            al.AlterUserScramCredentialsResult(
                user=u,
                error_code=errors[u][0] if u in errors else ErrorCode.NONE,
                error_message=errors[u][1] if u in errors else None,
            )
            for u in users
        )
    )


# the handlers check CLUSTER themselves
APIS = (
    Api(
        key=ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        handler=describe_user_scram_credentials,
        check=authz.open_to_all,
    ),
    Api(
        key=ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        handler=alter_user_scram_credentials,
        check=authz.open_to_all,
    ),
)
