"""The lease and discovery SQL of cluster mode; every expiry is judged by the database clock (`now()`).

* `shard_lease(shard, owner, epoch, expires_at)`: a node owns a shard while `owner = it and expires_at >
  now()`. Acquiring takes only a released or expired row and always bumps the epoch, so every ownership
  period has its own epoch and a write fenced by an old one fails (storage/postgres.py `_FENCE`).
  Renewing extends only rows still held at the epoch the node believes.
* `nodes(node_id, host, port, endpoints, last_seen)`: a node is live while `last_seen > now() - ttl`; host and
  port are its inter-broker listener's advertised address, `endpoints` every listener's (JSON).

Rows of one statement are locked by PostgreSQL (`FOR UPDATE SKIP LOCKED` for acquisition), so two nodes
racing for a shard never both win it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn, Protocol

import asyncpg
import structlog

log = structlog.get_logger("groupcoord.cluster")

#: the advisory-lock class of node ids (`pg_try_advisory_lock(NODE_LOCK, node_id)`); "gcnd"
NODE_LOCK = 0x67636E64


class NodeIdInUse(RuntimeError):
    """Another live process holds this node id (Kafka refuses a duplicate broker id the same way)."""


class AdvertisedListener(Protocol):
    """A listener as the broker bound it (server/net/listeners.py `Listener`)."""

    name: str
    advertised_host: str
    advertised_port: int


@dataclass(frozen=True, slots=True)
class NodeInfo:
    node_id: int
    host: str  # the inter-broker listener's advertised address: where the other nodes connect
    port: int
    #: (listener name, advertised host, port) of each listener: what clients of that listener are told
    endpoints: tuple[tuple[str, str, int], ...] = ()

    @classmethod
    def registered(
        cls, node_id: int, inter_broker: AdvertisedListener, listeners: Iterable[AdvertisedListener]
    ) -> NodeInfo:
        endpoints = tuple((x.name, x.advertised_host, x.advertised_port) for x in listeners)
        return cls(node_id, inter_broker.advertised_host, inter_broker.advertised_port, endpoints)

    def address(self, listener: str) -> tuple[str, int]:
        """(host, port) for a client of `listener`, as Kafka names each broker's endpoint of the listener the
        request came in on; a node registered without it (an older node) gives its inter-broker address."""
        for name, host, port in self.endpoints:
            if name == listener:
                return host, port
        return self.host, self.port

    def endpoints_json(self) -> str:
        return json.dumps([list(e) for e in self.endpoints])


def _endpoints(text: str | None) -> tuple[tuple[str, str, int], ...]:
    try:
        return tuple((str(n), str(h), int(p)) for n, h, p in json.loads(text or "[]"))
    except (ValueError, TypeError):
        return ()


async def prepare(conn: asyncpg.Connection, shards: int) -> None:
    """Create the lease rows 0..shards-1 (idempotent; every node runs it at start)."""
    await conn.execute(
        "INSERT INTO shard_lease (shard) SELECT generate_series(0, $1::int - 1) ON CONFLICT DO NOTHING",
        shards,
    )
    count = await conn.fetchval("SELECT count(*) FROM shard_lease")
    if count != shards:
        raise ValueError(
            f"the cluster database has {count} shards but this node was started with {shards}"
            " (--offsets-topic-num-partitions must be the same on every node, fixed at cluster creation)"
        )


async def claim_node_id(conn: asyncpg.Connection, node_id: int, ttl_ms: int) -> None:
    """Hold `node_id` for the life of `conn` (a session advisory lock), or raise `NodeIdInUse`.

    Why a lock and not `nodes.last_seen`: the lock belongs to the holder's connection, so it is released
    the moment that process dies (kill -9 closes its sockets), while a live one — even one paused by
    SIGSTOP, whose connection stays open — always refuses a twin.

    But a live holder also loses the lock when its connection does (PostgreSQL restarted, the session
    killed): it takes it again at its next tick (server/cluster/node_claim.py), and only the lock's holder
    can write the id's heartbeat (`heartbeat_node`). So a free lock with a fresh heartbeat (within the TTL)
    is ambiguous — a holder that just died, or one about to take it back — and is settled as Kafka settles
    a broker id registered by a live session: this process lets the lock go and watches the heartbeat; a
    new one means the holder is alive (refused), none for a whole TTL means it is gone (the id is this
    process's, a lease TTL after its predecessor's last heartbeat at most)."""
    if not await _try_lock(conn, node_id):
        await _refuse(conn, node_id, "")
    seen = await conn.fetchval(_SEEN_FRESH, node_id, ttl_ms)
    if seen is None:
        return
    await conn.execute("SELECT pg_advisory_unlock($1::int, $2::int)", NODE_LOCK, node_id)
    log.info("node id was live a moment ago: waiting for its holder's heartbeat", node=node_id, ttl_ms=ttl_ms)
    while True:
        await asyncio.sleep(ttl_ms / 10_000)
        row = await conn.fetchrow(_SEEN, node_id, ttl_ms)
        if row is not None and row[0] != seen:
            await _refuse(conn, node_id, ": its holder heartbeated while this process waited")
        if row is None or row[1]:  # no heartbeat for a whole TTL: its holder is gone
            if not await _try_lock(conn, node_id):
                await _refuse(conn, node_id, "")
            if await conn.fetchval("SELECT last_seen FROM nodes WHERE node_id = $1", node_id) == seen:
                return
            await conn.execute("SELECT pg_advisory_unlock($1::int, $2::int)", NODE_LOCK, node_id)
            await _refuse(conn, node_id, ": its holder heartbeated while this process waited")


_SEEN_FRESH = (
    "SELECT last_seen FROM nodes WHERE node_id = $1"
    " AND last_seen > now() - make_interval(secs => $2::float8 / 1000)"
)
_SEEN = (
    "SELECT last_seen, last_seen <= now() - make_interval(secs => $2::float8 / 1000) FROM nodes"
    " WHERE node_id = $1"
)


def _holds(node_param: str, lock_param: str) -> str:
    """SQL: true while this session holds the node id's advisory lock (`pg_try_advisory_lock(int, int)` is
    shown in pg_locks as classid = the first key, objid = the second, objsubid = 2)."""
    return (
        f"EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = {lock_param}::int::oid"
        f" AND objid = {node_param}::int::oid AND objsubid = 2 AND pid = pg_backend_pid() AND granted)"
    )


async def _try_lock(conn: asyncpg.Connection, node_id: int) -> bool:
    return bool(await conn.fetchval("SELECT pg_try_advisory_lock($1::int, $2::int)", NODE_LOCK, node_id))


async def _refuse(conn: asyncpg.Connection, node_id: int, why: str) -> NoReturn:
    row = await conn.fetchrow("SELECT host, port, last_seen FROM nodes WHERE node_id = $1", node_id)
    where = f" (registered at {row[0]}:{row[1]}, last seen {row[2]:%Y-%m-%d %H:%M:%S %Z})" if row else ""
    raise NodeIdInUse(
        f"node id {node_id} is already in use by a live node of this cluster{where}{why}: every node needs"
        " its own --node-id; stop the other process first (its id is freed the moment it exits)"
    )


async def holds_node_id(conn: asyncpg.Connection, node_id: int) -> bool:
    """Whether `conn`'s session holds `node_id`'s lock."""
    return bool(await conn.fetchval(f"SELECT {_holds('$1', '$2')}", node_id, NODE_LOCK))


async def heartbeat_node(conn: asyncpg.Connection, node: NodeInfo) -> bool:
    """Mark `node` live, on the connection that holds its id; written only while that session holds the
    id's lock (False: it does not, nothing written), so a process that lost the id never writes as it."""
    done = await conn.fetchval(
        "INSERT INTO nodes (node_id, host, port, endpoints, last_seen)"
        f" SELECT $1, $2, $3, $4, now() WHERE {_holds('$1', '$5')}"
        " ON CONFLICT (node_id) DO UPDATE SET host = $2, port = $3, endpoints = $4, last_seen = now()"
        " RETURNING true",
        node.node_id,
        node.host,
        node.port,
        node.endpoints_json(),
        NODE_LOCK,
    )
    return bool(done)


