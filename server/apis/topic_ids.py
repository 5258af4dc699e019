"""OffsetCommit v10 and OffsetFetch v10 (KIP-848): topics named by TopicId instead of Name.

Version notes: from v10 both requests and both responses carry TopicId where v0-v9 carry Name. Like Kafka's
KafkaApis (handleOffsetCommitRequest, fetchOffsetsForGroup, fetchAllOffsetsForGroup), the ids are resolved to
names in front of everything else, so the ACL checks, the commit plan and the state machine keep working by
name (offsets are stored by name, as Kafka stores them):
- an id the broker does not know: every partition of that topic gets UNKNOWN_TOPIC_ID (committed offset -1 in
  OffsetFetch), and the topic never reaches the checks behind;
- the answer names each topic by the id it was asked with; an all-topics OffsetFetch gets each committed
  topic's current id, and leaves out a topic that no longer exists (it has no id to write).

The wrapper sits outside the ACL check (authz.py; the declarations' `before_check`) so that an unknown id is answered UNKNOWN_TOPIC_ID before
any TOPIC_AUTHORIZATION_FAILED, as in Kafka; the group's own ACL still comes first (a commit to a group the
principal may not READ is GROUP_AUTHORIZATION_FAILED for every topic; OffsetFetch's group error drops the
unknown-id answers with the rest).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import offset_commit as oc
from groupcoord.protocol.messages import offset_fetch as of
from groupcoord.server.apis.authz_common import allowed
from groupcoord.server.net.dispatch import then
from groupcoord.server.security.authorizer import GROUP, READ

if TYPE_CHECKING:
    from collections.abc import Callable

    from groupcoord.server.net.dispatch import RequestContext

    Handler = Callable[[RequestContext, Any], Any]

#: the first version that names topics by id
TOPIC_ID_VERSION = 10
UNKNOWN_TOPIC_ID = int(ErrorCode.UNKNOWN_TOPIC_ID)


def _name_of(ctx: RequestContext, topic_id: uuid.UUID) -> str | None:
    info = ctx.services.topics.by_id(topic_id)
    return None if info is None else info.name


def _id_of(ctx: RequestContext, name: str) -> uuid.UUID | None:
    info = ctx.services.topics.get(name)
    return None if info is None else info.topic_id


def offset_commit(handler: Handler) -> Handler:
    def by_id(ctx: RequestContext, req: oc.OffsetCommitRequest) -> Any:
        if ctx.version < TOPIC_ID_VERSION or not allowed(ctx, READ, GROUP, req.group_id):
            # Kafka checks READ on the group before anything else: the ACL check behind answers
            # GROUP_AUTHORIZATION_FAILED for every topic, unknown ids included
            return handler(ctx, req)
        known: list[oc.OffsetCommitRequestTopic] = []
        unknown: list[oc.OffsetCommitResponseTopic] = []
        ids: dict[str, uuid.UUID] = {}
        for t in req.topics:
            name = _name_of(ctx, t.topic_id)
            if name is None:
                unknown.append(
                    oc.OffsetCommitResponseTopic(
                        topic_id=t.topic_id,
                        partitions=tuple(
                            oc.OffsetCommitResponsePartition(
                                partition_index=p.partition_index, error_code=UNKNOWN_TOPIC_ID
                            )
                            for p in t.partitions
                        ),
                    )
                )
            else:
                ids[name] = t.topic_id
                known.append(replace(t, name=name))
        if not known:
            return oc.OffsetCommitResponse(topics=tuple(unknown))

        def back(resp: oc.OffsetCommitResponse) -> oc.OffsetCommitResponse:
            topics = tuple(replace(t, topic_id=ids.get(t.name, t.topic_id)) for t in resp.topics)
            return replace(resp, topics=topics + tuple(unknown))

        return then(handler(ctx, replace(req, topics=tuple(known))), back)

    return by_id


def _fetch_error_topic(t: of.OffsetFetchRequestTopics, error: int) -> of.OffsetFetchResponseTopics:
    """Kafka's buildErrorResponse: every partition asked for, offset -1, with `error`."""
    return of.OffsetFetchResponseTopics(
        topic_id=t.topic_id,
        partitions=tuple(
            of.OffsetFetchResponsePartitions(
                partition_index=i, committed_offset=-1, metadata="", error_code=error
            )
            for i in t.partition_indexes
        ),
    )


def offset_fetch(handler: Handler) -> Handler:
    def by_id(ctx: RequestContext, req: of.OffsetFetchRequest) -> Any:
        if ctx.version < TOPIC_ID_VERSION:
            return handler(ctx, req)
        groups = []
        # per group: the name -> id the request used, and the unknown-id answers
        asked: dict[str, tuple[dict[str, uuid.UUID], list[of.OffsetFetchResponseTopics]]] = {}
        for g in req.groups:
            ids: dict[str, uuid.UUID] = {}
            unknown: list[of.OffsetFetchResponseTopics] = []
            if g.topics is None:
                groups.append(g)
            else:
                known = []
                for t in g.topics:
                    name = _name_of(ctx, t.topic_id)
                    if name is None:
                        unknown.append(_fetch_error_topic(t, UNKNOWN_TOPIC_ID))
                    else:
                        ids[name] = t.topic_id
                        known.append(replace(t, name=name))
                groups.append(replace(g, topics=tuple(known)))
            asked.setdefault(g.group_id, (ids, unknown))

        def back(resp: of.OffsetFetchResponse) -> of.OffsetFetchResponse:
            out = []
            for g in resp.groups:
                ids, unknown = asked.get(g.group_id, ({}, []))
                if g.error_code != ErrorCode.NONE:
                    out.append(g)
                    continue
                topics = []
                for t in g.topics:
                    tid = ids.get(t.name) or _id_of(ctx, t.name)
                    if tid is not None:  # a topic without an id cannot be written at v10: left out
                        topics.append(replace(t, topic_id=tid))
                out.append(replace(g, topics=tuple(topics) + tuple(unknown)))
            return replace(resp, groups=tuple(out))

        return then(handler(ctx, replace(req, groups=tuple(groups))), back)

    return by_id
