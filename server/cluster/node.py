"""`ClusterNode`: this node's share of the shards — leases, takeover, self-fencing, routing answers.

Every `tick` (ttl/10, 500 ms by default), after marking this node live (`nodes.last_seen = now()`) on the
connection holding its node id (node_claim.py: taken again if that connection was lost; a node whose id
another process took meanwhile is fenced and renews nothing), one connection of the store's pool:

1. (the node's liveness, above),
2. renews the leases it holds at the epochs it believes; a shard whose renewal fails is dropped at once,
3. counts the live nodes and aims at `ceil(shards / live)` shards: takes released or expired ones when it has
   fewer (each taken shard is LOADING until its groups and offsets are replayed, members' session timers
   re-armed at now + session timeout, so Stable groups stay Stable at the same generation), and releases its
   highest-numbered ones when it has more, at most `handover_per_tick` per tick (a planned handover at a
   measured pace: a node joining or restarting gets its share over a few ticks, each moved shard's groups
   answering NOT_COORDINATOR once rather than all at once),
4. refreshes the shard -> owner map FindCoordinator answers from, then the shared state in `refreshes` (the
   cluster's group configs).

Self-fencing: a lease renewed by a statement sent at local time t expires no earlier than t + ttl on the
database clock, so this node serves its shards only until t + 0.9 ttl by its own monotonic clock; past that
(a database it cannot reach, a process paused by SIGSTOP) it drops every shard before answering anything
else. Writes do not rely on this: each is fenced in the database by owner and epoch (storage/postgres.py).

Stopping (SIGTERM) drops every shard (parked requests answered NOT_COORDINATOR), waits for in-flight writes,
then releases the leases so another node takes over within one of its ticks.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Iterable

import asyncpg
import structlog

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.cluster import leases
from groupcoord.server.cluster.leases import NodeInfo
from groupcoord.server.cluster.node_claim import ClaimTaken, NodeClaim
from groupcoord.server.cluster.partitions import PartitionLeases
from groupcoord.server.coordinator.records import TxnRecord
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.runtime import GroupRuntime
from groupcoord.server.storage.postgres import PostgresStateStore
from groupcoord.server.storage.shards import shard_of

log = structlog.get_logger("groupcoord.cluster")

#: the share of the lease this node trusts its own clock for (the rest absorbs clock-rate drift and latency)
TRUST = 0.9


class ClusterNode:
    """Owns leases for this node; is the store's `WriteFence` and the handlers' `ShardRouting`."""

    def __init__(
        self,
        *,
        node: NodeInfo,
        store: PostgresStateStore,
        machine: GroupCoordinatorShard,
        runtime: GroupRuntime,
        shards: int,
        lease_ttl_ms: int = 5000,
        now_ms: Callable[[], int],
        partitions: PartitionLeases | None = None,
        handover_per_tick: int = 10,
    ) -> None:
        self.node = node
        self.node_id = node.node_id
        self.store = store
        self.machine = machine
        self.runtime = runtime
        self.shards = shards
        self.ttl_ms = lease_ttl_ms
        self.tick_s = lease_ttl_ms / 10_000
        self.now_ms = now_ms
        #: the topic partitions this node leads (issue 27); None: the data plane is not clustered
        self.partitions = partitions
        #: the pace of planned moves: at most this many shards handed back per tick
        self.handover_per_tick = handover_per_tick
        self.held: dict[int, int] = {}  # shard -> epoch, serving or loading
        self.loading: set[int] = set()
        self._owners: dict[int, NodeInfo] = {}
        self._leased: dict[int, tuple[NodeInfo, int]] = {}  # shard -> (holder, lease epoch), every tick
        self._live: list[NodeInfo] = [node]
        self._valid_until = 0.0  # loop.time() until which the held leases are trusted
        self._task: asyncio.Task[None] | None = None
        self._loads: set[asyncio.Task[None]] = set()
        self._stopping = False
        self.takeovers = 0  # shards loaded since start (tests, metrics)
        #: this process's hold on its node id, kept across lost connections (node_claim.py)
        self.claim = NodeClaim(store.url, node.node_id, lease_ttl_ms, store.server_settings)
        #: the transaction coordinator's side of a shard move (the broker wires server/txn here): the
        #: transactional ids' records of shards taken, and the shards given up
        self.on_txns_loaded: Callable[[list[TxnRecord]], None] = lambda records: None
        self.on_txns_dropped: Callable[[set[int]], None] = lambda shards: None
        #: shared state every node re-reads at each tick on the tick's connection, after the leases (the
        #: cluster's group configs, server/cluster/group_configs.py)
        self.refreshes: list[Callable[[asyncpg.Connection], Awaitable[None]]] = []

    # -- WriteFence (storage) and ShardRouting (handlers)

    def _valid(self) -> bool:
        return asyncio.get_running_loop().time() < self._valid_until

    def epoch_of(self, shard: int) -> int | None:
        return self.held.get(shard) if self._valid() else None

    def group_status(self, group_id: str) -> ErrorCode:
        """NONE: served here; COORDINATOR_LOAD_IN_PROGRESS: being taken over here; else NOT_COORDINATOR."""
        shard = shard_of(group_id, self.shards)
        if shard in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if shard in self.held and self._valid():
            return ErrorCode.NONE
        return ErrorCode.NOT_COORDINATOR

    def shard_status(self, shard: int) -> ErrorCode:
        """As `group_status`, for a shard by number (WriteTxnMarkers for `__consumer_offsets` partition N)."""
        if shard in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if shard in self.held and self._valid():
            return ErrorCode.NONE
        return ErrorCode.NOT_COORDINATOR

    def coordinator_of(self, group_id: str) -> NodeInfo | None:
        """The node owning the group's shard, or None while nobody does (being failed over)."""
        shard = shard_of(group_id, self.shards)
        if shard in self.held and self._valid():
            return self.node
        owner = self._owners.get(shard)
        return None if owner is None or owner.node_id == self.node_id else owner

    def shard_leader(self, shard: int) -> tuple[NodeInfo, int] | None:
        """The leader and leader epoch Metadata names for `__consumer_offsets` partition `shard` (the shard's
        lease holder and lease epoch, as FindCoordinator names the holder); None while nobody holds it."""
        if shard in self.held and self._valid():
            return self.node, self.held[shard]
        got = self._leased.get(shard)
        return None if got is None or got[0].node_id == self.node_id else got

    def live_nodes(self) -> list[NodeInfo]:
        return list(self._live)

    def partition_leader(self, topic: str, partition: int) -> tuple[NodeInfo, int] | None:
        """The partition's live leader and leader epoch (None: nobody leads it now)."""
        return None if self.partitions is None else self.partitions.leader_of(topic, partition)

    # -- life cycle

    async def start(self) -> None:
        """Claim the node id (refused when a live process holds it), then take this node's share."""
        await self.claim.take()
        async with self.store.pool.acquire() as conn:
            await leases.prepare(conn, self.shards)
        await self._tick_bounded()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="cluster-leases")
        log.info("cluster node started", node=self.node_id, shards=len(self.held), live=len(self._live))

    async def _run(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.tick_s)
            await self._tick_bounded()

    async def _tick_bounded(self) -> None:
        try:
            await asyncio.wait_for(self._tick(), self.ttl_ms / 3000)
        except ClaimTaken:
            pass  # fenced (logged once by the claim): nothing renewed, so everything held is dropped below
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            log.warning("lease tick failed", node=self.node_id, error=repr(e))
        except Exception:
            log.exception("lease tick failed", node=self.node_id)
        if self.held and not self._valid():
            log.error(
                "leases not renewed in time: dropping every shard (self-fencing)", shards=sorted(self.held)
            )
            self._drop(set(self.held))
        if self.partitions is not None:
            self.partitions.check_valid()

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await self.claim.heartbeat(self.node)  # ClaimTaken: another process holds this id (fenced)
        async with self.store.pool.acquire() as conn:
            renewed = await leases.renew(conn, self.node_id, self.held, self.ttl_ms)
            lost = set(self.held) - set(renewed)
            if lost:
                log.warning("leases lost", shards=sorted(lost))
                self._drop(lost)
            if renewed:
                self._valid_until = started + TRUST * self.ttl_ms / 1000
            self._live = await leases.live_nodes(conn, self.ttl_ms) or [self.node]
            target = math.ceil(self.shards / max(1, len(self._live)))
            if len(self.held) < target:
                got = await leases.acquire(conn, self.node_id, target - len(self.held), self.ttl_ms)
                if got:
                    if not self.held:
                        self._valid_until = started + TRUST * self.ttl_ms / 1000
                    self._take(got)
            elif len(self.held) > target and not self.loading:
                ranked = sorted(self.held.items())  # the highest-numbered go first, a few per tick
                extra = dict(ranked[max(target, len(ranked) - self.handover_per_tick) :])
                log.info("handing shards over to newer nodes", shards=sorted(extra))
                self._drop(set(extra))
                await self.runtime.quiesce()
                await leases.release(conn, self.node_id, extra)
            self._leased = await leases.shard_holders(conn)
            self._owners = {s: n for s, (n, _) in self._leased.items()}
            if self.partitions is not None:
                await self.partitions.tick(conn, started, len(self._live))
            for refresh in self.refreshes:
                await refresh(conn)

    def _take(self, got: dict[int, int]) -> None:
        self.held.update(got)
        self.loading |= set(got)
        task = asyncio.get_running_loop().create_task(self._load(set(got)), name="shard-load")
        self._loads.add(task)
        task.add_done_callback(self._loads.discard)

    async def _load(self, shards: set[int]) -> None:
        """Replay the shards' groups and offsets, re-arm session timers, then serve them."""
        started = self.now_ms()
        try:
            records = await self.store.load_shards(sorted(shards))
        except Exception as e:
            log.error("shard load failed: giving the shards back", shards=sorted(shards), error=repr(e))
            self.loading -= shards
            back = {s: self.held.pop(s) for s in shards if s in self.held}
            with contextlib.suppress(Exception):
                async with self.store.pool.acquire() as conn:
                    await leases.release(conn, self.node_id, back)
            return
        still = {s for s in shards if s in self.held}  # lost meanwhile: nothing to serve
        txns = [
            r
            for r in records
            if isinstance(r, TxnRecord) and shard_of(r.transactional_id, self.shards) in still
        ]
        records = [
            r for r in records if not isinstance(r, TxnRecord) and shard_of(r.group_id, self.shards) in still
        ]
        for rec in records:
            self.machine.replay(rec)
        if txns:
            self.on_txns_loaded(txns)
        group_ids = {r.group_id for r in records}
        effects = self.machine.finish_load(self.now_ms(), group_ids)
        if effects:
            self.runtime.apply_unowned(effects)
        self.loading -= shards
        self.takeovers += len(still)
        log.info(
            "shards loaded",
            shards=sorted(still),
            epochs=[self.held[s] for s in sorted(still)],  # the lease epochs (a checker's split-brain key)
            groups=len(group_ids),
            ms=self.now_ms() - started,
        )

    def _drop(self, shards: Iterable[int]) -> None:
        """Stop serving `shards` now: their groups are unloaded (parked requests get NOT_COORDINATOR)."""
        shards = set(shards)
        for s in shards:
            self.held.pop(s, None)
        self.loading -= shards
        if shards:
            self.on_txns_dropped(shards)
        ids = [*self.machine.group_ids(), *self.machine.share_manager.groups]  # share groups too (KIP-932)
        groups = [g for g in ids if shard_of(g, self.shards) in shards]
        if groups:
            effects = self.machine.unload(self.now_ms(), groups)
            if effects:
                self.runtime.apply_unowned(effects)

    async def stop(self) -> None:
        """Planned handover: drop everything, let writes finish, release the leases, leave."""
        if not self.claim.started:  # a refused duplicate id: nothing here is ours to release
            return
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for task in list(self._loads):
            task.cancel()
        held = dict(self.held)
        self._drop(set(held))
        await self.runtime.quiesce()
        try:
            async with self.store.pool.acquire() as conn:
                if self.partitions is not None:
                    await self.partitions.stop(conn)
                await leases.release(conn, self.node_id, held)
        except Exception as e:
            log.warning("releasing the leases failed; they expire by themselves", error=repr(e))
        await self.claim.leave()
        log.info("cluster node stopped: shards released", shards=len(held))
