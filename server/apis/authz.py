"""ACL checks in front of the handlers (issue 18), as Kafka's KafkaApis and GroupCoordinator make them.

With an authorizer configured (`--authorizer-class-name`), the broker wraps each handler with the check of
this module, so the handlers themselves stay about their subject. What each API needs and what a denied
principal is told are Kafka's:

| API | needs | denied |
|---|---|---|
| JoinGroup, SyncGroup, Heartbeat, LeaveGroup | READ group | GROUP_AUTHORIZATION_FAILED |
| OffsetCommit | READ group, READ each topic | GROUP_..., TOPIC_AUTHORIZATION_FAILED per partition |
| OffsetFetch | DESCRIBE group, DESCRIBE each topic | GROUP_...; denied topics dropped (all topics) or TOPIC_... |
| DescribeGroups | DESCRIBE group | GROUP_AUTHORIZATION_FAILED for that group |
| ListGroups | DESCRIBE cluster, else only the groups it may DESCRIBE | (filtered) |
| DeleteGroups | DELETE group | GROUP_AUTHORIZATION_FAILED for that group |
| FindCoordinator | DESCRIBE group / TransactionalId | GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED |
| Metadata | DESCRIBE topic; auto-create needs CREATE cluster or topic | topics filtered / TOPIC_AUTHORIZATION_FAILED |
| Fetch | READ topic | TOPIC_AUTHORIZATION_FAILED per partition, no records |
| ListOffsets | DESCRIBE topic | TOPIC_AUTHORIZATION_FAILED per partition |

Produce, InitProducerId and the transaction APIs are checked in `authz_txn`; topic and config administration,
DeleteRecords, OffsetForLeaderEpoch and OffsetDelete in `authz_admin`; the admin APIs of tools (log dirs,
producers, markers, elections, reassignments) in `authz_tools`; the KIP-932 share APIs in `authz_share`. Each
API's declaration names its check (`check=` in server/apis/declaration.py); an API declared without one is
refused to anyone but `super.users` by closing the connection (docs/differences.md 49): deny by default rather
than an unchecked door. Every API served today has its check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from groupcoord.server.apis.authz_common import (
    GROUP_DENIED,
    TOPIC_DENIED,
    TXN_ID_DENIED,
    Handler,
    allowed,
)
from groupcoord.server.apis.authz_common import replace_fields as _replace
from groupcoord.server.apis.error_answers import commit_errors
from groupcoord.server.net.dispatch import RequestContext, then
from groupcoord.server.security.authorizer import (
    CLUSTER,
    CLUSTER_NAME,
    CREATE,
    DELETE,
    DESCRIBE,
    GROUP,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
)

log = structlog.get_logger("groupcoord.authz")


def group_read(error_response: Callable[[Any], Any]) -> Callable[[Handler], Handler]:
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup: READ on the group or only an error comes back."""

    def wrap(handler: Handler) -> Handler:
        def checked(ctx: RequestContext, req: Any) -> Any:
            if not allowed(ctx, READ, GROUP, req.group_id):
                return error_response(req)
            return handler(ctx, req)

        return checked

    return wrap


def offset_commit(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if not allowed(ctx, READ, GROUP, req.group_id):
            return commit_errors(req, GROUP_DENIED)
        denied = [t for t in req.topics if not allowed(ctx, READ, TOPIC, t.name)]
        if not denied:
            return handler(ctx, req)
        kept = tuple(t for t in req.topics if t not in denied)
        refused = commit_errors(_replace(req, topics=tuple(denied)), TOPIC_DENIED)
        if not kept:
            return refused
        return then(
            handler(ctx, _replace(req, topics=kept)),
            lambda resp: _replace(resp, topics=tuple(resp.topics) + tuple(refused.topics)),
        )

    return checked


def offset_fetch(handler: Handler) -> Handler:
    def filter_topics(ctx: RequestContext, topics: tuple, all_topics: bool) -> tuple:  # type: ignore[type-arg]
        out = []
        for t in topics:
            if allowed(ctx, DESCRIBE, TOPIC, t.name):
                out.append(t)
            elif not all_topics:  # asked for by name: say why there is no offset
                parts = tuple(
                    _replace(p, committed_offset=-1, metadata=None, error_code=TOPIC_DENIED)
                    for p in t.partitions
                )
                out.append(_replace(t, partitions=parts))
        return tuple(out)

    def checked(ctx: RequestContext, req: Any) -> Any:
        if ctx.version < 8:
            if not allowed(ctx, DESCRIBE, GROUP, req.group_id):
                return _fetch_denied(ctx, req)
            return then(
                handler(ctx, req),
                lambda resp: _replace(resp, topics=filter_topics(ctx, resp.topics, req.topics is None)),
            )
        denied = {g.group_id for g in req.groups if not allowed(ctx, DESCRIBE, GROUP, g.group_id)}
        asked_all = {g.group_id: g.topics is None for g in req.groups}

        def fix(resp: Any) -> Any:
            groups = []
            for g in resp.groups:
                if g.group_id in denied:
                    groups.append(_replace(g, topics=(), error_code=GROUP_DENIED))
                else:
                    groups.append(
                        _replace(g, topics=filter_topics(ctx, g.topics, asked_all.get(g.group_id, True)))
                    )
            return _replace(resp, groups=tuple(groups))

        return then(handler(ctx, req), fix)

    return checked


def _fetch_denied(ctx: RequestContext, req: Any) -> Any:
    """Kafka's `OffsetFetchResponse.groupError`: from v2 the top-level error code; v0-v1 have none, so every
    partition asked for carries GROUP_AUTHORIZATION_FAILED (offset -1, metadata "")."""
    from groupcoord.protocol.messages.offset_fetch import (
        OffsetFetchResponse,
        OffsetFetchResponsePartition,
        OffsetFetchResponseTopic,
    )

    if ctx.version >= 2:
        return OffsetFetchResponse(error_code=GROUP_DENIED)
    return OffsetFetchResponse(
        topics=tuple(
            OffsetFetchResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetFetchResponsePartition(
                        partition_index=p, committed_offset=-1, metadata="", error_code=GROUP_DENIED
                    )
                    for p in t.partition_indexes
                ),
            )
            for t in req.topics or ()
        )
    )


