"""Issue 36 item 1: a node paused (SIGSTOP) or cut from PostgreSQL in the middle of a fenced write
transaction no longer keeps its shards unowned. Its open transaction locked the shards' lease rows
`FOR SHARE`, and the other nodes take expired leases `FOR UPDATE SKIP LOCKED`: before the fix they skipped
those rows for as long as the transaction stayed open (for ever while paused). Now PostgreSQL rolls such a
transaction back after half a lease TTL (server/storage/pg_liveness.py), so every shard of the stuck node is
taken over within about the TTL plus a tick, while the node is still stuck, and nothing acknowledged is lost.

Each test drives commits to one group per shard of the victim node, stops or cuts the victim at a moment its
backend at PostgreSQL is idle inside a transaction that holds lease rows (retrying the stop until it caught
one), then requires, while it is still stuck: every one of those shards leased to another node and a commit
of each group acknowledged there. After healing: every group's stored offset is at least the last one
acknowledged (the deposed owner's stuck write was refused, not applied over newer ones).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import asyncpg
import pytest

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.messages import offset_commit as oc
from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import start_nodes, wait_balanced
from tests.cluster.pg_proxy import PgProxy
from tests.conftest import ServerProcess

pytestmark = [pytest.mark.integration]

TTL_MS = 3000
SHARDS = 50
#: a backend idle inside a transaction holding lease rows, for a while (a stuck owner's, not a live one's)
_STUCK = """
SELECT DISTINCT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
WHERE a.datname = current_database() AND a.state = 'idle in transaction' AND l.granted
  AND l.relation = 'shard_lease'::regclass AND a.state_change < now() - interval '100 milliseconds'