async def live_nodes(conn: asyncpg.Connection, ttl_ms: int) -> list[NodeInfo]:
    rows = await conn.fetch(
        "SELECT node_id, host, port, endpoints FROM nodes"
        " WHERE last_seen > now() - make_interval(secs => $1::float8 / 1000) ORDER BY node_id",
        ttl_ms,
    )
    return [NodeInfo(r[0], r[1], r[2], _endpoints(r[3])) for r in rows]


async def renew(conn: asyncpg.Connection, node_id: int, held: dict[int, int], ttl_ms: int) -> dict[int, int]:
    """Extend the leases still held at the believed epochs; returns those (shard -> epoch)."""
    if not held:
        return {}
    rows = await conn.fetch(
        "UPDATE shard_lease l SET expires_at = now() + make_interval(secs => $4::float8 / 1000)"
        " FROM unnest($2::int[], $3::bigint[]) AS h(shard, epoch)"
        " WHERE l.shard = h.shard AND l.epoch = h.epoch AND l.owner = $1 AND l.expires_at > now()"
        " RETURNING l.shard, l.epoch",
        node_id,
        list(held),
        list(held.values()),
        ttl_ms,
    )
    return {r[0]: r[1] for r in rows}


async def acquire(conn: asyncpg.Connection, node_id: int, count: int, ttl_ms: int) -> dict[int, int]:
    """Take up to `count` released or expired shards, bumping each one's epoch; returns shard -> epoch."""
    if count <= 0:
        return {}
    rows = await conn.fetch(
        "UPDATE shard_lease l SET owner = $1, epoch = l.epoch + 1,"
        " expires_at = now() + make_interval(secs => $3::float8 / 1000)"
        " WHERE l.shard IN (SELECT shard FROM shard_lease WHERE owner IS NULL OR expires_at <= now()"
        "                   ORDER BY shard LIMIT $2 FOR UPDATE SKIP LOCKED)"
        "   AND (l.owner IS NULL OR l.expires_at <= now())"
        " RETURNING l.shard, l.epoch",
        node_id,
        count,
        ttl_ms,
    )
    return {r[0]: r[1] for r in rows}


