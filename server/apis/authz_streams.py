"""The authorizer's checks of the KIP-1071 APIs (Kafka's `KafkaApis.handleStreamsGroupHeartbeat` and
`handleStreamsGroupDescribe`).

StreamsGroupHeartbeat: READ on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every topic its
topology names (TOPIC_AUTHORIZATION_FAILED, no message). StreamsGroupDescribe: DESCRIBE on each group, a
denied group's entry gets GROUP_AUTHORIZATION_FAILED; AuthorizedOperations from the ACLs when asked for.
Not yet: CREATE on the internal topics the coordinator creates (it creates them for any principal allowed
to heartbeat; docs/differences.md).
"""

from __future__ import annotations

from typing import Any

from groupcoord.protocol.messages import streams_group_describe as sgd
from groupcoord.protocol.messages import streams_group_heartbeat as sgh
from groupcoord.server.apis.authz_common import GROUP_DENIED, TOPIC_DENIED, Handler, allowed
from groupcoord.server.apis.authz_common import replace_fields as _replace
from groupcoord.server.net.dispatch import RequestContext, then
from groupcoord.server.security.authorizer import DESCRIBE, GROUP, READ, TOPIC


def _topology_topics(t: sgh.Topology | None) -> set[str]:
    if t is None:
        return set()
    out: set[str] = set()
    for s in t.subtopologies:
        out |= set(s.source_topics) | set(s.repartition_sink_topics)
        out |= {i.name for i in (*s.state_changelog_topics, *s.repartition_source_topics)}
    return out


def streams_group_heartbeat(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        if not allowed(ctx, READ, GROUP, req.group_id):
            return sgh.StreamsGroupHeartbeatResponse(error_code=GROUP_DENIED)
        if any(not allowed(ctx, DESCRIBE, TOPIC, n) for n in _topology_topics(req.topology)):
            return sgh.StreamsGroupHeartbeatResponse(error_code=TOPIC_DENIED)
        return handler(ctx, req)

    return checked


def streams_group_describe(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        denied = {g for g in req.group_ids if not allowed(ctx, DESCRIBE, GROUP, g)}
        access = ctx.services.access

        def fix(resp: Any) -> Any:
            out = []
            for g in resp.groups:
                if g.group_id in denied:
                    out.append(sgd.DescribedGroup(error_code=GROUP_DENIED, group_id=g.group_id))
                elif req.include_authorized_operations and g.error_code == 0:
                    ops = access.operations(ctx.principal, ctx.conn.peer_host, GROUP, g.group_id)
                    out.append(_replace(g, authorized_operations=ops))
                else:
                    out.append(g)
            return _replace(resp, groups=tuple(out))

        return then(handler(ctx, req), fix)

    return checked
