"""`MarkerRouter`: cluster mode's transaction coordinator writes its COMMIT/ABORT markers through the
partition leaders and completes transactional offsets at the groups' coordinators (issue 27 item 3).

Why this shape: a marker is a batch of the partition's log, and only the holder of the partition's lease may
append to it (a deposed leader can never append, cluster_log.py). So a marker for a partition led here is
appended by the local `ClusterLog` under its lease fence; one for a partition led by another node is sent to
that node as a WriteTxnMarkers request, as Kafka's `TransactionMarkerChannelManager` does, and that node
appends it under its own lease. The same for the groups' pending transactional offsets: a group whose shard
another node owns is completed there by a WriteTxnMarkers for `__consumer_offsets` partition = the group's
shard (Kafka's marker to the group's `__consumer_offsets` partition leader).

A leader or owner being failed over (nobody holds the lease, NOT_LEADER_OR_FOLLOWER, a broken connection)
is retried every `RETRY_S` for up to `retry_for_s` (three lease TTLs by default: a failover takes at most
one); past that the transaction stays in Prepare* and the coordinator's periodic check retries it, as Kafka
retries markers until they are written. Markers are idempotent for the reader (a second COMMIT of the same
producer and epoch closes nothing), so a retry after an answer lost on the wire is harmless.

The forwarded request goes to the address the leader registered, its inter-broker listener, over a
connection `connect` opens: TLS and SASL as that listener needs, with this node's own credentials
(server/security/inter_broker.py; Kafka's `inter.broker.listener.name`). Where an authorizer is on, this
node's principal needs CLUSTER_ACTION on the Cluster (or to be a super user), as Kafka's brokers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Awaitable, Callable

import structlog

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import write_txn_markers as wm
from groupcoord.server.cluster.cluster_log import ClusterLog
from groupcoord.server.cluster.leases import NodeInfo
from groupcoord.server.cluster.node import ClusterNode
from groupcoord.server.storage.shards import shard_of

log = structlog.get_logger("groupcoord.cluster")

E = ErrorCode
RETRY_S = 0.2
VERSION = 1
OFFSETS_TOPIC = "__consumer_offsets"
#: errors that mean "not there yet" (a leader or owner moving): try again
RETRIABLE = {
    E.NOT_LEADER_OR_FOLLOWER,
    E.LEADER_NOT_AVAILABLE,
    E.NOT_COORDINATOR,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.COORDINATOR_NOT_AVAILABLE,
    E.KAFKA_STORAGE_ERROR,
    E.REQUEST_TIMED_OUT,
}

CompleteLocal = Callable[[str, int, bool], Awaitable[bool]]
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]
#: opens a connection to another node's inter-broker listener, TLS and SASL done
Connect = Callable[[str, int], Awaitable[Connection]]


async def plaintext(host: str, port: int) -> Connection:
    """`Connect` for a PLAINTEXT inter-broker listener."""
    return await asyncio.wait_for(asyncio.open_connection(host, port), 10)


class MarkerRouter:
    """The transaction coordinator's `write_marker` and `complete_group` in cluster mode."""

    def __init__(
        self,
        node: ClusterNode,
        logs: ClusterLog,
        complete_local: CompleteLocal,
        *,
        retry_for_s: float,
        connect: Connect = plaintext,
    ) -> None:
        self.node = node
        self.connect = connect
        self.logs = logs
        self.complete_local = complete_local
        self.retry_for_s = retry_for_s
        self._conns: dict[tuple[str, int], Connection] = {}
        self._conn_locks: dict[tuple[str, int], asyncio.Lock] = {}
        self._correlation = 0
        self.forwarded = 0  # markers sent to other nodes (tests, metrics)

    async def write_marker(
        self, topic: str, partition: int, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int
    ) -> ErrorCode:
        async def once() -> ErrorCode:
            leader = self.node.partition_leader(topic, partition)
            if leader is None:
                if self.logs.topic(topic) is None:
                    return E.UNKNOWN_TOPIC_OR_PARTITION  # deleted: no marker needed
                return E.LEADER_NOT_AVAILABLE
            target = leader[0]
            if target.node_id == self.node.node_id:
                return await self.logs.write_marker(
                    topic, partition, producer_id, epoch, commit, coordinator_epoch
                )
            return await self._send(target, topic, partition, producer_id, epoch, commit, coordinator_epoch)

        return await self._retrying(once, f"{topic}-{partition}")

    async def complete_group(self, group_id: str, producer_id: int, commit: bool) -> bool:
        async def once() -> ErrorCode:
            status = self.node.group_status(group_id)
            if status == E.NONE:
                return (
                    E.NONE if await self.complete_local(group_id, producer_id, commit) else E.NOT_COORDINATOR
                )
            if status == E.COORDINATOR_LOAD_IN_PROGRESS:
                return status
            owner = self.node.coordinator_of(group_id)
            if owner is None:
                return E.COORDINATOR_NOT_AVAILABLE
            shard = shard_of(group_id, self.node.shards)
            # the producer epoch is not checked for offsets (Kafka's group side neither); the marker's epoch
            return await self._send(owner, OFFSETS_TOPIC, shard, producer_id, 0, commit, 0)

        return await self._retrying(once, f"group {group_id}") == E.NONE

    async def _retrying(self, once: Callable[[], Awaitable[ErrorCode]], what: str) -> ErrorCode:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.retry_for_s
        while True:
            try:
                code = await once()
            except (OSError, EOFError, asyncio.IncompleteReadError, TimeoutError) as e:
                log.info("transaction marker not delivered; retrying", target=what, error=repr(e))
                code = E.REQUEST_TIMED_OUT
            except Exception as e:  # an answer we cannot read: never fail the transaction's request on it
                log.warning("transaction marker answer unreadable; retrying", target=what, error=repr(e))
                code = E.REQUEST_TIMED_OUT
            if code not in RETRIABLE or loop.time() >= deadline:
                if code == E.CLUSTER_AUTHORIZATION_FAILED:  # an operator's mistake: say what to fix
                    log.warning(
                        "transaction marker refused: this node's inter-broker principal needs CLUSTER_ACTION on"
                        " the Cluster (or to be a super user) on the other nodes",
                        target=what,
                        error=code.name,
                    )
                elif code not in (E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION):
                    log.warning("transaction marker not written", target=what, error=code.name)
                return code
            await asyncio.sleep(RETRY_S)

    async def _send(
        self,
        target: NodeInfo,
        topic: str,
        partition: int,
        producer_id: int,
        epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        """One WriteTxnMarkers v1 to `target`, one marker, one partition; its error code."""
        body = wm.WriteTxnMarkersRequest(
            markers=(
                wm.WritableTxnMarker(
                    producer_id=producer_id,
                    producer_epoch=epoch,
                    transaction_result=commit,
                    topics=(wm.WritableTxnMarkerTopic(name=topic, partition_indexes=(partition,)),),
                    coordinator_epoch=coordinator_epoch,
                ),
            )
        )
        address = (target.host, target.port)
        lock = self._conn_locks.setdefault(address, asyncio.Lock())
        async with lock:
            try:
                reader, writer = await self._connection(target)
                self._correlation += 1
                writer.write(encode_request(ApiKey.WRITE_TXN_MARKERS, VERSION, self._correlation, body))
                await writer.drain()
                wait = max(1.0, self.retry_for_s / 2)  # a paused node: give up and retry at the next leader
                size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), wait))[0]
                frame = await asyncio.wait_for(reader.readexactly(size), wait)
            except BaseException:
                self._forget(address)
                raise
        _, resp = decode_response(frame, ApiKey.WRITE_TXN_MARKERS, VERSION)
        self.forwarded += 1
        for m in resp.markers:
            for t in m.topics:
                for p in t.partitions:
                    try:
                        return ErrorCode(p.error_code)
                    except ValueError:
                        return E.UNKNOWN_SERVER_ERROR
        return E.UNKNOWN_SERVER_ERROR

    async def _connection(self, target: NodeInfo) -> Connection:
        address = (target.host, target.port)
        conn = self._conns.get(address)
        if conn is not None and not conn[1].is_closing():
            return conn
        conn = await self.connect(target.host, target.port)
        self._conns[address] = conn
        return conn

    def _forget(self, address: tuple[str, int]) -> None:
        conn = self._conns.pop(address, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn[1].close()

    def close(self) -> None:
        for address in list(self._conns):
            self._forget(address)