async def release(conn: asyncpg.Connection, node_id: int, held: dict[int, int]) -> None:
    """Give shards back at once (planned handover): the next node to look takes them."""
    if not held:
        return
    await conn.execute(
        "UPDATE shard_lease l SET owner = NULL, expires_at = '-infinity'"
        " FROM unnest($2::int[], $3::bigint[]) AS h(shard, epoch)"
        " WHERE l.shard = h.shard AND l.epoch = h.epoch AND l.owner = $1",
        node_id,
        list(held),
        list(held.values()),
    )


async def leave(conn: asyncpg.Connection, node_id: int) -> None:
    """This node stops: it no longer counts as live (on the connection holding its id: written only while
    it does, so a process that lost the id never marks its successor gone)."""
    await conn.execute(
        f"UPDATE nodes SET last_seen = '-infinity' WHERE node_id = $1 AND {_holds('$1', '$2')}",
        node_id,
        NODE_LOCK,
    )


async def owners(conn: asyncpg.Connection) -> dict[int, NodeInfo]:
    """shard -> the node holding an unexpired lease on it (shards without one are absent)."""
    rows = await conn.fetch(
        "SELECT l.shard, n.node_id, n.host, n.port, n.endpoints FROM shard_lease l"
        " JOIN nodes n ON n.node_id = l.owner WHERE l.expires_at > now()"
    )
    return {r[0]: NodeInfo(r[1], r[2], r[3], _endpoints(r[4])) for r in rows}


async def shard_holders(conn: asyncpg.Connection) -> dict[int, tuple[NodeInfo, int]]:
    """shard -> (the node holding an unexpired lease on it, the lease epoch): `owners` plus the epoch that
    Metadata names as the leader epoch of the matching `__consumer_offsets` partition."""
    rows = await conn.fetch(
        "SELECT l.shard, n.node_id, n.host, n.port, l.epoch FROM shard_lease l"
        " JOIN nodes n ON n.node_id = l.owner WHERE l.expires_at > now()"
    )
    return {r[0]: (NodeInfo(r[1], r[2], r[3]), r[4]) for r in rows}
