"""Three-node clusters on loopback ports sharing one throw-away PostgreSQL database."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from typing import Any

import asyncpg

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.messages import offset_commit as oc
from tests.conftest import ServerProcess

#: `metadata_max_age_ms` for aiokafka consumers in cluster tests. aiokafka 0.14 resets a position (ListOffsets)
#: at the leader its metadata names and, answered NOT_LEADER_OR_FOLLOWER, retries the same node without
#: refreshing its metadata, failing every partition of that request, until its periodic refresh (5 minutes
#: by default). Partitions move while nodes join and fail over, and a node's Metadata may name the previous
#: leader for up to a lease tick: a consumer that asked in that window read one partition of three and stalled
#: on the two whose stale leader was the same node (CI, 2026-11-26). A short period lets it find the leader,
#: as the Java client does at once.
AIOKAFKA_METADATA_MAX_AGE_MS = 1000


def start_nodes(server_factory, url: str, count: int = 3, *extra: str) -> dict[int, ServerProcess]:  # type: ignore[no-untyped-def]
    return {n: server_factory("--cluster", url, "--node-id", str(n), *extra) for n in range(1, count + 1)}


async def lease_counts(url: str) -> dict[int, int]:
    """node id -> shards it holds an unexpired lease on."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT owner, count(*) FROM shard_lease WHERE expires_at > now() GROUP BY owner"
        )
    finally:
        await conn.close()
    return {r[0]: r[1] for r in rows}


async def wait_balanced(url: str, nodes: list[int], shards: int = 50, timeout: float = 60) -> dict[int, int]:
    """Until every shard is held and each of `nodes` holds its share (no handover still to come)."""
    deadline = time.monotonic() + timeout
    while True:
        counts = await lease_counts(url)
        fair = -(-shards // len(nodes))  # nobody above its share: no more handovers pending
        if sum(counts.values()) == shards and all(0 < counts.get(n, 0) <= fair for n in nodes):
            return counts
        if time.monotonic() > deadline:
            raise AssertionError(f"leases not spread over {nodes} within {timeout}s: {counts}")
        await asyncio.sleep(0.2)


def raw_commit(sock: socket.socket, group: str, topic: str, offset: int, correlation: int) -> None:
    """Send an OffsetCommit v2 of a simple group (no members: generation -1), partition 0; no read."""
    body = oc.OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=(
            oc.OffsetCommitRequestTopic(
                name=topic,
                partitions=(
                    oc.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=offset, committed_metadata=""
                    ),
                ),
            ),
        ),
    )
    sock.sendall(encode_request(8, 2, correlation, body))


def read_commit_error(sock: socket.socket) -> int:
    """The partition's error code of the next OffsetCommit v2 response on `sock`."""
    size = struct.unpack(">i", _exactly(sock, 4))[0]
    _, resp = decode_response(_exactly(sock, size), 8, 2)
    return resp.topics[0].partitions[0].error_code


def _exactly(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


async def shard_owner(url: str, shard: int) -> int | None:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(
            "SELECT owner FROM shard_lease WHERE shard = $1 AND expires_at > now()", shard
        )
    finally:
        await conn.close()


async def committed(url: str, group: str) -> int | None:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval("SELECT committed_offset FROM offsets WHERE group_id = $1", group)
    finally:
        await conn.close()


async def fetched_offset(consumer: Any, tp: Any, timeout: float = 60) -> int | None:
    """`consumer.committed(tp)` once the group's new coordinator has loaded the offsets.

    aiokafka reads only the per-partition error codes of an OffsetFetch answer and ignores the top-level one
    that v2+ answers carry (as Kafka's do) while a coordinator is loading or moving; such an answer has no
    partitions, so aiokafka returns None for a committed offset. Right after a failover a fetch can meet that
    window: ask again until an answer names the partition (a client quirk, not a coordinator error)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = await consumer.committed(tp)
        if got is not None or asyncio.get_running_loop().time() >= deadline:
            return got
        await asyncio.sleep(0.25)


async def partition_leases(url: str, topic: str) -> dict[int, tuple[int, int]]:
    """partition -> (leader node id, leader epoch) for the unexpired leases of `topic`."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT partition, owner, epoch FROM partition_lease WHERE topic = $1 AND expires_at > now()",
            topic,
        )
    finally:
        await conn.close()
    return {r[0]: (r[1], r[2]) for r in rows}


async def wait_partitions_spread(
    url: str, topic: str, partitions: int, nodes: list[int], timeout: float = 30
) -> dict[int, tuple[int, int]]:
    """Until every partition of `topic` has a leader among `nodes` and no node leads more than its share."""
    deadline = time.monotonic() + timeout
    fair = -(-partitions // len(nodes))
    while True:
        leases = await partition_leases(url, topic)
        led = [owner for owner, _ in leases.values()]
        if len(leases) == partitions and all(o in nodes and led.count(o) <= fair for o in led):
            return leases
        if time.monotonic() > deadline:
            raise AssertionError(f"partitions of {topic} not spread over {nodes} within {timeout}s: {leases}")
        await asyncio.sleep(0.2)


async def stored_batches(url: str, topic: str, partition: int) -> list[tuple[int, int]]:
    """(base offset, last offset) of the record batches PostgreSQL holds for one partition."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT base_offset, last_offset FROM record_batches WHERE topic = $1 AND partition = $2"
            " ORDER BY base_offset",
            topic,
            partition,
        )
    finally:
        await conn.close()
    return [(r[0], r[1]) for r in rows]
