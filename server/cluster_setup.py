"""Cluster mode's wiring (`--cluster`, docs/cluster.md), apart from server/broker.py so that each stays
readable: the node's shard and partition leases, transactions across nodes, share groups, and the configs
that are the cluster's (topic overrides in the registry, group configs in `group_configs`).

Share groups: their membership (ShareGroupHeartbeat/Describe) lives with the group's shard like every group;
their share-partition state is served by each topic partition's leader (`ClusterShareState`, the share
service's `home`), written fenced by the partition's lease.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from groupcoord.server.cluster.cluster_log import ClusterLog
from groupcoord.server.cluster.cluster_maintenance import ClusterMaintenance
from groupcoord.server.cluster.group_configs import ClusterGroupConfigs
from groupcoord.server.cluster.leases import NodeInfo
from groupcoord.server.cluster.markers import Connect, MarkerRouter
from groupcoord.server.cluster.node import ClusterNode
from groupcoord.server.cluster.partitions import PartitionLeases
from groupcoord.server.cluster.share_state import ClusterShareState
from groupcoord.server.config import ServerConfig
from groupcoord.server.configs.manager import ConfigManager
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.log.manager import LogManager
from groupcoord.server.net.listeners import Listener
from groupcoord.server.runtime import GroupRuntime
from groupcoord.server.security import Security
from groupcoord.server.share.service import ShareService
from groupcoord.server.storage.base import StateStore
from groupcoord.server.storage.postgres import PostgresStateStore
from groupcoord.server.storage.shards import shard_of
from groupcoord.server.timers import Clock
from groupcoord.server.txn.service import TxnCoordinator


class Broker(Protocol):
    """What of the broker (server/broker.py) this wiring reads and sets."""

    config: ServerConfig
    configs: ConfigManager | None
    store: StateStore | None
    logs: LogManager | None
    machine: GroupCoordinatorShard | None
    runtime: GroupRuntime | None
    txn: TxnCoordinator | None
    share: ShareService | None
    share_state: ClusterShareState | None
    cluster: ClusterNode | None
    markers: MarkerRouter | None
    cluster_log_maintenance: ClusterMaintenance | None
    listeners: Sequence[Listener]
    security: Security
    clock: Clock
    loading: bool

    async def complete_group_txn(self, group_id: str, producer_id: int, commit: bool) -> bool: ...

    def schedule_cleanup(self) -> None: ...


def share_home(broker: Broker) -> ClusterShareState | None:
    """Cluster mode: where the share service keeps share-partition state (None on a single node)."""
    cfg = broker.config
    if not cfg.cluster or not isinstance(broker.logs, ClusterLog):
        return None
    broker.share_state = ClusterShareState(broker.logs, cfg.node_id, cfg.cluster)
    return broker.share_state


def share_configs(logs: ClusterLog, configs: ConfigManager, store: StateStore | None) -> None:
    """Cluster mode, before the listeners open: topic overrides are written to the shared registry and every
    node adopts the registry's at each read of it (every lease tick), so DescribeConfigs and the retention and
    compaction settings are the same on every node; group configs are changed in PostgreSQL
    (server/cluster/group_configs.py; `join_cluster` reads them before any shard or partition is taken and
    at every tick), and so are the client metrics subscriptions (`client_metrics_configs`). This node's configs.json keeps only broker configs."""
    configs.topic_writer = logs.set_topic_configs
    logs.on_topics = lambda topics: configs.adopt_topics(
        {name: (str(info.topic_id), dict(info.configs)) for name, info in topics.items()}
    )
    logs.on_topics(logs.topics())
    assert isinstance(store, PostgresStateStore)
    shared = ClusterGroupConfigs(lambda: store.pool)
    shared.on_groups = configs.adopt_groups
    configs.shared_groups = shared
    subscriptions = ClusterGroupConfigs(lambda: store.pool, "client_metrics_configs", "name")
    subscriptions.on_groups = configs.adopt_client_metrics
    configs.shared_client_metrics = subscriptions


