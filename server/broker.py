"""The server process: wires storage, the state machine, its runtime, topics and the network together."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from groupcoord.protocol.messages.api_versions import ApiVersion
from groupcoord.server.apis import catalog, consumer_groups
from groupcoord.server.apis.routing import Router
from groupcoord.server.cluster.cluster_log import ClusterLog
from groupcoord.server.cluster.cluster_maintenance import ClusterMaintenance
from groupcoord.server.cluster.markers import MarkerRouter
from groupcoord.server.cluster.node import ClusterNode
from groupcoord.server.cluster.share_state import ClusterShareState
from groupcoord.server.cluster_setup import join_cluster, share_configs, share_home
from groupcoord.server.config import POSTGRES_SCHEMES, ServerConfig
from groupcoord.server.configs.manager import ConfigManager, static_broker_values
from groupcoord.server.console import Console
from groupcoord.server.console.auth import ConsoleAuth
from groupcoord.server.coordinator.context import EVENT_KEYS
from groupcoord.server.coordinator.records import TxnRecord
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import Effects
from groupcoord.server.journal.lag_snapshots import LagSnapshots
from groupcoord.server.journal.roll import JournalRoller, parquet_enabled
from groupcoord.server.journal.writer import Journal
from groupcoord.server.log.config import LogConfig
from groupcoord.server.log.maintenance import MaintenanceConfig
from groupcoord.server.log.manager import LogManager
from groupcoord.server.log.topics import TopicInfo
from groupcoord.server.net.dispatch import Dispatcher
from groupcoord.server.net.listeners import Listener, resolve_bound_port
from groupcoord.server.net.network import Connection, ConnectionGuard, NetworkLimits
from groupcoord.server.ops import Ops
from groupcoord.server.runtime import GroupRuntime
from groupcoord.server.security import Security
from groupcoord.server.share.service import ShareService
from groupcoord.server.storage.base import StateStore
from groupcoord.server.storage.memory import MemoryStateStore
from groupcoord.server.storage.pg_liveness import session_settings
from groupcoord.server.storage.postgres import PostgresStateStore
from groupcoord.server.storage.sqlite import SqliteStateStore
from groupcoord.server.timers import WALL_CLOCK, Clock, TimerService, wall_ms
from groupcoord.server.topic_view import Topics
from groupcoord.server.txn.service import TxnCoordinator

if TYPE_CHECKING:
    from groupcoord.server.control import Control

log = structlog.get_logger("groupcoord.server")

#: every declared API's handler, as declared (server/apis/declaration.py; the broker adds the ACL checks)
HANDLERS = {api.key: api.handler for api in catalog.collect()}


def cluster_sessions(cfg: ServerConfig) -> dict[str, str]:
    """The startup settings of cluster mode's PostgreSQL sessions (server/storage/pg_liveness.py)."""
    return session_settings(cfg.cluster_lease_ttl_ms, f"groupcoord-node-{cfg.node_id}")


