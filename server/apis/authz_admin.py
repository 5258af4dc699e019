"""ACL checks of topic and config administration (issue 18), as Kafka's `KafkaApis`/`ControllerApis` make them.

| API | needs | denied |
|---|---|---|
| CreateTopics | CREATE cluster or CREATE topic (DESCRIBE_CONFIGS topic for the configs in the answer) | 29 for that topic |
| DeleteTopics | DELETE topic (by id: DESCRIBE too, else the name is withheld) | 29 for that topic |
| CreatePartitions | ALTER topic | 29 for that topic |
| DeleteRecords | DELETE topic | 29 per partition |
| OffsetForLeaderEpoch | CLUSTER_ACTION cluster or DESCRIBE topic | 29 per partition |
| DescribeConfigs | DESCRIBE_CONFIGS topic / cluster (broker, logger, metrics) / group | 29 / 31 / 30 per resource |
| AlterConfigs, IncrementalAlterConfigs | ALTER_CONFIGS topic / cluster / group | 29 / 31 / 30 per resource |
| OffsetDelete | DELETE group, READ each topic | 30; 29 per partition |

A denied resource is left out of the request the handler sees, so nothing happens to it; its refusal is
added to the handler's answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.apis.authz_common import (
    CLUSTER_DENIED,
    GROUP_DENIED,
    TOPIC_DENIED,
    Handler,
    allowed,
    allowed_names,
    replace_fields,
)
from groupcoord.server.net.dispatch import RequestContext, then
from groupcoord.server.security.authorizer import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    READ,
    TOPIC,
)

ZERO_UUID = uuid.UUID(int=0)
#: ConfigResource.Type -> (ACL resource type, the code a denied resource gets); others go to the handler
CONFIG_RESOURCES = {
    2: (TOPIC, TOPIC_DENIED),
    4: (CLUSTER, CLUSTER_DENIED),
    8: (CLUSTER, CLUSTER_DENIED),
    16: (CLUSTER, CLUSTER_DENIED),
    32: (GROUP, GROUP_DENIED),
}


def split_checked(
    handler: Handler,
    ctx: RequestContext,
    req: Any,
    field: str,
    ok: Callable[[Any], bool],
    refuse: Callable[[tuple[Any, ...]], Any],
    merge: Callable[[Any, Any], Any],
) -> Any:
    """Run the handler on the allowed items of `req.<field>`; answer the others with `refuse`, merged in."""
    items = tuple(getattr(req, field))
    denied = tuple(i for i in items if not ok(i))
    if not denied:
        return handler(ctx, req)
    refused = refuse(denied)
    kept = tuple(i for i in items if ok(i))
    if not kept:
        return refused
    return then(handler(ctx, replace_fields(req, **{field: kept})), lambda resp: merge(resp, refused))


def create_topics(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import create_topics as ct

    def checked(ctx: RequestContext, req: Any) -> Any:
        names = [t.name for t in req.topics]
        if allowed(ctx, CREATE, CLUSTER, CLUSTER_NAME):
            may_create = set(names)
        else:
            may_create = allowed_names(ctx, CREATE, TOPIC, names)
        may_see_configs = allowed_names(ctx, DESCRIBE_CONFIGS, TOPIC, names)

        def refuse(topics: tuple[Any, ...]) -> Any:
            return ct.CreateTopicsResponse(
                topics=tuple(
                    ct.CreatableTopicResult(
                        name=t.name,
                        topic_id=ZERO_UUID,
                        error_code=TOPIC_DENIED,
                        error_message="Authorization failed.",
                        topic_config_error_code=0 if t.name in may_see_configs else TOPIC_DENIED,
                        configs=None,
                    )
                    for t in topics
                )
            )

        def hide_configs(resp: Any) -> Any:
            return replace_fields(
                resp,
                topics=tuple(
                    t
                    if t.name in may_see_configs or t.error_code != 0
                    else replace_fields(t, topic_config_error_code=TOPIC_DENIED, configs=None)
                    for t in resp.topics
                ),
            )

        def merge(resp: Any, refused: Any) -> Any:
            return replace_fields(resp, topics=tuple(resp.topics) + tuple(refused.topics))

        return then(
            split_checked(handler, ctx, req, "topics", lambda t: t.name in may_create, refuse, merge),
            hide_configs,
        )

    return checked


def delete_topics(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import delete_topics as dt

    def checked(ctx: RequestContext, req: Any) -> Any:
        def merge(resp: Any, refused: Any) -> Any:
            return replace_fields(resp, responses=tuple(resp.responses) + tuple(refused.responses))

        if ctx.version < 6:

            def refuse_names(names: tuple[str, ...]) -> Any:
                return dt.DeleteTopicsResponse(
                    responses=tuple(dt.DeletableTopicResult(name=n, error_code=TOPIC_DENIED) for n in names)
                )

            ok = allowed_names(ctx, DELETE, TOPIC, req.topic_names)
            return split_checked(handler, ctx, req, "topic_names", lambda n: n in ok, refuse_names, merge)
        topics = ctx.services.topics

        def verdict(t: Any) -> tuple[str | None, bool]:
            """(the name to answer, allowed); an unknown id is left to the handler (UNKNOWN_TOPIC_ID)."""
            if t.topic_id == ZERO_UUID or t.name is not None:
                return t.name, t.name is None or allowed(ctx, DELETE, TOPIC, t.name)
            info = topics.by_id(t.topic_id)
            if info is None:
                return None, True
            if not allowed(ctx, DESCRIBE, TOPIC, info.name):
                return None, False  # the id is not secret, the name is
            return info.name, allowed(ctx, DELETE, TOPIC, info.name)

        def refuse_states(states: tuple[Any, ...]) -> Any:
            return dt.DeleteTopicsResponse(
                responses=tuple(
                    dt.DeletableTopicResult(name=verdict(t)[0], topic_id=t.topic_id, error_code=TOPIC_DENIED)
                    for t in states
                )
            )

        return split_checked(handler, ctx, req, "topics", lambda t: verdict(t)[1], refuse_states, merge)

    return checked


def create_partitions(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import create_partitions as cp

    def checked(ctx: RequestContext, req: Any) -> Any:
        ok = allowed_names(ctx, ALTER, TOPIC, (t.name for t in req.topics))

        def refuse(topics: tuple[Any, ...]) -> Any:
            return cp.CreatePartitionsResponse(
                throttle_time_ms=0,
                results=tuple(
                    cp.CreatePartitionsTopicResult(
                        name=t.name,
                        error_code=TOPIC_DENIED,
                        error_message="The topic authorization is failed.",
                    )
                    for t in topics
                ),
            )

        def merge(resp: Any, refused: Any) -> Any:
            return replace_fields(resp, results=tuple(resp.results) + tuple(refused.results))

        return split_checked(handler, ctx, req, "topics", lambda t: t.name in ok, refuse, merge)

    return checked


def delete_records(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import delete_records as dr

    def checked(ctx: RequestContext, req: Any) -> Any:
        ok = allowed_names(ctx, DELETE, TOPIC, (t.name for t in req.topics))

        def refuse(topics: tuple[Any, ...]) -> Any:
            return dr.DeleteRecordsResponse(
                throttle_time_ms=0,
                topics=tuple(
                    dr.DeleteRecordsTopicResult(
                        name=t.name,
                        partitions=tuple(
                            dr.DeleteRecordsPartitionResult(
                                partition_index=p.partition_index, low_watermark=-1, error_code=TOPIC_DENIED
                            )
                            for p in t.partitions
                        ),
                    )
                    for t in topics
                ),
            )

        def merge(resp: Any, refused: Any) -> Any:
            return replace_fields(resp, topics=tuple(resp.topics) + tuple(refused.topics))

        return split_checked(handler, ctx, req, "topics", lambda t: t.name in ok, refuse, merge)

    return checked


def offset_for_leader_epoch(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import offset_for_leader_epoch as ol

    def checked(ctx: RequestContext, req: Any) -> Any:
        if allowed(ctx, CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return handler(ctx, req)
        ok = allowed_names(ctx, DESCRIBE, TOPIC, (t.topic for t in req.topics))

        def refuse(topics: tuple[Any, ...]) -> Any:
            return ol.OffsetForLeaderEpochResponse(
                topics=tuple(
                    ol.OffsetForLeaderTopicResult(
                        topic=t.topic,
                        partitions=tuple(
                            ol.EpochEndOffset(error_code=TOPIC_DENIED, partition=p.partition)
                            for p in t.partitions
                        ),
                    )
                    for t in topics
                )
            )

        def merge(resp: Any, refused: Any) -> Any:
            return replace_fields(resp, topics=tuple(resp.topics) + tuple(refused.topics))

        return split_checked(handler, ctx, req, "topics", lambda t: t.topic in ok, refuse, merge)

    return checked


def config_check(
    operation: int, results_field: str, result_cls: str, response_cls: str
) -> Callable[[Handler], Handler]:
    """DescribeConfigs (DESCRIBE_CONFIGS) and the two AlterConfigs (ALTER_CONFIGS): one verdict per resource."""

    def wrap(handler: Handler) -> Handler:
        def checked(ctx: RequestContext, req: Any) -> Any:
            import importlib

            module, _, result_name = result_cls.rpartition(".")
            mod = importlib.import_module(f"groupcoord.protocol.messages.{module}")

            def ok(r: Any) -> bool:
                kind = CONFIG_RESOURCES.get(r.resource_type)
                if kind is None:
                    return True  # the handler refuses an unsupported type itself
                name = CLUSTER_NAME if kind[0] == CLUSTER else r.resource_name
                return allowed(ctx, operation, kind[0], name)

            def refuse(resources: tuple[Any, ...]) -> Any:
                out = []
                for r in resources:
                    code = CONFIG_RESOURCES[r.resource_type][1]
                    fields = {"configs": ()} if results_field == "results" else {}
                    out.append(
                        getattr(mod, result_name)(
                            error_code=code,
                            error_message=ErrorCode(code).name,
                            resource_type=r.resource_type,
                            resource_name=r.resource_name,
                            **fields,
                        )
                    )
                return getattr(mod, response_cls)(throttle_time_ms=0, **{results_field: tuple(out)})

            def merge(resp: Any, refused: Any) -> Any:
                return replace_fields(
                    resp,
                    **{
                        results_field: tuple(getattr(resp, results_field))
                        + tuple(getattr(refused, results_field))
                    },
                )

            return split_checked(handler, ctx, req, "resources", ok, refuse, merge)

        return checked

    return wrap


describe_configs = config_check(
    DESCRIBE_CONFIGS, "results", "describe_configs.DescribeConfigsResult", "DescribeConfigsResponse"
)
alter_configs = config_check(
    ALTER_CONFIGS, "responses", "alter_configs.AlterConfigsResourceResponse", "AlterConfigsResponse"
)
incremental_alter_configs = config_check(
    ALTER_CONFIGS,
    "responses",
    "incremental_alter_configs.IncrementalAlterConfigsResourceResponse",
    "IncrementalAlterConfigsResponse",
)


def offset_delete(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import offset_delete as od

    def checked(ctx: RequestContext, req: Any) -> Any:
        if not allowed(ctx, DELETE, GROUP, req.group_id):
            return od.OffsetDeleteResponse(error_code=GROUP_DENIED)
        ok = allowed_names(ctx, READ, TOPIC, (t.name for t in req.topics))

        def refuse(topics: tuple[Any, ...]) -> Any:
            return od.OffsetDeleteResponse(
                error_code=0,
                topics=tuple(
                    od.OffsetDeleteResponseTopic(
                        name=t.name,
                        partitions=tuple(
                            od.OffsetDeleteResponsePartition(
                                partition_index=p.partition_index, error_code=TOPIC_DENIED
                            )
                            for p in t.partitions
                        ),
                    )
                    for t in topics
                ),
            )

        def merge(resp: Any, refused: Any) -> Any:
            if resp.error_code != 0:
                return resp  # a group-level error (e.g. GROUP_ID_NOT_FOUND) stands for the whole request
            return replace_fields(resp, topics=tuple(resp.topics) + tuple(refused.topics))

        return split_checked(handler, ctx, req, "topics", lambda t: t.name in ok, refuse, merge)

    return checked