async def join_cluster(broker: Broker) -> None:
    """Take this node's share of the shards and partitions; nothing is loaded up front (each shard is loaded
    when this node takes its lease, each partition's share states at its first share request)."""
    assert broker.machine is not None and broker.runtime is not None and broker.share is not None
    broker.share.ready.set()
    if broker.share_state is not None and broker.config.group_share_enable:
        await broker.share_state.start()
    assert isinstance(broker.store, PostgresStateStore)
    cfg = broker.config
    ib = broker.security.inter_broker(broker.listeners)  # its listener's address: where the others reach us
    node = NodeInfo.registered(cfg.node_id, ib.listener, broker.listeners)
    logs = broker.logs
    broker.cluster = ClusterNode(
        node=node,
        store=broker.store,
        machine=broker.machine,
        runtime=broker.runtime,
        shards=cfg.offsets_topic_num_partitions,
        lease_ttl_ms=cfg.cluster_lease_ttl_ms,
        now_ms=broker.clock.now_ms,
        partitions=PartitionLeases(
            node=node,
            logs=logs,
            lease_ttl_ms=cfg.cluster_lease_ttl_ms,
            handover_per_tick=cfg.cluster_handover_per_tick,
        )
        if isinstance(logs, ClusterLog)
        else None,
        handover_per_tick=cfg.cluster_handover_per_tick,
    )
    broker.store.fence = broker.cluster
    await _cluster_group_configs(broker, broker.store, broker.cluster)
    if broker.cluster.partitions is not None and broker.share_state is not None:
        broker.cluster.partitions.on_dropped = _drop_share_states(broker.share, logs)
    if isinstance(logs, ClusterLog):
        _cluster_transactions(broker, broker.cluster, logs, ib.connect)
    await broker.cluster.start()
    if broker.cluster_log_maintenance is not None:
        broker.cluster_log_maintenance.start()
    broker.loading = False
    broker.schedule_cleanup()
    if isinstance(logs, ClusterLog):
        assert broker.txn is not None
        broker.txn.start()


async def _cluster_group_configs(broker: Broker, store: PostgresStateStore, node: ClusterNode) -> None:
    """The cluster's group configs (wired by `share_configs`): read now, before this node takes any shard or
    partition, then at every lease tick."""
    assert broker.configs is not None
    for shared in (broker.configs.shared_groups, broker.configs.shared_client_metrics):
        assert isinstance(shared, ClusterGroupConfigs)
        async with store.pool.acquire() as conn:
            await shared.refresh(conn)
        node.refreshes.append(shared.refresh)


def _drop_share_states(
    share: ShareService, logs: LogManager | None
) -> Callable[[set[tuple[str, int]]], None]:
    """A partition this node no longer leads: its share states leave memory now (their acquired records
    lapse; the next leader loads what was stored)."""

    def dropped(keys: set[tuple[str, int]]) -> None:
        for topic, partition in keys:
            info = None if logs is None else logs.topic(topic)
            if info is not None:
                share.forget(info.topic_id.hex, partition)

    return dropped


def _cluster_transactions(broker: Broker, node: ClusterNode, logs: ClusterLog, connect: Connect) -> None:
    """Transactions in cluster mode (docs/cluster.md): transactional ids live on the group shards (same
    hash, same leases), their state is loaded on takeover and fenced by the shard's epoch, markers go
    through the partition leaders and the groups' coordinators (server/cluster/markers.py)."""
    txn = broker.txn
    assert txn is not None
    shards = broker.config.offsets_topic_num_partitions
    broker.markers = MarkerRouter(
        node,
        logs,
        broker.complete_group_txn,
        retry_for_s=3 * broker.config.cluster_lease_ttl_ms / 1000,
        connect=connect,
    )
    txn.write_marker = broker.markers.write_marker
    txn.complete_group = broker.markers.complete_group
    txn.read_txn = logs.read_txn  # on the data plane's pool: produce traffic never starves the leases
    txn.epoch_of = lambda tid: node.held.get(shard_of(tid, shards), 0)
    node.on_txns_loaded = txn.load
    node.on_txns_dropped = lambda gone: txn.unload(
        [t for t in list(txn.machine.txns) if shard_of(t, shards) in gone]
    )