def make_store(cfg: ServerConfig) -> StateStore:
    """`--storage`: memory, disk (SQLite at <data-dir>/state.db) or a postgresql:// URL (docs/storage.md)."""
    if cfg.cluster:
        return PostgresStateStore(
            cfg.cluster, shards=cfg.offsets_topic_num_partitions, server_settings=cluster_sessions(cfg)
        )
    if cfg.storage == "memory":
        return MemoryStateStore()
    if cfg.storage.startswith(POSTGRES_SCHEMES):
        return PostgresStateStore(cfg.storage, shards=cfg.offsets_topic_num_partitions)
    return SqliteStateStore(cfg.data_dir / "state.db")


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
        #: the transaction coordinator (server/txn)
        self.txn: TxnCoordinator | None = None
        #: KIP-932 share partitions and sessions (server/share)
        self.share: ShareService | None = None
        #: TLS, SASL, credentials and ACLs (server/security)
        self.security = Security(config)
        # the declared APIs (server/apis/catalog.py): with --group-share-enable false the share APIs are not
        # offered (as Kafka's share.version=0); with an authorizer every handler has its ACL check in front
        # (and the fast lanes, which would skip it, are off)
        offered = catalog.offered(catalog.collect(), {"share": config.group_share_enable})
        self.dispatcher = Dispatcher(self, catalog.handlers(offered, authorizer=self.security.enabled))
        if not self.security.enabled:
            for key, lane in catalog.fast_lanes(offered).items():
                self.dispatcher.add_fast_lane(key, lane)
        self.dispatcher.while_loading = catalog.while_loading(offered)
        self.loading = True
        self.loaded: asyncio.Future | None = None
        self.journal: Journal | None = None
        self.journal_roller: JournalRoller | None = None
        self.load_ms: int | None = None
        self.ops: Ops | None = None  # metrics and probes (`--metrics-port`); None when off
        #: the live web console at /ui of the metrics listener (`--console`); None when off
        self.console: Console | None = None
        self.started_ms = wall_ms()
        self._servers: list[asyncio.base_events.Server] = []
        #: the listeners as bound (a port-0 listener advertises the port it got), in `--listeners` order
        self.listeners: tuple[Listener, ...] = ()
        self.guard: ConnectionGuard | None = None
        self._cleanup: TimerService | None = None
        self.lag_snapshots: LagSnapshots | None = None
        self.clock: Clock = WALL_CLOCK
        self._control: Control | None = None  # made on first use
        #: cluster mode (`--cluster`): this node's leases and the shard routing; None on a single node
        self.cluster: ClusterNode | None = None
        self.cluster_log_maintenance: ClusterMaintenance | None = None  # retention, compaction in PostgreSQL
        #: cluster mode: where transaction markers go (server/cluster/markers.py)
        self.markers: MarkerRouter | None = None
        #: cluster mode: share-partition state under the partition leases (server/cluster/share_state.py)
        self.share_state: ClusterShareState | None = None
        if config.cluster:  # a group request for a group served elsewhere: NOT_COORDINATOR (routing.py)
            self.dispatcher.route = Router(offered).route

    async def start(self) -> None:
        cfg = self.config
        self.loop = asyncio.get_running_loop()
        cfg.data_dir.mkdir(parents=True, exist_ok=True)
        memory = cfg.storage == "memory"
        self.store = make_store(cfg)
        await self.store.open()
        flush = "always" if cfg.log_flush == "acks-all" else "never"
        maintenance = MaintenanceConfig(
            retention_check_interval_ms=cfg.log_retention_check_interval_ms,
            cleaner_backoff_ms=cfg.log_cleaner_backoff_ms,
            cleaner_enable=cfg.log_cleaner_enable,
            cleaner_io_max_bytes_per_second=cfg.log_cleaner_io_max_bytes_per_second,
        )
        if cfg.cluster:  # topic data in PostgreSQL, one leader per partition (server/cluster/cluster_log.py)
            self.logs = ClusterLog(cfg.cluster, cfg.node_id, server_settings=cluster_sessions(cfg))
            self.cluster_log_maintenance = ClusterMaintenance(self.logs, maintenance)
        else:
            self.logs = LogManager(
                None if memory else cfg.data_dir,
                storage="memory" if memory else "disk",
                flush=flush,
                maintenance=maintenance,
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
        if isinstance(self.logs, ClusterLog):  # topic and group configs are the cluster's (PostgreSQL)
            share_configs(self.logs, self.configs, self.store)
        self.topics.on_created = self._topic_created
        for name, partitions in cfg.topics:
            if self.topics.get(name) is None:
                await self.topics.create(name, partitions)
        self.journal = Journal(cfg.data_dir / "journal" if cfg.journal else None, cfg.journal_max_bytes)
        start_ms = wall_ms()
        self.journal.open(start_ms)
        if self.journal.directory is not None and parquet_enabled(cfg.journal_parquet):
            self.journal_roller = JournalRoller(self.journal.directory)
            self.journal.on_closed = self.journal_roller.submit
            self.journal_roller.start(start_ms)
        if cfg.virtual_clock:
            from groupcoord.server.control.clock import VirtualClock

            self.clock = VirtualClock(wall_ms())
        self.machine = GroupCoordinatorShard(
            cfg.coordinator(),
            consumer_config=cfg.consumer_group(),
            share_config=cfg.share(),
            streams_config=cfg.streams_group(),
            topics=consumer_groups.LogTopicImage(self.topics),
        )
        self.runtime = GroupRuntime(self.machine, self.store, self.journal, self.loop, self.clock)
        self.txn = TxnCoordinator(
            self.store,
            self.logs,
            self.complete_group_txn,
            self._allocate_producer_id,
            self.clock.now_ms,
            max_timeout_ms=cfg.transaction_max_timeout_ms,
            cleanup_interval_ms=cfg.transaction_abort_timed_out_transaction_cleanup_interval_ms,
        )
        self._cleanup = TimerService(self.loop, self._run_cleanup, self.clock)
        self.share = ShareService(self.logs, self.store, cfg.share(), self.loop, self.clock, share_home(self))
        self.dispatcher.on_connection_closed.append(self.share.connection_closed)
        self.configs.on_group_changed = self._group_configs_changed
        self.share.on_event = self._share_event  # share_records events (docs/journal.md)
        for group_id, group_configs in self.configs.state.groups.items():  # durable group configs (issue 26)
            self._group_configs_changed(group_id, group_configs)
        if cfg.metrics_port:
            if cfg.console:
                self.console = self._make_console()
                self.journal.listeners.append(self.console.on_event)
            handler = None if self.console is None else self.console.handle
            self.ops = Ops(self, partition_lag=cfg.metrics_partition_lag, console=handler)
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
        await self.security.open()
        # listen first: while the state loads, group APIs answer COORDINATOR_LOAD_IN_PROGRESS
        await self._listen(guard)
        self.loaded = self.loop.create_task(self._join_cluster() if cfg.cluster else self._load())
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
                    lambda i=i: Connection(self.dispatcher, guard, bound[i], self.security),
                    listener.host or None,
                    listener.port,
                    reuse_address=True,
                    ssl=self.security.ssl_context(listener),
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

    def _share_event(self, event: dict[str, Any]) -> None:
        """A share partition's `share_records` event, with every journal field as the coordinator's have."""
        assert self.journal is not None
        self.journal.append({**dict.fromkeys(EVENT_KEYS), **event})

    def _group_configs_changed(self, group_id: str, group_configs: Mapping[str, str]) -> None:
        """A group's configs (GROUP config resource) changed or were loaded: the group coordinator (session
        timeouts, heartbeat intervals) and the share partitions (locks, limits, isolation) take them."""
        assert self.machine is not None and self.share is not None
        self.machine.set_group_config(group_id, group_configs)
        self.share.set_group_config(group_id, group_configs)

    def _topic_created(self, info: TopicInfo) -> None:
        """Auto-created and --topic topics follow the broker's (possibly altered) defaults."""
        assert self.configs is not None
        self._apply_log_config(info.name, self.configs.log_config(info.name, str(info.topic_id)))

    async def _load(self) -> None:
        assert self.machine is not None and self.runtime is not None
        started = wall_ms()
        records = await self.store.load()
        for rec in records:
            if isinstance(rec, TxnRecord):
                self.txn.replay(rec)
            else:
                self.machine.replay(rec)
        effects = self.machine.finish_load(self.clock.now_ms())
        if effects:
            self.runtime.apply_unowned(effects)
        assert self.share is not None
        self.share.load(self.machine.loaded_share_partitions)
        self.machine.loaded_share_partitions.clear()
        self.share.ready.set()
        self.load_ms = wall_ms() - started
        self.loading = False
        self.txn.start()
        self.schedule_cleanup()
        if self.config.journal and self.config.journal_lag_snapshot_interval_ms > 0:
            assert self.journal is not None and self.loop is not None
            interval = self.config.journal_lag_snapshot_interval_ms
            self.lag_snapshots = LagSnapshots(self, self.journal, self.loop, self.clock, interval)
            self.lag_snapshots.start()
        log.info(
            "state loaded", records=len(records), groups=len(self.machine.group_ids()), ms=wall_ms() - started
        )

    async def _join_cluster(self) -> None:
        """Cluster mode: nothing is loaded up front; each shard is loaded when this node takes its lease
        (server/cluster_setup.py)."""
        await join_cluster(self)

    @property
    def routing(self) -> ClusterNode | None:
        """`ShardRouting` for handlers: None on a single node."""
        return self.cluster

    async def complete_group_txn(self, group_id: str, producer_id: int, commit: bool) -> bool:
        """A transaction marker for one group: the machine makes the producer's pending offsets committed
        (or drops them) through the group's mailbox; True once durable."""
        assert self.runtime is not None and self.machine is not None
        machine = self.machine
        result = self.runtime.call_parked(
            group_id,
            lambda tok, now: machine.complete_transaction(group_id, producer_id, commit, tok, now),
            lambda: False,
        )
        while isinstance(result, asyncio.Future):
            result = await result
        return bool(result)

    async def _allocate_producer_id(self) -> int:
        assert self.logs is not None
        pid, _ = await self.logs.init_producer_id()
        return pid

    @property
    def access(self) -> Security:
        """The authorizer and ACL store (`HandlerServices.access`)."""
        return self.security

    def _make_console(self) -> Console:
        listeners = self.config.listener_list()
        sasl = any(lst.protocol.startswith("SASL") for lst in listeners)
        # client certificates required on an SSL listener (Kafka's ssl.client.auth=required): clients are
        # authenticated, so the console is too (against the same SCRAM/PLAIN users)
        mtls = self.config.ssl_client_auth == "required" and any(lst.protocol == "SSL" for lst in listeners)
        delay = self.config.connection_failed_authentication_delay_ms
        return Console(self, ConsoleAuth(self.security, sasl or mtls), failed_delay_ms=delay)

    def console_facts(self) -> dict[str, object]:
        """What the console's overview shows of this node that only the wiring knows (views.ConsoleSource)."""
        try:
            version = importlib.metadata.version("groupcoord")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        return {
            "node_id": self.config.node_id,
            "version": version,
            "listeners": [f"{lst.name}://{lst.host}:{lst.port}" for lst in self.listeners],
            "connections": 0 if self.guard is None else self.guard.total,
            "started_ms": self.started_ms,
        }

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

    def schedule_cleanup(self) -> None:
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
        self.schedule_cleanup()

    async def stop(self) -> None:
        """Stop accepting, cancel parked requests, let writes finish, flush the journal and storage."""
        for server in self._servers:
            server.close()
        if self.ops is not None:
            await self.ops.close()
        if self.loaded is not None and not self.loaded.done():
            with contextlib.suppress(Exception):
                await self.loaded
        if self.cluster_log_maintenance is not None:
            await self.cluster_log_maintenance.stop()
        if self.cluster is not None:
            await self.cluster.stop()  # planned handover: leases released before the store closes
        if self._cleanup is not None:
            self._cleanup.close()
        if self.lag_snapshots is not None:
            self.lag_snapshots.close()
        if self.guard is not None:
            self.guard.close()
        if self._control is not None:
            await self._control.close()
        for conn in list(self.dispatcher.connections):
            if conn.transport is not None:
                conn.transport.close()
        if self.txn is not None:
            await self.txn.close()
        if self.markers is not None:
            self.markers.close()
        if self.runtime is not None:
            await self.runtime.quiesce()
            self.runtime.close()
        if self.share is not None:
            await self.share.quiesce()
            self.share.close()
        if self.share_state is not None:
            await self.share_state.close()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)
        if self.journal is not None:
            await self.journal.close()
        if self.journal_roller is not None:  # queued rolls are left to the next start
            await asyncio.to_thread(self.journal_roller.close)
        await self.security.close()
        if self.store is not None:
            await self.store.close()
        if self.logs is not None:
            await self.logs.close()
