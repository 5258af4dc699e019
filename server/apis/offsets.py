"""OffsetCommit and OffsetFetch: the broker-layer checks, then the state machine (spec §6).

Version notes:
- OffsetCommit v0 and OffsetFetch v0 stored offsets in ZooKeeper; like a KRaft broker we answer every
  partition with UNSUPPORTED_VERSION.
- OffsetCommit: partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION here, before the coordinator
  sees the rest; the answer keeps the request's order. A commit is answered after it is durable.
- OffsetFetch v0-v1 have no top-level error (a group error is copied into each partition), v2-v7 a top-level
  one, v8+ one per group; CommittedLeaderEpoch from v5. Fetches run through the group's mailbox so they see
  commits still being written.
- OffsetCommit v10 and OffsetFetch v10 name topics by TopicId: server/apis/topic_ids.py resolves them to names
  in front of these handlers (and of the ACL check), so everything here works by name at every version.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import offset_commit as oc
from groupcoord.protocol.messages import offset_fetch as of
from groupcoord.server.apis import authz, loading, topic_ids
from groupcoord.server.apis.commit_plan import plan_commit
from groupcoord.server.apis.declaration import Api, by_group_id
from groupcoord.server.apis.error_answers import commit_errors
from groupcoord.server.coordinator import types as m
from groupcoord.server.net.dispatch import then

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext


def offset_commit(ctx: RequestContext, req: oc.OffsetCommitRequest) -> Any:
    v = ctx.version
    if v == 0:
        return commit_errors(req, ErrorCode.UNSUPPORTED_VERSION)
    plan = plan_commit(req.topics, ctx.services.topics.has_partition)

    def respond(result: m.OffsetCommitResult | None) -> oc.OffsetCommitResponse:
        return oc.OffsetCommitResponse(
            topics=tuple(
                oc.OffsetCommitResponseTopic(
                    name=name,
                    partitions=tuple(
                        oc.OffsetCommitResponsePartition(partition_index=i, error_code=e) for i, e in parts
                    ),
                )
                for name, parts in plan.answer(result)
            )
        )

    if not plan.accepted:
        return respond(None)
    mreq = m.OffsetCommitRequest(
        version=v,
        group_id=req.group_id,
        generation_id=req.generation_id_or_member_epoch,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id,
        retention_time_ms=req.retention_time_ms,
        topics=tuple(plan.accepted),
    )
    machine = ctx.services.machine
    failed = plan.failed()
    topics = ctx.services.topics

    def topic_id(name: str) -> uuid.UUID | None:
        info = topics.get(name)
        return None if info is None else info.topic_id

    call = ctx.services.runtime.call_parked(
        req.group_id, lambda tok, now: machine.commit_offsets(mreq, tok, now, topic_id), lambda: failed
    )
    return then(call, respond)


def _fetch_one(
    ctx: RequestContext,
    group_id: str,
    topics: Any,
    require_stable: bool,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> Any:
    mreq = m.OffsetFetchRequest(ctx.version, group_id, topics, require_stable, member_id, member_epoch)
    machine = ctx.services.machine
    return ctx.services.runtime.call(group_id, lambda now: (machine.fetch_offsets(mreq, now), None))


def offset_fetch(ctx: RequestContext, req: of.OffsetFetchRequest) -> Any:
    v = ctx.version
    if v >= 8:
        results = [
            _fetch_one(
                ctx,
                g.group_id,
                None if g.topics is None else tuple((t.name, t.partition_indexes) for t in g.topics),
                req.require_stable,
                g.member_id,
                g.member_epoch,
            )
            for g in req.groups
        ]
        ids = [g.group_id for g in req.groups]

        def build(done: list[m.OffsetFetchResult]) -> of.OffsetFetchResponse:
            return of.OffsetFetchResponse(
                groups=tuple(
                    of.OffsetFetchResponseGroup(
                        group_id=gid,
                        error_code=r.error,
                        topics=tuple(
                            of.OffsetFetchResponseTopics(
                                name=topic,
                                partitions=tuple(
                                    of.OffsetFetchResponsePartitions(
                                        partition_index=p.partition,
                                        committed_offset=p.offset,
                                        committed_leader_epoch=p.leader_epoch,
                                        metadata=p.metadata,
                                        error_code=p.error,
                                    )
                                    for p in parts
                                ),
                            )
                            for topic, parts in r.topics
                        ),
                    )
                    for gid, r in zip(ids, done, strict=True)
                )
            )

        if any(isinstance(r, asyncio.Future) for r in results):
            return then(asyncio.ensure_future(_gather(results)), build)
        return build(results)

    if v == 0:
        topics = req.topics or ()
        return of.OffsetFetchResponse(
            topics=tuple(
                of.OffsetFetchResponseTopic(
                    name=t.name,
                    partitions=tuple(
                        of.OffsetFetchResponsePartition(
                            partition_index=p,
                            committed_offset=-1,
                            metadata="",
                            error_code=ErrorCode.UNSUPPORTED_VERSION,
                        )
                        for p in t.partition_indexes
                    ),
                )
                for t in topics
            )
        )
    wanted = None if req.topics is None else tuple((t.name, t.partition_indexes) for t in req.topics)
    result = _fetch_one(ctx, req.group_id, wanted, req.require_stable)

    def build_one(r: m.OffsetFetchResult) -> of.OffsetFetchResponse:
        copy_error = v < 2 and r.error != 0
        return of.OffsetFetchResponse(
            error_code=r.error if v >= 2 else 0,
            topics=tuple(
                of.OffsetFetchResponseTopic(
                    name=topic,
                    partitions=tuple(
                        of.OffsetFetchResponsePartition(
                            partition_index=p.partition,
                            committed_offset=-1 if copy_error else p.offset,
                            committed_leader_epoch=p.leader_epoch if v >= 5 else -1,
                            metadata=p.metadata,
                            error_code=r.error if copy_error else p.error,
                        )
                        for p in parts
                    ),
                )
                for topic, parts in r.topics
            ),
        )

    return then(result, build_one)


async def _gather(items: list[Any]) -> list[Any]:
    return [await x if isinstance(x, asyncio.Future) else x for x in items]


def _fetched_groups(version: int, req: of.OffsetFetchRequest) -> tuple[str, ...]:
    return tuple(g.group_id for g in req.groups) if version >= 8 else (req.group_id,)


APIS = (
    Api(
        key=ApiKey.OFFSET_COMMIT,
        handler=offset_commit,
        check=authz.offset_commit,
        before_check=(topic_ids.offset_commit,),
        groups=by_group_id,
        while_loading=loading.offset_commit,
        coordinator=True,
    ),
    Api(
        key=ApiKey.OFFSET_FETCH,
        handler=offset_fetch,
        check=authz.offset_fetch,
        before_check=(topic_ids.offset_fetch,),
        groups=_fetched_groups,
        while_loading=loading.offset_fetch,
        coordinator=True,
    ),
)
