"""The authorizer's checks of the KIP-848 APIs (Kafka's `KafkaApis.handleConsumerGroupHeartbeat` and
`handleConsumerGroupDescribe`), in a module of their own beside `authz_txn` and `authz_admin`.

ConsumerGroupHeartbeat: READ on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every subscribed
topic name (TOPIC_AUTHORIZATION_FAILED; nothing is created); a regex resolves only to topics the principal may
DESCRIBE (the handler's `LogTopicImage`). ConsumerGroupDescribe: DESCRIBE on each group,
a denied group's entry gets GROUP_AUTHORIZATION_FAILED, and one whose members' assignments or targets name a
topic the caller may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED without members; AuthorizedOperations from
the ACLs when asked for.
"""

from __future__ import annotations

from typing import Any

from groupcoord.protocol.messages import consumer_group_describe as cgd
from groupcoord.protocol.messages import consumer_group_heartbeat as cgh
from groupcoord.server.apis.authz_common import GROUP_DENIED, TOPIC_DENIED, Handler, allowed
from groupcoord.server.apis.authz_common import replace_fields as _replace
from groupcoord.server.net.dispatch import RequestContext, then
from groupcoord.server.security.authorizer import DESCRIBE, GROUP, READ, TOPIC


def consumer_group_heartbeat(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if not allowed(ctx, READ, GROUP, req.group_id):
            return cgh.ConsumerGroupHeartbeatResponse(error_code=GROUP_DENIED)
        names = req.subscribed_topic_names or ()
        denied = sorted(n for n in set(names) if not allowed(ctx, DESCRIBE, TOPIC, n))
        if denied:
            return cgh.ConsumerGroupHeartbeatResponse(
                error_code=TOPIC_DENIED,
                error_message=f"The group is not authorized to describe topics {denied}.",
            )
        return handler(ctx, req)

    return checked


def consumer_group_describe(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        denied = {g for g in req.group_ids if not allowed(ctx, DESCRIBE, GROUP, g)}
        access = ctx.services.access

        def fix(resp: Any) -> Any:
            out = []
            for g in resp.groups:
                if g.group_id in denied:
                    out.append(cgd.DescribedGroup(error_code=GROUP_DENIED, group_id=g.group_id))
                elif _hidden_topics(ctx, g):
                    out.append(
                        cgd.DescribedGroup(
                            error_code=TOPIC_DENIED,
                            error_message="The described group uses topics that the client is not authorized "
                            "to describe.",
                            group_id=g.group_id,
                        )
                    )
                elif req.include_authorized_operations and g.error_code == 0:
                    ops = access.operations(ctx.principal, ctx.conn.peer_host, GROUP, g.group_id)
                    out.append(_replace(g, authorized_operations=ops))
                else:
                    out.append(g)
            return _replace(resp, groups=tuple(out))

        return then(handler(ctx, req), fix)

    return checked


def _hidden_topics(ctx: RequestContext, g: Any) -> bool:
    names = {
        tp.topic_name
        for m in g.members
        for a in (m.assignment, m.target_assignment)
        for tp in a.topic_partitions
    }
    return any(not allowed(ctx, DESCRIBE, TOPIC, n) for n in names)
