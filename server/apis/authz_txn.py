"""ACL checks of the write path (issue 18): Produce, InitProducerId and the transaction APIs, as Kafka's
`KafkaApis` makes them.

| API | needs | denied |
|---|---|---|
| Produce | WRITE topic; transactional batches also WRITE TransactionalId | 29 per partition; 53 for every partition |
| InitProducerId | transactional: WRITE TransactionalId; idempotent: IDEMPOTENT_WRITE cluster or WRITE on some topic | 53 / 31 |
| FindCoordinator (transaction key) | DESCRIBE TransactionalId | 53 for that key |
| AddPartitionsToTxn v0-3 | WRITE TransactionalId, WRITE each topic (internal topics never) | 53 for all; 29 per partition, the others 55 |
| AddPartitionsToTxn v4+ | CLUSTER_ACTION cluster (broker to broker only) | 31 |
| AddOffsetsToTxn | WRITE TransactionalId, READ group | 53 / 30 |
| EndTxn | WRITE TransactionalId | 53 |
| TxnOffsetCommit | WRITE TransactionalId, READ group, READ each topic | 53 / 30 for every partition; 29 per partition |
| DescribeTransactions | DESCRIBE TransactionalId; topics it may not DESCRIBE are left out | 53 for that id |
| ListTransactions | (none) | ids it may not DESCRIBE are left out |

Since KIP-679 (Kafka 3.0) an idempotent Produce needs no IDEMPOTENT_WRITE: WRITE on the topic is enough, and
InitProducerId is where an idempotent producer is let in or not.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import structlog

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.apis.authz_common import (
    CLUSTER_DENIED,
    GROUP_DENIED,
    TOPIC_DENIED,
    TXN_ID_DENIED,
    Handler,
    allowed,
    allowed_names,
    replace_fields,
)
from groupcoord.server.log.batch import HEADER_SIZE, LOG_OVERHEAD, parse_header, peek_length
from groupcoord.server.net.dispatch import RequestContext, then
from groupcoord.server.security.authorizer import (
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    DESCRIBE,
    GROUP,
    IDEMPOTENT_WRITE,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)

log = structlog.get_logger("groupcoord.authz")


def has_transactional_records(req: Any) -> bool:
    """Whether any batch of the request is transactional (Kafka's `RequestUtils.hasTransactionalRecords`)."""
    for t in req.topic_data:
        for p in t.partition_data:
            buf = p.records or b""
            pos = 0
            while len(buf) - pos >= HEADER_SIZE:
                if parse_header(buf, pos).is_transactional:
                    return True
                _, length = peek_length(buf, pos)
                if length <= 0:
                    break
                pos += LOG_OVERHEAD + length
    return False


def with_names(ctx: RequestContext, req: Any) -> Any:
    """The request with each v13 topic's name filled in from its id (left empty for an unknown id), so the
    ACL check reads names at every version."""
    if ctx.version < 13:
        return req
    topics = ctx.services.topics
    named = []
    for t in req.topic_data:
        info = topics.by_id(t.topic_id)
        named.append(dataclasses.replace(t, name=info.name) if info is not None else t)
    return dataclasses.replace(req, topic_data=tuple(named))


def produce(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import produce as pr

    def refused(topics: Any, code: int) -> tuple[Any, ...]:
        return tuple(
            pr.TopicProduceResponse(
                name=t.name,
                topic_id=t.topic_id,
                partition_responses=tuple(
                    pr.PartitionProduceResponse(index=p.index, error_code=code, base_offset=-1)
                    for p in t.partition_data
                ),
            )
            for t in topics
        )

    def closed(ctx: RequestContext, why: str) -> None:
        # acks=0: Kafka answers nothing and closes the connection when a partition fails
        ctx.conn.close(why)
        return None

    def checked(ctx: RequestContext, req: Any) -> Any:
        req = with_names(
            ctx, req
        )  # v13: topics by id; an unknown id is no topic to authorize (UNKNOWN_TOPIC_ID)
        if has_transactional_records(req) and (
            req.transactional_id is None or not allowed(ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id)
        ):
            if req.acks == 0:
                return closed(ctx, "produce: TRANSACTIONAL_ID_AUTHORIZATION_FAILED with acks=0")
            return pr.ProduceResponse(responses=refused(req.topic_data, TXN_ID_DENIED))
        ok = allowed_names(ctx, WRITE, TOPIC, (t.name for t in req.topic_data if t.name))
        denied = tuple(t for t in req.topic_data if t.name and t.name not in ok)
        if not denied:
            return handler(ctx, req)
        kept = tuple(t for t in req.topic_data if not t.name or t.name in ok)
        if req.acks == 0:
            if kept:
                handler(ctx, replace_fields(req, topic_data=kept))
            return closed(ctx, "produce: TOPIC_AUTHORIZATION_FAILED with acks=0")
        if not kept:
            return pr.ProduceResponse(responses=refused(denied, TOPIC_DENIED))
        return then(
            handler(ctx, replace_fields(req, topic_data=kept)),
            lambda resp: replace_fields(
                resp, responses=tuple(resp.responses) + refused(denied, TOPIC_DENIED)
            ),
        )

    return checked


def init_producer_id(handler: Handler) -> Handler:
    from groupcoord.protocol.messages.init_producer_id import InitProducerIdResponse

    def checked(ctx: RequestContext, req: Any) -> Any:
        access = ctx.services.access
        if req.transactional_id is not None:
            if not allowed(ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id):
                return InitProducerIdResponse(error_code=TXN_ID_DENIED, producer_id=-1, producer_epoch=-1)
        elif not allowed(
            ctx, IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME
        ) and not access.authorize_by_resource_type(ctx.principal, ctx.conn.peer_host, WRITE, TOPIC):
            return InitProducerIdResponse(error_code=CLUSTER_DENIED, producer_id=-1, producer_epoch=-1)
        return handler(ctx, req)

    return checked


def add_partitions_to_txn(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import add_partitions_to_txn as ap

    def results(codes: dict[tuple[str, int], int]) -> tuple[Any, ...]:
        by_topic: dict[str, list[Any]] = {}
        for (topic, part), code in codes.items():
            by_topic.setdefault(topic, []).append(
                ap.AddPartitionsToTxnPartitionResult(partition_index=part, partition_error_code=code)
            )
        return tuple(
            ap.AddPartitionsToTxnTopicResult(name=n, results_by_partition=tuple(ps))
            for n, ps in by_topic.items()
        )

    def checked(ctx: RequestContext, req: Any) -> Any:
        if ctx.version >= 4:
            if not allowed(ctx, CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
                return ap.AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=CLUSTER_DENIED)
            return handler(ctx, req)
        tid = req.v3_and_below_transactional_id
        pairs = {(t.name, p): 0 for t in req.v3_and_below_topics for p in t.partitions}
        if not allowed(ctx, WRITE, TRANSACTIONAL_ID, tid):
            codes = dict.fromkeys(pairs, int(TXN_ID_DENIED))
            return ap.AddPartitionsToTxnResponse(
                throttle_time_ms=0, results_by_topic_v3_and_below=results(codes)
            )
        topics = ctx.services.topics
        ok = allowed_names(ctx, WRITE, TOPIC, (n for n, _ in pairs if not topics.is_internal(n)))
        if all(n in ok for n, _ in pairs):
            return handler(ctx, req)
        # any refused partition fails the whole transaction: the others were not attempted (Kafka's answer)
        codes = {
            (n, p): int(TOPIC_DENIED if n not in ok else ErrorCode.OPERATION_NOT_ATTEMPTED) for n, p in pairs
        }
        return ap.AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=results(codes))

    return checked


def add_offsets_to_txn(handler: Handler) -> Handler:
    from groupcoord.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnResponse

    def checked(ctx: RequestContext, req: Any) -> Any:
        if not allowed(ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id):
            return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=TXN_ID_DENIED)
        if not allowed(ctx, READ, GROUP, req.group_id):
            return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=GROUP_DENIED)
        return handler(ctx, req)

    return checked