"""


def _commit_frame(group: str, offset: int, correlation: int) -> bytes:
    body = oc.OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=(
            oc.OffsetCommitRequestTopic(
                name="t",
                partitions=(
                    oc.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=offset, committed_metadata=""
                    ),
                ),
            ),
        ),
    )
    return encode_request(8, 2, correlation, body)


@dataclass
class Committer:
    """Commits 1, 2, 3, ... for one simple group at whichever node the database says owns its shard."""

    group: str
    shard: int
    sent: int = 0
    acked: list[tuple[float, int, int]] = field(default_factory=list)  # (time, node, offset)

    async def run(self, pool: asyncpg.Pool, ports: dict[int, int], stop: asyncio.Event) -> None:
        while not stop.is_set():
            owner = await pool.fetchval(
                "SELECT owner FROM shard_lease WHERE shard = $1 AND expires_at > now()", self.shard
            )
            if owner is None:
                await asyncio.sleep(0.05)
                continue
            with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
                await self._session(owner, ports[owner], stop)
            await asyncio.sleep(0.02)

    async def _session(self, node: int, port: int, stop: asyncio.Event) -> None:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 2)
        try:
            while not stop.is_set():
                self.sent += 1
                writer.write(_commit_frame(self.group, self.sent, self.sent))
                size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 2))[0]
                _, resp = decode_response(await asyncio.wait_for(reader.readexactly(size), 2), 8, 2)
                if resp.topics[0].partitions[0].error_code != 0:
                    return  # NOT_COORDINATOR and the like: look the owner up again
                self.acked.append((time.monotonic(), node, self.sent))
        finally:
            writer.close()


async def _victim_groups(pool: asyncpg.Pool, victim: int) -> list[Committer]:
    shards = sorted(
        r[0]
        for r in await pool.fetch(
            "SELECT shard FROM shard_lease WHERE owner = $1 AND expires_at > now()", victim
        )
    )
    found: dict[int, str] = {}
    i = 0
    while len(found) < len(shards):
        name = f"stuck-{i}"
        if shard_of(name, SHARDS) in shards:
            found.setdefault(shard_of(name, SHARDS), name)
        i += 1
    return [Committer(g, s) for s, g in sorted(found.items())]


async def _stick(
    pool: asyncpg.Pool, stick: Callable[[], None], unstick: Callable[[], None], committers: list[Committer]
) -> float:
    """Stick the victim until it is caught with an open transaction on lease rows; returns when it stuck."""
    for _ in range(60):
        await asyncio.sleep(0.4)  # commits flow again after the previous try
        stick()
        at = time.monotonic()
        await asyncio.sleep(0.25)
        if await pool.fetch(_STUCK):
            return at
        unstick()
    acked = sum(len(c.acked) for c in committers)
    raise AssertionError(f"never caught the victim inside a write transaction in 60 tries ({acked} acks)")


async def _takeover(
    name: str,
    pg_url: str,
    nodes: dict[int, ServerProcess],
    victim: int,
    stick: Callable[[], None],
    unstick: Callable[[], None],
) -> None:
    await wait_balanced(pg_url, list(nodes))
    ports = {n: srv.port for n, srv in nodes.items()}
    pool = await asyncpg.create_pool(pg_url, min_size=2, max_size=6)
    stop = asyncio.Event()
    committers = await _victim_groups(pool, victim)
    tasks = [asyncio.create_task(c.run(pool, ports, stop)) for c in committers]
    try:
        stuck_at = await _stick(pool, stick, unstick, committers)
        deadline = stuck_at + 30
        leases_moved = groups_moved = None
        while time.monotonic() < deadline:
            owners = dict(
                await pool.fetch(
                    "SELECT shard, owner FROM shard_lease WHERE shard = ANY($1::int[]) AND expires_at > now()",
                    [c.shard for c in committers],
                )
            )
            if leases_moved is None and len(owners) == len(committers) and victim not in owners.values():
                leases_moved = time.monotonic() - stuck_at
            if all(any(t > stuck_at and n != victim for t, n, _ in c.acked) for c in committers):
                groups_moved = time.monotonic() - stuck_at
                break
            await asyncio.sleep(0.05)
        still = sorted(
            c.shard for c in committers if not any(t > stuck_at and n != victim for t, n, _ in c.acked)
        )
        stuck_now = await pool.fetch(_STUCK)
        assert not still, (
            f"{name}: shards {still} of the stuck node {victim} not taken over within 30 s"
            f" (backends still idle in a transaction on lease rows: {[r[0] for r in stuck_now]})"
        )
        print(
            f"{name}: {len(committers)} shards' leases moved {leases_moved:.2f} s and every group committed"
            f" at its new owner {groups_moved:.2f} s after the stop (TTL {TTL_MS / 1000:.1f} s)"
        )
    finally:
        unstick()
        await asyncio.sleep(1.0)
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        lost = []
        for c in committers:
            stored = await pool.fetchval("SELECT committed_offset FROM offsets WHERE group_id = $1", c.group)
            last = max((o for _, _, o in c.acked), default=0)
            if (stored or 0) < last:
                lost.append((c.group, stored, last))
        await pool.close()
    assert not lost, f"{name}: acknowledged commits lost (group, stored, last acknowledged): {lost}"


async def test_a_paused_owner_mid_write_is_taken_over_within_the_lease(server_factory, pg_url: str) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "t:1", "--cluster-lease-ttl-ms", str(TTL_MS))
    victim = nodes[2]
    assert victim.proc is not None

    def stick() -> None:
        victim.proc.send_signal(signal.SIGSTOP)

    def unstick() -> None:
        victim.proc.send_signal(signal.SIGCONT)

    await _takeover("paused", pg_url, nodes, 2, stick, unstick)
    assert victim.alive()


async def test_an_owner_cut_from_postgresql_mid_write_is_taken_over_within_the_lease(
    server_factory, pg_url: str
) -> None:
    """The victim reaches PostgreSQL only through a TCP proxy the test can blackhole: while cut, nothing
    either side sends gets through and neither side is told (no reset), as a network partition."""
    proxy = PgProxy.start(pg_url)
    try:
        extra = ("--topic", "t:1", "--cluster-lease-ttl-ms", str(TTL_MS))
        nodes = {1: server_factory("--cluster", pg_url, "--node-id", "1", *extra)}
        nodes[2] = server_factory("--cluster", proxy.url, "--node-id", "2", *extra)
        nodes[3] = server_factory("--cluster", pg_url, "--node-id", "3", *extra)
        await _takeover("cut", pg_url, nodes, 2, proxy.cut, proxy.heal)
        assert nodes[2].alive()
    finally:
        proxy.close()
