"""Transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, DescribeTransactions,
ListTransactions (InitProducerId with a transactional id and transactional Produce live in `data.py` and
call the same coordinator). They reach the transaction coordinator through `ctx.services.txn`.

Version notes (declarations in `protocol/messages/`, ranges as Kafka 4.x brokers declare them):
- AddPartitionsToTxn 0-5: v0-v3 are the client form (one transaction); v4-v5 the broker form (batched,
  with VerifyOnly: only check that the partitions are in the transaction, KIP-890). PRODUCER_FENCED is
  answered as INVALID_PRODUCER_EPOCH below v2, as Kafka does for clients that predate it.
- AddOffsetsToTxn 0-4, EndTxn 0-5 (v5's ProducerId/ProducerEpoch are answered as the current ones; clients
  use v5 only with transaction.version 2, which groupcoord does not finalize), same PRODUCER_FENCED rule.
- TxnOffsetCommit 0-5: the group side (pending offsets until the marker) after the producer check; v3+
  carries the member for KIP-447's generation/member checks.
- DescribeTransactions 0 and ListTransactions 0-2 for operators (kafka-transactions.sh).

Cluster mode (docs/cluster.md): every request naming a transactional id is answered by the owner of the
id's shard (`txn_routing.txn_status`; NOT_COORDINATOR elsewhere, COORDINATOR_LOAD_IN_PROGRESS while loading);
TxnOffsetCommit by the group's coordinator, which checks the producer against the transaction's durable
state (its coordinator may be another node); ListTransactions lists this node's ids, as each Kafka broker.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import add_offsets_to_txn as ao
from groupcoord.protocol.messages import add_partitions_to_txn as ap
from groupcoord.protocol.messages import describe_transactions as dtx
from groupcoord.protocol.messages import end_txn as et
from groupcoord.protocol.messages import list_transactions as ltx
from groupcoord.protocol.messages import txn_offset_commit as tc
from groupcoord.server.apis import authz_txn
from groupcoord.server.apis.commit_plan import plan_commit
from groupcoord.server.apis.declaration import Api, by_transactional_id
from groupcoord.server.apis.txn_routing import txn_status
from groupcoord.server.coordinator import types as m
from groupcoord.server.net.dispatch import Mapped, then

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

E = ErrorCode
LOADING = E.COORDINATOR_LOAD_IN_PROGRESS


def fenced_for(version: int, fenced_since: int, code: int) -> int:
    """PRODUCER_FENCED (KIP-588) only to versions that know it; older ones get INVALID_PRODUCER_EPOCH."""
    return (
        int(E.INVALID_PRODUCER_EPOCH) if code == E.PRODUCER_FENCED and version < fenced_since else int(code)
    )


# ------------------------------------------------------------------------------ AddPartitionsToTxn


def add_partitions_to_txn(ctx: RequestContext, req: ap.AddPartitionsToTxnRequest) -> Any:
    return asyncio.ensure_future(_add_partitions(ctx, req))


async def _add_partitions(
    ctx: RequestContext, req: ap.AddPartitionsToTxnRequest
) -> ap.AddPartitionsToTxnResponse:
    if ctx.version <= 3:
        results = await _add_one(
            ctx,
            req.v3_and_below_transactional_id,
            req.v3_and_below_producer_id,
            req.v3_and_below_producer_epoch,
            req.v3_and_below_topics,
            verify_only=False,
        )
        return ap.AddPartitionsToTxnResponse(results_by_topic_v3_and_below=results)
    out = []
    for t in req.transactions:
        results = await _add_one(
            ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only
        )
        out.append(ap.AddPartitionsToTxnResult(transactional_id=t.transactional_id, topic_results=results))
    return ap.AddPartitionsToTxnResponse(error_code=0, results_by_transaction=tuple(out))


async def _add_one(
    ctx: RequestContext,
    tid: str,
    pid: int,
    epoch: int,
    topics: tuple[ap.AddPartitionsToTxnTopic, ...],
    verify_only: bool,
) -> tuple[ap.AddPartitionsToTxnTopicResult, ...]:
    """Kafka's rules: unknown partitions fail as UNKNOWN_TOPIC_OR_PARTITION and the others of the request
    get OPERATION_NOT_ATTEMPTED; otherwise one coordinator error for all."""
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    known = ctx.services.topics
    errors: dict[tuple[str, int], int] = {}
    bad = {tp for tp in wanted if not known.has_partition(*tp) or known.is_internal(tp[0])}
    status = LOADING if ctx.services.loading else E.NONE
    if not verify_only and status == E.NONE:
        status = txn_status(ctx, tid)  # cluster mode: the id's coordinator shard must be served here
    if status != E.NONE:
        errors = dict.fromkeys(wanted, int(status))
    elif bad:
        errors = {
            tp: int(E.UNKNOWN_TOPIC_OR_PARTITION if tp in bad else E.OPERATION_NOT_ATTEMPTED) for tp in wanted
        }
    elif verify_only:
        txn = ctx.services.txn
        if ctx.services.routing is not None:  # cluster mode: the state its coordinator made durable
            errors = {tp: int(await txn.verify_durable(tid, pid, epoch, *tp)) for tp in wanted}
        else:
            errors = {tp: int(txn.verify(tid, pid, epoch, *tp)) for tp in wanted}
    else:
        code = await ctx.services.txn.add_partitions(tid, pid, epoch, tuple(wanted))
        errors = dict.fromkeys(wanted, fenced_for(ctx.version, 2, code))
    return tuple(
        ap.AddPartitionsToTxnTopicResult(
            name=t.name,
            results_by_partition=tuple(
                ap.AddPartitionsToTxnPartitionResult(
                    partition_index=p, partition_error_code=errors[(t.name, p)]
                )
                for p in t.partitions
            ),
        )
        for t in topics
    )


# ------------------------------------------------------------------------------ AddOffsetsToTxn / EndTxn


def add_offsets_to_txn(ctx: RequestContext, req: ao.AddOffsetsToTxnRequest) -> Any:
    status = txn_status(ctx, req.transactional_id)
    if status != E.NONE:
        return ao.AddOffsetsToTxnResponse(error_code=status)

    async def run() -> ao.AddOffsetsToTxnResponse:
        code = await ctx.services.txn.add_offsets(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id
        )
        return ao.AddOffsetsToTxnResponse(error_code=fenced_for(ctx.version, 2, code))

    return asyncio.ensure_future(run())


def end_txn(ctx: RequestContext, req: et.EndTxnRequest) -> Any:
    status = txn_status(ctx, req.transactional_id)
    if status != E.NONE:
        return et.EndTxnResponse(error_code=status)

    async def run() -> et.EndTxnResponse:
        txn = ctx.services.txn
        code = await txn.end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed)
        v = txn.describe(req.transactional_id)
        return et.EndTxnResponse(
            error_code=fenced_for(ctx.version, 2, code),
            producer_id=v.producer_id if v is not None and code == E.NONE else -1,
            producer_epoch=v.producer_epoch if v is not None and code == E.NONE else -1,
        )

    return asyncio.ensure_future(run())


# ------------------------------------------------------------------------------------ TxnOffsetCommit


def txn_offset_commit(ctx: RequestContext, req: tc.TxnOffsetCommitRequest) -> Any:
    routing = ctx.services.routing
    if routing is None or ctx.services.loading:
        producer_error = (
            LOADING
            if ctx.services.loading
            else ctx.services.txn.check_offsets_producer(
                req.transactional_id, req.producer_id, req.producer_epoch, req.group_id
            )
        )
        return _txn_offset_commit(ctx, req, producer_error)
    # cluster mode: sent to the group's coordinator, which may not coordinate the transactional id
    status = routing.group_status(req.group_id)
    if status != E.NONE:
        return _txn_offset_commit(ctx, req, status)

    async def run() -> Any:
        code = await ctx.services.txn.check_offsets_producer_durable(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id
        )
        result = _txn_offset_commit(ctx, req, code)
        if isinstance(result, Mapped):
            return result.convert(await result.src)
        return await result if isinstance(result, asyncio.Future) else result

    return asyncio.ensure_future(run())


def _txn_offset_commit(ctx: RequestContext, req: tc.TxnOffsetCommitRequest, producer_error: ErrorCode) -> Any:
    if producer_error == E.INVALID_TXN_STATE and ctx.version >= 4:
        # Kafka's transaction verification (AddPartitionsToTxnManager): a group not in the transaction is
        # TRANSACTION_ABORTABLE (120) to v4+ (clients that handle it), INVALID_TXN_STATE to older ones
        producer_error = E.TRANSACTION_ABORTABLE
    plan = plan_commit(
        req.topics,
        ctx.services.topics.has_partition,
        error_for_all=fenced_for(ctx.version, 2, producer_error) if producer_error else 0,
    )

    def respond(result: m.OffsetCommitResult | None) -> tc.TxnOffsetCommitResponse:
        return tc.TxnOffsetCommitResponse(
            topics=tuple(
                tc.TxnOffsetCommitResponseTopic(
                    name=name,
                    partitions=tuple(
                        tc.TxnOffsetCommitResponsePartition(partition_index=i, error_code=e) for i, e in parts
                    ),
                )
                for name, parts in plan.answer(result)
            )
        )

    if not plan.accepted:
        return respond(None)
    mreq = m.TxnOffsetCommitRequest(
        version=ctx.version,
        group_id=req.group_id,
        producer_id=req.producer_id,
        generation_id=req.generation_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id,
        topics=tuple(plan.accepted),
    )
    machine = ctx.services.machine
    failed = plan.failed()
    topics = ctx.services.topics

    def topic_id(name: str) -> uuid.UUID | None:  # a KIP-848 group checks assignment epochs by topic id
        info = topics.get(name)
        return None if info is None else info.topic_id

    call = ctx.services.runtime.call_parked(
        req.group_id, lambda tok, now: machine.txn_commit_offsets(mreq, tok, now, topic_id), lambda: failed
    )
    return then(call, respond)


# ------------------------------------------------------------------------------------------ operators


def describe_transactions(
    ctx: RequestContext, req: dtx.DescribeTransactionsRequest
) -> dtx.DescribeTransactionsResponse:
    out = []
    for tid in req.transactional_ids:
        status = txn_status(ctx, tid)  # cluster mode: NOT_COORDINATOR for an id coordinated elsewhere
        v = ctx.services.txn.describe(tid) if status == E.NONE else None
        if v is None:
            code = status if status != E.NONE else E.TRANSACTIONAL_ID_NOT_FOUND
            out.append(
                dtx.TransactionState(
                    error_code=code,
                    transactional_id=tid,
                    transaction_state="",
                    transaction_timeout_ms=0,
                    transaction_start_time_ms=-1,
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in v.partitions:
            by_topic.setdefault(topic, []).append(partition)
        out.append(
            dtx.TransactionState(
                error_code=0,
                transactional_id=tid,
                transaction_state=v.state,
                transaction_timeout_ms=v.timeout_ms,
                transaction_start_time_ms=v.start_ms,
                producer_id=v.producer_id,
                producer_epoch=v.producer_epoch,
                topics=tuple(dtx.TopicData(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
            )
        )
    return dtx.DescribeTransactionsResponse(transaction_states=tuple(out))


def list_transactions(ctx: RequestContext, req: ltx.ListTransactionsRequest) -> ltx.ListTransactionsResponse:
    if ctx.services.loading:
        return ltx.ListTransactionsResponse(error_code=LOADING)
    try:
        listed, unknown = ctx.services.txn.list(
            tuple(req.state_filters),
            tuple(req.producer_id_filters),
            req.duration_filter,
            req.transactional_id_pattern,
        )
    except re.error:
        return ltx.ListTransactionsResponse(error_code=E.INVALID_REGULAR_EXPRESSION)
    return ltx.ListTransactionsResponse(
        error_code=0,
        unknown_state_filters=tuple(unknown),
        transaction_states=tuple(
            ltx.ListedTransaction(
                transactional_id=t.transactional_id, producer_id=t.producer_id, transaction_state=t.state
            )
            for t in listed
        ),
    )


def _added_txn_ids(version: int, req: ap.AddPartitionsToTxnRequest) -> tuple[str, ...]:
    if version < 4:
        return (req.v3_and_below_transactional_id,)
    return tuple(t.transactional_id for t in req.transactions)


# each handler answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS per transactional id (txn_routing.py);
# TxnOffsetCommit also asks for its group's shard (txn_offset_commit)
APIS = (
    Api(
        key=ApiKey.ADD_PARTITIONS_TO_TXN,
        handler=add_partitions_to_txn,
        check=authz_txn.add_partitions_to_txn,
        txn_ids=_added_txn_ids,
    ),
    Api(
        key=ApiKey.ADD_OFFSETS_TO_TXN,
        handler=add_offsets_to_txn,
        check=authz_txn.add_offsets_to_txn,
        txn_ids=by_transactional_id,
    ),
    Api(key=ApiKey.END_TXN, handler=end_txn, check=authz_txn.end_txn, txn_ids=by_transactional_id),
    Api(
        key=ApiKey.TXN_OFFSET_COMMIT,
        handler=txn_offset_commit,
        check=authz_txn.txn_offset_commit,
        txn_ids=by_transactional_id,
    ),
    Api(
        key=ApiKey.DESCRIBE_TRANSACTIONS,
        handler=describe_transactions,
        check=authz_txn.describe_transactions,
        txn_ids=lambda version, req: tuple(req.transactional_ids),
    ),
    Api(key=ApiKey.LIST_TRANSACTIONS, handler=list_transactions, check=authz_txn.list_transactions),
)