def end_txn(handler: Handler) -> Handler:
    from groupcoord.protocol.messages.end_txn import EndTxnResponse

    def checked(ctx: RequestContext, req: Any) -> Any:
        if not allowed(ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id):
            return EndTxnResponse(throttle_time_ms=0, error_code=TXN_ID_DENIED)
        return handler(ctx, req)

    return checked


def txn_offset_commit(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import txn_offset_commit as tc

    def refused(topics: Any, code: int) -> tuple[Any, ...]:
        return tuple(
            tc.TxnOffsetCommitResponseTopic(
                name=t.name,
                partitions=tuple(
                    tc.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                    for p in t.partitions
                ),
            )
            for t in topics
        )

    def checked(ctx: RequestContext, req: Any) -> Any:
        if not allowed(ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id):
            return tc.TxnOffsetCommitResponse(throttle_time_ms=0, topics=refused(req.topics, TXN_ID_DENIED))
        if not allowed(ctx, READ, GROUP, req.group_id):
            return tc.TxnOffsetCommitResponse(throttle_time_ms=0, topics=refused(req.topics, GROUP_DENIED))
        ok = allowed_names(ctx, READ, TOPIC, (t.name for t in req.topics))
        denied = tuple(t for t in req.topics if t.name not in ok)
        if not denied:
            return handler(ctx, req)
        kept = tuple(t for t in req.topics if t.name in ok)
        if not kept:
            return tc.TxnOffsetCommitResponse(throttle_time_ms=0, topics=refused(denied, TOPIC_DENIED))
        return then(
            handler(ctx, replace_fields(req, topics=kept)),
            lambda resp: replace_fields(resp, topics=tuple(resp.topics) + refused(denied, TOPIC_DENIED)),
        )

    return checked


def describe_transactions(handler: Handler) -> Handler:
    from groupcoord.protocol.messages import describe_transactions as dtx

    def checked(ctx: RequestContext, req: Any) -> Any:
        ok = allowed_names(ctx, DESCRIBE, TRANSACTIONAL_ID, req.transactional_ids)

        def fix(resp: Any) -> Any:
            states = []
            for s in resp.transaction_states:
                if s.transactional_id not in ok:
                    s = dtx.TransactionState(
                        error_code=TXN_ID_DENIED,
                        transactional_id=s.transactional_id,
                        transaction_state="",
                        transaction_timeout_ms=0,
                        transaction_start_time_ms=-1,
                        producer_id=-1,
                        producer_epoch=-1,
                        topics=(),
                    )
                else:
                    s = replace_fields(
                        s, topics=tuple(t for t in s.topics if allowed(ctx, DESCRIBE, TOPIC, t.topic))
                    )
                states.append(s)
            return replace_fields(resp, transaction_states=tuple(states))

        return then(handler(ctx, req), fix)

    return checked


def list_transactions(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: Any) -> Any:
        return then(
            handler(ctx, req),
            lambda resp: replace_fields(
                resp,
                transaction_states=tuple(
                    s
                    for s in resp.transaction_states
                    if allowed(ctx, DESCRIBE, TRANSACTIONAL_ID, s.transactional_id)
                ),
            ),
        )

    return checked
