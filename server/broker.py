"""The server process: wires storage, the state machine, its runtime, topics and the network together."""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.api_versions import ApiVersion
from groupcoord.server.apis import data, groups, loading, meta, offsets
from groupcoord.server.config import ServerConfig
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import Effects
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.journal import Journal
from groupcoord.server.log.manager import LogManager
from groupcoord.server.network import Connection, ConnectionGuard, NetworkLimits
from groupcoord.server.ops import Ops
from groupcoord.server.runtime import GroupRuntime
from groupcoord.server.storage.base import StateStore
from groupcoord.server.storage.memory import MemoryStateStore
from groupcoord.server.storage.sqlite import SqliteStateStore
from groupcoord.server.timers import wall_ms
from groupcoord.server.topic_view import Topics

log = structlog.get_logger("groupcoord.server")

HANDLERS = {
    ApiKey.API_VERSIONS: meta.api_versions,
    ApiKey.METADATA: meta.metadata,
    ApiKey.FIND_COORDINATOR: meta.find_coordinator,
    ApiKey.CREATE_TOPICS: meta.create_topics,
    ApiKey.JOIN_GROUP: groups.join_group,
    ApiKey.SYNC_GROUP: groups.sync_group,
    ApiKey.HEARTBEAT: groups.heartbeat,
    ApiKey.LEAVE_GROUP: groups.leave_group,
    ApiKey.DESCRIBE_GROUPS: groups.describe_groups,
    ApiKey.LIST_GROUPS: groups.list_groups,
    ApiKey.DELETE_GROUPS: groups.delete_groups,
    ApiKey.OFFSET_COMMIT: offsets.offset_commit,
    ApiKey.OFFSET_FETCH: offsets.offset_fetch,
    ApiKey.PRODUCE: data.produce,
    ApiKey.FETCH: data.fetch,
    ApiKey.LIST_OFFSETS: data.list_offsets,
    ApiKey.INIT_PRODUCER_ID: data.init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: data.offset_for_leader_epoch,
    ApiKey.DELETE_TOPICS: data.delete_topics,
    ApiKey.CREATE_PARTITIONS: data.create_partitions,
}


class Broker:
    """The whole server. Handlers see it only as `server.services.HandlerServices` (the dispatcher's
    `RequestContext.services`): the machine, runtime, topics, logs, config, ApiVersions table and loading flag.
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.loop: asyncio.AbstractEventLoop | None = None
        self.store: StateStore | None = None
        self.machine: GroupCoordinatorShard | None = None
        self.runtime: GroupRuntime | None = None
        self.topics: Topics | None = None
        self.logs: LogManager | None = None
        self.dispatcher = Dispatcher(self, HANDLERS)
        self.dispatcher.while_loading = {int(k): v for k, v in loading.WHILE_LOADING.items()}
        self.loading = True
        self.loaded: asyncio.Future | None = None
        self.journal: Journal | None = None
        self.load_ms: int | None = None
        #: metrics and probes (`--metrics-port`); None when off
        self.ops: Ops | None = None
        self._server: asyncio.base_events.Server | None = None
        self._cleanup: asyncio.TimerHandle | None = None
        self.guard: ConnectionGuard | None = None

    async def start(self) -> None:
        cfg = self.config
        self.loop = asyncio.get_running_loop()
        cfg.data_dir.mkdir(parents=True, exist_ok=True)
        memory = cfg.storage == "memory"
        self.store = MemoryStateStore() if memory else SqliteStateStore(cfg.data_dir / "state.db")
        await self.store.open()
        flush = "always" if cfg.log_flush == "acks-all" else "never"
        self.logs = LogManager(None if memory else cfg.data_dir, storage=cfg.storage, flush=flush)
        await self.logs.open()
        self.topics = Topics(self.logs, cfg.offsets_topic_num_partitions, cfg.cluster_id)
        for name, partitions in cfg.topics:
            if self.topics.get(name) is None:
                await self.topics.create(name, partitions)
        self.journal = Journal(cfg.data_dir / "journal" if cfg.journal else None, cfg.journal_max_bytes)
        self.journal.open(wall_ms())
        self.machine = GroupCoordinatorShard(cfg.coordinator())
        self.runtime = GroupRuntime(self.machine, self.store, self.journal, self.loop)
        if cfg.metrics_port:
            self.ops = Ops(self, partition_lag=cfg.metrics_partition_lag)
            self.dispatcher.observer = self.ops
            self.runtime.listener = self.ops.on_event
            await self.ops.start(cfg.metrics_host, cfg.metrics_port)
        limits = NetworkLimits(
            max_frame=cfg.socket_request_max_bytes,
            idle_ms=cfg.connections_max_idle_ms,
            frame_timeout_ms=cfg.request_frame_timeout_ms,
            max_per_ip=cfg.max_connections_per_ip,
            max_total=cfg.max_connections,
        )
        guard = self.guard = ConnectionGuard(limits, self.loop)
        # listen first: while the state loads, group APIs answer COORDINATOR_LOAD_IN_PROGRESS
        self._server = await self.loop.create_server(
            lambda: Connection(self.dispatcher, guard),
            cfg.host,
            cfg.port,
            reuse_address=True,
        )
        self.loaded = self.loop.create_task(self._load())

    async def _load(self) -> None:
        assert self.machine is not None and self.runtime is not None
        started = wall_ms()
        records = await self.store.load()
        for rec in records:
            self.machine.replay(rec)
        effects = self.machine.finish_load(wall_ms())
        if effects:
            self.runtime.apply_unowned(effects)
        self.load_ms = wall_ms() - started
        self.loading = False
        self._schedule_cleanup()
        log.info(
            "state loaded", records=len(records), groups=len(self.machine.group_ids()), ms=wall_ms() - started
        )

    @property
    def api_versions_table(self) -> tuple[ApiVersion, ...]:
        """What ApiVersions answers: the range of every API with a handler (`HandlerServices`)."""
        return self.dispatcher.api_versions_table

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.sockets[0].getsockname()[1]

    def _schedule_cleanup(self) -> None:
        assert self.loop is not None
        self._cleanup = self.loop.call_later(
            self.config.offsets_retention_check_interval_ms / 1000, self._run_cleanup
        )

    def _run_cleanup(self) -> None:
        assert self.runtime is not None and self.machine is not None
        machine, ops = self.machine, self.ops

        def step(now: int) -> tuple[None, Effects]:
            effects = machine.cleanup_expired_offsets(now)
            if ops is not None:
                ops.offsets_expired(effects)
            return None, effects

        try:
            self.runtime.call_global(step)
        except Exception:
            log.exception("offset expiry failed")
        self._schedule_cleanup()

    async def stop(self) -> None:
        """Stop accepting, cancel parked requests, let writes finish, flush the journal and storage."""
        if self._server is not None:
            self._server.close()
        if self.ops is not None:
            await self.ops.close()
        if self.loaded is not None and not self.loaded.done():
            with contextlib.suppress(Exception):
                await self.loaded
        if self._cleanup is not None:
            self._cleanup.cancel()
        if self.guard is not None:
            self.guard.close()
        for conn in list(self.dispatcher.connections):
            if conn.transport is not None:
                conn.transport.close()
        if self.runtime is not None:
            await self.runtime.quiesce()
            self.runtime.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        if self.journal is not None:
            await self.journal.close()
        if self.store is not None:
            await self.store.close()
        if self.logs is not None:
            await self.logs.close()
