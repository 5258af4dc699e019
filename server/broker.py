"""The server process: wires storage, the state machine, its runtime, topics and the network together."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import structlog

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.api_versions import ApiVersion
from groupcoord.server.apis import cluster, configs, data, groups, loading, meta, offsets, records
from groupcoord.server.config import ServerConfig
from groupcoord.server.configs.manager import ConfigManager, static_broker_values
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import Effects
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.journal import Journal
from groupcoord.server.listeners import Listener, resolve_bound_port
from groupcoord.server.log.config import LogConfig
from groupcoord.server.log.maintenance import MaintenanceConfig
from groupcoord.server.log.manager import LogManager
from groupcoord.server.log.topics import TopicInfo
from groupcoord.server.network import Connection, ConnectionGuard, NetworkLimits
from groupcoord.server.ops import Ops
from groupcoord.server.runtime import GroupRuntime
from groupcoord.server.storage.base import StateStore
from groupcoord.server.storage.memory import MemoryStateStore
from groupcoord.server.storage.sqlite import SqliteStateStore
from groupcoord.server.timers import WALL_CLOCK, Clock, TimerService, wall_ms
from groupcoord.server.topic_view import Topics

if TYPE_CHECKING:
    from groupcoord.server.control import Control

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
    ApiKey.DESCRIBE_CONFIGS: configs.describe_configs,
    ApiKey.ALTER_CONFIGS: configs.alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: configs.incremental_alter_configs,
    ApiKey.OFFSET_DELETE: cluster.offset_delete,
    ApiKey.DESCRIBE_CLUSTER: cluster.describe_cluster,
    ApiKey.DELETE_RECORDS: records.delete_records,
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
        #: topic and broker configs (server/configs)
        self.configs: ConfigManager | None = None
        self.dispatcher = Dispatcher(self, HANDLERS)
        self.dispatcher.while_loading = {int(k): v for k, v in loading.WHILE_LOADING.items()}
        self.loading = True
        self.loaded: asyncio.Future | None = None
        self.journal: Journal | None = None
        self.load_ms: int | None = None
        #: metrics and probes (`--metrics-port`); None when off
        self.ops: Ops | None = None
        self._servers: list[asyncio.base_events.Server] = []
        #: the listeners as bound (a port-0 listener advertises the port it got), in `--listeners` order
        self.listeners: tuple[Listener, ...] = ()
        self.guard: ConnectionGuard | None = None
        self._cleanup: TimerService | None = None
        self.clock: Clock = WALL_CLOCK
        self._control: Control | None = None  # made on first use

    async def start(self) -> None:
        cfg = self.config
        self.loop = asyncio.get_running_loop()
        cfg.data_dir.mkdir(parents=True, exist_ok=True)
        memory = cfg.storage == "memory"
        self.store = MemoryStateStore() if memory else SqliteStateStore(cfg.data_dir / "state.db")
        await self.store.open()
        flush = "always" if cfg.log_flush == "acks-all" else "never"
        maintenance = MaintenanceConfig(
            retention_check_interval_ms=cfg.log_retention_check_interval_ms,
            cleaner_backoff_ms=cfg.log_cleaner_backoff_ms,
            cleaner_enable=cfg.log_cleaner_enable,
            cleaner_io_max_bytes_per_second=cfg.log_cleaner_io_max_bytes_per_second,
        )
        self.logs = LogManager(
            None if memory else cfg.data_dir, storage=cfg.storage, flush=flush, maintenance=maintenance
        )
        await self.logs.open()
        self.topics = Topics(self.logs, cfg.offsets_topic_num_partitions, cfg.cluster_id)
        self.configs = ConfigManager(
            None if memory else cfg.data_dir / "configs.json",
            static_broker_values(cfg),
            cfg.node_id,
            self._apply_log_config,
        )
        self.configs.load_topics(
            {name: (str(info.topic_id), dict(info.configs)) for name, info in self.logs.topics().items()}
        )
        self.topics.on_created = self._topic_created
        for name, partitions in cfg.topics:
            if self.topics.get(name) is None:
                await self.topics.create(name, partitions)
        self.journal = Journal(cfg.data_dir / "journal" if cfg.journal else None, cfg.journal_max_bytes)
        self.journal.open(wall_ms())
        if cfg.virtual_clock:
            from groupcoord.server.control.clock import VirtualClock

            self.clock = VirtualClock(wall_ms())
        self.machine = GroupCoordinatorShard(cfg.coordinator())
        self.runtime = GroupRuntime(self.machine, self.store, self.journal, self.loop, self.clock)
        self._cleanup = TimerService(self.loop, self._run_cleanup, self.clock)
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
        await self._listen(guard)
        self.loaded = self.loop.create_task(self._load())
        if cfg.control_port is not None:
            from groupcoord.server.control.http import serve_http

            await serve_http(self.controls(), cfg.control_host, cfg.control_port)

    async def _listen(self, guard: ConnectionGuard) -> None:
        """One server socket per listener; each connection knows its listener (advertised address, protocol)."""
        configured = self.config.listener_list()
        # filled in as each socket is bound: a port-0 listener's connections must advertise the bound port
        bound = list(configured)
        try:
            for i, listener in enumerate(configured):
                server = await self.loop.create_server(  # type: ignore[union-attr]
                    lambda i=i: Connection(self.dispatcher, guard, bound[i]),
                    listener.host or None,
                    listener.port,
                    reuse_address=True,
                )
                self._servers.append(server)
                bound[i] = resolve_bound_port(listener, server.sockets[0].getsockname()[1])
        except OSError:
            for server in self._servers:
                server.close()
            self._servers = []
            raise
        self.listeners = tuple(bound)

    def controls(self) -> Control:
        """The test controls (virtual clock, faults, observation); inert until a test uses them."""
        if self._control is None:
            from groupcoord.server.control import Control

            self._control = Control(self)
        return self._control

    def _apply_log_config(self, topic: str, config: LogConfig) -> None:
        """Hand a topic's effective settings to the log engine (`LogManager.set_log_config`, the log room's side
        of the contract in server/log/config.py)."""
        if Topics.is_internal(topic):
            return
        self.logs.set_log_config(topic, config)

    def _topic_created(self, info: TopicInfo) -> None:
        """Auto-created and --topic topics follow the broker's (possibly altered) defaults."""
        assert self.configs is not None
        self._apply_log_config(info.name, self.configs.log_config(info.name, str(info.topic_id)))

    async def _load(self) -> None:
        assert self.machine is not None and self.runtime is not None
        started = wall_ms()
        records = await self.store.load()
        for rec in records:
            self.machine.replay(rec)
        effects = self.machine.finish_load(self.clock.now_ms())
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
        """The bound port of the first listener."""
        assert self._servers
        return self._servers[0].sockets[0].getsockname()[1]

    def bound_port(self, name: str) -> int:
        """The bound port of the listener called `name`."""
        for listener, server in zip(self.listeners, self._servers, strict=True):
            if listener.name == name:
                return server.sockets[0].getsockname()[1]
        raise KeyError(name)

    def _schedule_cleanup(self) -> None:
        assert self._cleanup is not None
        interval = self.config.offsets_retention_check_interval_ms
        self._cleanup.schedule("offsets_cleanup", self.clock.now_ms() + interval)

    def _run_cleanup(self, _key: object = None) -> None:
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
        for server in self._servers:
            server.close()
        if self.ops is not None:
            await self.ops.close()
        if self.loaded is not None and not self.loaded.done():
            with contextlib.suppress(Exception):
                await self.loaded
        if self._cleanup is not None:
            self._cleanup.close()
        if self.guard is not None:
            self.guard.close()
        if self._control is not None:
            await self._control.close()
        for conn in list(self.dispatcher.connections):
            if conn.transport is not None:
                conn.transport.close()
        if self.runtime is not None:
            await self.runtime.quiesce()
            self.runtime.close()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)
        if self.journal is not None:
            await self.journal.close()
        if self.store is not None:
            await self.store.close()
        if self.logs is not None:
            await self.logs.close()