def describe_groups(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        access = ctx.services.access

        def fix(resp: Any) -> Any:
            out = []
            for g in resp.groups:
                if not allowed(ctx, DESCRIBE, GROUP, g.group_id):
                    out.append(
                        _replace(
                            g,
                            error_code=GROUP_DENIED,
                            group_state="",
                            protocol_type="",
                            protocol_data="",
                            members=(),
                        )
                    )
                elif req.include_authorized_operations and ctx.version >= 3 and g.error_code == 0:
                    ops = access.operations(ctx.principal, ctx.conn.peer_host, GROUP, g.group_id)
                    out.append(_replace(g, authorized_operations=ops))
                else:
                    out.append(g)
            return _replace(resp, groups=tuple(out))

        return then(handler(ctx, req), fix)

    return checked


def list_groups(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if allowed(ctx, DESCRIBE, CLUSTER, CLUSTER_NAME):
            return handler(ctx, req)
        return then(
            handler(ctx, req),
            lambda resp: _replace(
                resp, groups=tuple(g for g in resp.groups if allowed(ctx, DESCRIBE, GROUP, g.group_id))
            ),
        )

    return checked


def delete_groups(handler: Handler) -> Handler:
    from groupcoord.protocol.messages.delete_groups import DeletableGroupResult

    def checked(ctx: RequestContext, req: Any) -> Any:
        names = list(dict.fromkeys(req.groups_names))
        denied = [g for g in names if not allowed(ctx, DELETE, GROUP, g)]
        if not denied:
            return handler(ctx, req)
        refused = tuple(DeletableGroupResult(group_id=g, error_code=GROUP_DENIED) for g in denied)
        kept = tuple(g for g in names if g not in denied)
        if not kept:
            return _delete_response(refused)
        return then(
            handler(ctx, _replace(req, groups_names=kept)),
            lambda resp: _replace(resp, results=tuple(resp.results) + refused),
        )

    return checked


def _delete_response(results: tuple) -> Any:  # type: ignore[type-arg]
    from groupcoord.protocol.messages.delete_groups import DeleteGroupsResponse

    return DeleteGroupsResponse(results=results)


def find_coordinator(handler: Handler) -> Handler:
    """DESCRIBE on the group (key type 0) or on the TransactionalId (key type 1), per key."""
    denied_by_type = {0: (GROUP, GROUP_DENIED), 1: (TRANSACTIONAL_ID, TXN_ID_DENIED)}

    def checked(ctx: RequestContext, req: Any) -> Any:
        if req.key_type not in denied_by_type:
            return handler(ctx, req)
        resource, code = denied_by_type[req.key_type]

        def fix(resp: Any) -> Any:
            if ctx.version >= 4:
                return _replace(
                    resp,
                    coordinators=tuple(
                        c
                        if allowed(ctx, DESCRIBE, resource, c.key)
                        else _replace(c, node_id=-1, host="", port=-1, error_code=code, error_message=None)
                        for c in resp.coordinators
                    ),
                )
            if allowed(ctx, DESCRIBE, resource, req.key):
                return resp
            return _replace(resp, node_id=-1, host="", port=-1, error_code=code, error_message=None)

        return then(handler(ctx, req), fix)

    return checked


def metadata(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        access = ctx.services.access
        host = ctx.conn.peer_host
        uncreatable: list[str] = []
        if ctx.version == 0 and not allowed(ctx, CREATE, CLUSTER, CLUSTER_NAME):
            req = _replace(req, allow_auto_topic_creation=False)  # v0: an empty list would mean all topics
        elif req.allow_auto_topic_creation and req.topics and not allowed(ctx, CREATE, CLUSTER, CLUSTER_NAME):
            # Kafka: a missing topic the principal may see is auto-created with CREATE on the topic, else 29
            uncreatable = [
                t.name
                for t in req.topics
                if t.name is not None
                and ctx.services.topics.get(t.name) is None
                and allowed(ctx, DESCRIBE, TOPIC, t.name)
                and not allowed(ctx, CREATE, TOPIC, t.name)
            ]
            req = _replace(req, topics=tuple(t for t in req.topics if t.name not in uncreatable))
        asked = req.topics is not None

        def fix(resp: Any) -> Any:
            topics = []
            for t in resp.topics:
                if t.name is not None and not allowed(ctx, DESCRIBE, TOPIC, t.name):
                    if asked:
                        topics.append(_replace(t, error_code=TOPIC_DENIED, partitions=(), is_internal=False))
                    continue
                if req.include_topic_authorized_operations and ctx.version >= 8 and t.name:
                    t = _replace(
                        t, topic_authorized_operations=access.operations(ctx.principal, host, TOPIC, t.name)
                    )
                topics.append(t)
            topics.extend(_replace(_topic_denied(ctx), name=n) for n in uncreatable)
            resp = _replace(resp, topics=tuple(topics))
            if 8 <= ctx.version <= 10 and req.include_cluster_authorized_operations:
                resp = _replace(
                    resp,
                    cluster_authorized_operations=access.operations(
                        ctx.principal, host, CLUSTER, CLUSTER_NAME
                    ),
                )
            return resp

        return then(handler(ctx, req), fix)

    return checked


def _topic_denied(ctx: RequestContext) -> Any:
    import uuid

    from groupcoord.protocol.messages.metadata import MetadataResponseTopic

    return MetadataResponseTopic(
        error_code=TOPIC_DENIED, name="", topic_id=uuid.UUID(int=0), is_internal=False, partitions=()
    )


def fetch(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        names = ctx.services.topics

        def name_of(t: Any) -> str:
            if ctx.version >= 13:
                info = names.by_id(t.topic_id)
                return info.name if info is not None else ""
            return t.topic

        def fix(resp: Any) -> Any:
            out = []
            for t in resp.responses:
                name = name_of(t)
                if name and not allowed(ctx, READ, TOPIC, name):
                    parts = tuple(
                        _replace(p, error_code=TOPIC_DENIED, high_watermark=-1, records=None)
                        for p in t.partitions
                    )
                    t = _replace(t, partitions=parts)
                out.append(t)
            return _replace(resp, responses=tuple(out))

        return then(handler(ctx, req), fix)

    return checked


def list_offsets(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        def fix(resp: Any) -> Any:
            return _replace(
                resp,
                topics=tuple(
                    t
                    if allowed(ctx, DESCRIBE, TOPIC, t.name)
                    else _replace(
                        t,
                        partitions=tuple(
                            _replace(p, error_code=TOPIC_DENIED, offset=-1) for p in t.partitions
                        ),
                    )
                    for t in resp.topics
                ),
            )

        return then(handler(ctx, req), fix)

    return checked


def describe_cluster(handler: Handler) -> Handler:
    """Kafka checks nothing for DescribeCluster but fills in the cluster's authorized operations."""

    def checked(ctx: RequestContext, req: Any) -> Any:
        if not req.include_cluster_authorized_operations:
            return handler(ctx, req)
        ops = ctx.services.access.operations(ctx.principal, ctx.conn.peer_host, CLUSTER, CLUSTER_NAME)
        return then(
            handler(ctx, req),
            lambda resp: _replace(resp, cluster_authorized_operations=ops) if resp.error_code == 0 else resp,
        )

    return checked


def super_users_only(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if ctx.services.access.is_super_user(ctx.principal):
            return handler(ctx, req)
        log.warning(
            "API refused: only super.users may use it with the authorizer on",
            api_key=ctx.api_key,
            principal=ctx.principal,
        )
        ctx.conn.close(f"API {ctx.api_key} is open to super.users only while the authorizer is on")
        return None

    return checked


def group_denied(response: type) -> Callable[[Any], Any]:
    """The response class's GROUP_AUTHORIZATION_FAILED answer (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)."""
    return lambda req: response(error_code=GROUP_DENIED)


def open_to_all(handler: Handler) -> Handler:
    """No ACL check in front: ApiVersions, SASL, and the APIs whose handlers check CLUSTER themselves (ACLs,
    SCRAM credentials)."""
    return handler
