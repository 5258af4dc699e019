"""Produce (0): append record batches to partition logs (the log lives in `groupcoord.server.log`).

Version notes:
- Advertised 0-13, served 3-13: v0-2 (removed in Kafka 4.0) close the connection, as Kafka's (KAFKA-18659;
  the dispatcher does it). Magic-2 record batches only.
- acks=0 gets no response at all, as in Kafka.
- A transactional produce (TransactionalId set) is verified against the transaction coordinator right before
  the append: the partition must be in the producer's ongoing transaction (KIP-890 part 1), else
  INVALID_TXN_STATE (or INVALID_PRODUCER_EPOCH for an older epoch); transactional batches without a
  TransactionalId are refused. v12's implicit AddPartitionsToTxn belongs to transaction.version 2, which
  groupcoord does not finalize (`features.FEATURES`), so a v12+ transactional produce is verified the same way.
- v10+: a NOT_LEADER_OR_FOLLOWER answer in cluster mode carries the partition's current leader and its
  endpoint (KIP-951), so the producer moves without a Metadata round trip.
- v13: topics by id (KIP-516); an id we do not know is UNKNOWN_TOPIC_ID for each of its partitions.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import produce as pr
from groupcoord.server.apis import authz_txn
from groupcoord.server.apis.declaration import Api, by_transactional_id
from groupcoord.server.log.batch import HEADER_SIZE, parse_header
from groupcoord.server.log.manager import AppendResult

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext


def produce(ctx: RequestContext, req: pr.ProduceRequest) -> Any:
    return asyncio.ensure_future(_produce(ctx, req))


def _topic_name(ctx: RequestContext, t: pr.TopicProduceData) -> str | None:
    """The topic's name: as sent below v13, looked up by its id from v13 (None: an unknown id)."""
    if ctx.version < 13:
        return t.name
    info = ctx.services.topics.by_id(t.topic_id)
    return None if info is None else info.name


async def _produce(ctx: RequestContext, req: pr.ProduceRequest) -> pr.ProduceResponse | None:
    jobs: list[Any] = []
    for t in req.topic_data:
        name = _topic_name(ctx, t)
        for p in t.partition_data:
            if name is None:
                jobs.append(_failed(ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."))
            elif ctx.services.topics.is_internal(name):
                jobs.append(
                    _failed(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {name}")
                )
            elif p.records is None:
                jobs.append(_failed(ErrorCode.CORRUPT_MESSAGE, "null records"))
            else:
                jobs.append(_append(ctx, req.transactional_id, name, p.index, p.records, req.acks))
    results = await asyncio.gather(*jobs)
    if req.acks == 0:
        return None
    it = iter(results)
    endpoints: dict[int, pr.NodeEndpoint] = {}
    responses = []
    for t in req.topic_data:
        name = _topic_name(ctx, t)
        parts = tuple(_partition_response(ctx, name, p.index, next(it), endpoints) for p in t.partition_data)
        responses.append(pr.TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=parts))
    return pr.ProduceResponse(responses=tuple(responses), node_endpoints=tuple(endpoints.values()))


async def _append(
    ctx: RequestContext, tid: str | None, topic: str, partition: int, records: bytes, acks: int
) -> Any:
    """Verify a transactional batch with the coordinator, then append, with no `await` in between: the
    transaction cannot end (markers written) between the check and the append."""
    header = parse_header(records) if len(records) >= HEADER_SIZE else None
    if header is not None and header.is_transactional:
        if tid is None:
            return await _failed(ErrorCode.INVALID_TXN_STATE, "a transactional batch needs a TransactionalId")
        txn = ctx.services.txn
        pid, epoch = header.producer_id, header.producer_epoch
        if ctx.services.routing is not None:  # cluster mode: checked under the partition's lock, durably
            return await ctx.services.logs.append(
                topic,
                partition,
                records,
                acks,
                verify=lambda: txn.verify_durable(tid, pid, epoch, topic, partition),
            )
        code = txn.verify(tid, pid, epoch, topic, partition)
        if code != ErrorCode.NONE:
            return await _failed(code, f"{topic}-{partition} is not in the ongoing transaction of {tid!r}")
    return await ctx.services.logs.append(topic, partition, records, acks)


async def _failed(code: ErrorCode, message: str) -> Any:
    return AppendResult(code, -1, -1, error_message=message)


def _partition_response(
    ctx: RequestContext, topic: str | None, index: int, r: Any, endpoints: dict[int, pr.NodeEndpoint]
) -> pr.PartitionProduceResponse:
    leader = pr.LeaderIdAndEpoch()
    routing = ctx.services.routing
    if ctx.version >= 10 and r.error == ErrorCode.NOT_LEADER_OR_FOLLOWER and routing and topic is not None:
        led = routing.partition_leader(topic, index)
        if led is not None:  # KIP-951: where the producer should go now
            node, epoch = led
            leader = pr.LeaderIdAndEpoch(leader_id=node.node_id, leader_epoch=epoch)
            host, port = node.address(ctx.listener.name)
            endpoints[node.node_id] = pr.NodeEndpoint(node_id=node.node_id, host=host, port=port)
    return pr.PartitionProduceResponse(
        index=index,
        error_code=r.error,
        base_offset=r.base_offset,
        log_append_time_ms=r.log_append_time_ms,
        log_start_offset=r.log_start_offset,
        error_message=r.error_message if ctx.version >= 8 else None,
        current_leader=leader,
    )


APIS = (Api(key=ApiKey.PRODUCE, handler=produce, check=authz_txn.produce, txn_ids=by_transactional_id),)
