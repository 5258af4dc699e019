"""The configs room's one stateful object: topic overrides and dynamic broker configs, validated as Kafka
validates them, kept durable in `configs.json`, and pushed to the log engine as a `LogConfig` whenever a
topic's effective settings change (create, alter, delete of an override, a broker default change, start-up).

Alterations are computed and validated first (nothing changes on a refusal), then written, then applied:
a reply that says NONE means the change is on disk and in force.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.configs import store
from groupcoord.server.configs.broker_defs import BROKER_CONFIGS
from groupcoord.server.configs.resolve import BrokerLayers, ConfigEntry, log_config
from groupcoord.server.configs.topic_defs import TOPIC_CONFIGS
from groupcoord.server.configs.types import ConfigDef, ConfigError, ConfigType, parse
from groupcoord.server.log.config import LogConfig

Refusal = tuple[ErrorCode, str]
#: given a group's current overrides, the ones to write (None: write nothing)
Decide = Callable[[dict[str, str]], "dict[str, str] | None"]


class SharedGroupConfigs(Protocol):
    """Cluster mode: where the cluster's group configs live (server/cluster/group_configs.py)."""

    async def update(self, group_id: str, decide: Decide) -> dict[str, str] | None:
        """Read the group's overrides, `decide`, write what it returns, atomically over the cluster; the
        overrides written (None: nothing written). OSError on failure."""
        ...


#: IncrementalAlterConfigs operations (`AlterConfigOp.OpType`)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
#: what Kafka stores for `__consumer_offsets` (`GroupCoordinator.offsetsTopicConfigs`, defaults)
INTERNAL_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "compression.type": "producer",
    "segment.bytes": "104857600",
}


def static_broker_values(cfg: object) -> dict[str, str]:
    """Command-line values (`ServerConfig` attributes) that differ from Kafka's default, as text."""
    out: dict[str, str] = {}
    for d in BROKER_CONFIGS.values():
        if d.attr is None:
            continue
        value = getattr(cfg, d.attr, None)
        if value is None:
            continue
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if text != d.default:
            out[d.name] = text
    return out


def check_static_broker_values(values: Mapping[str, str]) -> list[str]:
    """Kafka's start-up validation of server.properties values, for the ones given on our command line."""
    problems = []
    for name, value in values.items():
        try:
            parse(BROKER_CONFIGS[name], value)
        except ConfigError as exc:
            problems.append(f"--{name.replace('.', '-')}: {exc}")
    return problems


def check_topic_configs(configs: Mapping[str, str]) -> Refusal | None:
    """Kafka's `LogConfig.validate`: known names, parsable values in range, and the cross-field rules."""
    for name, value in configs.items():
        d = TOPIC_CONFIGS.get(name)
        if d is None:
            return ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}"
        try:
            parse(d, value)
        except ConfigError as exc:
            return ErrorCode.INVALID_CONFIG, str(exc)
    if configs.get("remote.storage.enable", "false").strip().lower() == "true":
        return (
            ErrorCode.INVALID_CONFIG,
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log "
            "storage.",
        )
    lo = int(configs.get("min.compaction.lag.ms", "0").strip())
    hi = int(configs.get("max.compaction.lag.ms", str(2**63 - 1)).strip())
    if lo > hi:
        return (
            ErrorCode.INVALID_CONFIG,
            f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})",
        )
    return None


def check_broker_configs(configs: Mapping[str, str]) -> Refusal | None:
    """Only dynamic broker configs may be set at run time; values must parse."""
    unknown = [n for n in configs if n not in BROKER_CONFIGS]
    if unknown:
        return ErrorCode.INVALID_REQUEST, f"Unknown broker configs: [{', '.join(sorted(unknown))}]"
    static = [n for n in configs if not BROKER_CONFIGS[n].dynamic]
    if static:
        return (
            ErrorCode.INVALID_REQUEST,
            f"Cannot update these configs dynamically: [{', '.join(sorted(static))}]",
        )
    for name, value in configs.items():
        try:
            parse(BROKER_CONFIGS[name], value)
        except ConfigError as exc:
            return ErrorCode.INVALID_REQUEST, str(exc)
    return None


def incremental(
    current: Mapping[str, str],
    defs: Mapping[str, ConfigDef],
    ops: Iterable[tuple[str, int, str | None]],
) -> dict[str, str] | Refusal:
    """Kafka's `prepareIncrementalConfigs`: SET, DELETE, APPEND and SUBTRACT (lists only) applied in order."""
    out = dict(current)
    names = [n for n, _, _ in ops]
    if len(set(names)) != len(names):
        return ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
    for name, op, value in ops:
        d = defs.get(name)
        if op not in (SET, DELETE, APPEND, SUBTRACT):
            return ErrorCode.INVALID_REQUEST, f"Unknown alter configs operation type {op}"
        if op == DELETE:
            out.pop(name, None)
            continue
        if value is None:
            return ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}"
        if op == SET:
            out[name] = value
            continue
        if d is None or d.type != ConfigType.LIST:
            verb = "append" if op == APPEND else "subtract"
            return ErrorCode.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}"
        old = out.get(name, d.default or "")
        items = [i.strip() for i in old.split(",") if i.strip()]
        change = [i.strip() for i in value.split(",") if i.strip()]
        if op == APPEND:
            items += [i for i in change if i not in items]
        else:
            items = [i for i in items if i not in change]
        out[name] = ",".join(items)
    return out


class ConfigManager:
    def __init__(
        self,
        path: Path | None,
        static: Mapping[str, str],
        node_id: int,
        apply: Callable[[str, LogConfig], None],
    ) -> None:
        self.path = path
        self.node_id = node_id
        self.state = store.load(path)
        self.static = dict(static)
        self._apply = apply
        self._write_lock = asyncio.Lock()
        #: told (group id, its group configs) after a change of a group's configs is durable (the broker
        #: hands them to the group coordinator and the share partitions)
        self.on_group_changed: Callable[[str, Mapping[str, str]], None] | None = None
        #: cluster mode: topic overrides live in the shared topic registry (PostgreSQL); `set_topic` writes
        #: them there (OSError on failure) instead of this node's configs.json, and `adopt_topics` takes them
        self.topic_writer: Callable[[str, str, dict[str, str]], Awaitable[None]] | None = None
        #: cluster mode: group overrides are the cluster's (PostgreSQL, server/cluster/group_configs.py);
        #: `update_group` changes them there, `adopt_groups` takes the table's at every lease tick
        self.shared_groups: SharedGroupConfigs | None = None
        #: cluster mode: client metrics subscriptions are the cluster's likewise (same protocol, its own table)
        self.shared_client_metrics: SharedGroupConfigs | None = None

    # ------------------------------------------------------------------ reading

    @property
    def layers(self) -> BrokerLayers:
        return BrokerLayers(self.state.node, self.state.cluster_default, self.static)

    def topic_overrides(self, name: str, topic_id: str) -> dict[str, str]:
        stored = self.state.topics.get(name)
        return dict(stored[1]) if stored is not None and stored[0] == topic_id else {}

    def log_config(self, name: str, topic_id: str) -> LogConfig:
        return log_config(self.topic_overrides(name, topic_id), self.layers)

    def broker_name_refusal(self, name: str) -> Refusal | None:
        """`ConfigHelper`'s checks on a BROKER resource name: "" (cluster default) or this node's id."""
        if name == "":
            return None
        try:
            broker = int(name)
        except ValueError:
            return ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        if broker != self.node_id:
            return (
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {self.node_id} or empty string, but received {name}",
            )
        return None

    # ------------------------------------------------------------------ start-up

    def load_topics(self, topics: Mapping[str, tuple[str, Mapping[str, str]]]) -> None:
        """Drop overrides of topics that are gone; adopt configs kept in the topic registry by older versions
        (`topics.json`, issue 10); push every topic's LogConfig to the log engine."""
        kept = {}
        for name, (topic_id, registry_configs) in topics.items():
            stored = self.state.topics.get(name)
            if stored is not None and stored[0] == topic_id:
                kept[name] = stored
            elif registry_configs:
                kept[name] = (topic_id, dict(registry_configs))
        self.state.topics = kept
        for name, (topic_id, _) in topics.items():
            self._apply(name, self.log_config(name, topic_id))

    # ------------------------------------------------------------------ changes

    def adopt_topics(self, topics: Mapping[str, tuple[str, Mapping[str, str]]]) -> None:
        """Cluster mode: the shared registry's overrides (name -> (topic id, overrides)) replace this node's;
        topics whose overrides changed get their LogConfig again."""
        new = {name: (tid, dict(cfg)) for name, (tid, cfg) in topics.items() if cfg}
        changed = [n for n in topics if new.get(n) != self.state.topics.get(n)]
        self.state.topics = new
        for name in changed:
            self._apply(name, self.log_config(name, topics[name][0]))

    async def set_topic(self, name: str, topic_id: str, overrides: Mapping[str, str]) -> None:
        """Replace a topic's overrides (already validated): write, then apply."""
        if self.topic_writer is not None:
            await self.topic_writer(name, topic_id, dict(overrides))
            if overrides:
                self.state.topics[name] = (topic_id, dict(overrides))
            else:
                self.state.topics.pop(name, None)
            self._apply(name, self.log_config(name, topic_id))
            return
        if overrides or name in self.state.topics:  # a topic without overrides needs no entry
            before = dataclasses.replace(self.state, topics=dict(self.state.topics))
            self.state.topics[name] = (topic_id, dict(overrides))
            await self._persist(before)
        self._apply(name, self.log_config(name, topic_id))

    async def set_broker(
        self, cluster_default: bool, values: Mapping[str, str], topics: Mapping[str, str]
    ) -> None:
        """Replace this scope's dynamic broker configs (validated); re-apply every topic (name -> id)."""
        before = dataclasses.replace(self.state)
        if cluster_default:
            self.state = dataclasses.replace(self.state, cluster_default=dict(values))
        else:
            self.state = dataclasses.replace(self.state, node=dict(values))
        await self._persist(before)
        for name, topic_id in topics.items():
            self._apply(name, self.log_config(name, topic_id))

    def group_overrides(self, group_id: str) -> dict[str, str]:
        return dict(self.state.groups.get(group_id, {}))

    async def set_group(self, group_id: str, overrides: Mapping[str, str]) -> None:
        """Replace a group's configs (already validated): write, then tell the groups."""
        before = dataclasses.replace(self.state, groups=dict(self.state.groups))
        if overrides:
            self.state.groups[group_id] = dict(overrides)
        else:
            self.state.groups.pop(group_id, None)
        await self._persist(before)
        if self.on_group_changed is not None:
            self.on_group_changed(group_id, dict(overrides))

    async def update_group(self, group_id: str, decide: Decide) -> None:
        """A change of a group's configs: `decide` (validation included) sees the current overrides and names
        the new ones (None: no change, e.g. refused or validate-only); they are written, then the groups are
        told. In cluster mode the current ones are the cluster's, read and written in one transaction, so
        two nodes changing one group at once cannot lose either change. OSError on a failed write."""
        if self.shared_groups is None:
            wanted = decide(self.group_overrides(group_id))
            if wanted is not None:
                await self.set_group(group_id, wanted)
            return
        wanted = await self.shared_groups.update(group_id, decide)
        if wanted is not None:
            self._set_group(group_id, wanted)

    def adopt_groups(self, groups: Mapping[str, Mapping[str, str]]) -> None:
        """Cluster mode: the cluster's group overrides (group id -> overrides) replace this node's; the groups
        whose overrides changed (or went) are told."""
        for group_id in set(groups) | set(self.state.groups):
            wanted = dict(groups.get(group_id, {}))
            if wanted != self.state.groups.get(group_id, {}):
                self._set_group(group_id, wanted)

    def _set_group(self, group_id: str, overrides: Mapping[str, str]) -> None:
        if overrides:
            self.state.groups[group_id] = dict(overrides)
        else:
            self.state.groups.pop(group_id, None)
        if self.on_group_changed is not None:
            self.on_group_changed(group_id, dict(overrides))

    def client_metrics_overrides(self, name: str) -> dict[str, str]:
        return dict(self.state.client_metrics.get(name, {}))

    async def update_client_metrics(self, name: str, decide: Decide) -> None:
        """A change of a client metrics subscription (CLIENT_METRICS resource): as `update_group`, `decide`
        names the new configs (None: no change; empty: the subscription goes). In cluster mode they are the
        cluster's (`shared_client_metrics`, one transaction). OSError on a failed write."""
        if self.shared_client_metrics is not None:
            wanted = await self.shared_client_metrics.update(name, decide)
            if wanted is not None:
                self._set_client_metrics(name, wanted)
            return
        wanted = decide(self.client_metrics_overrides(name))
        if wanted is None:
            return
        before = dataclasses.replace(self.state, client_metrics=dict(self.state.client_metrics))
        self._set_client_metrics(name, wanted)
        await self._persist(before)

    def adopt_client_metrics(self, subscriptions: Mapping[str, Mapping[str, str]]) -> None:
        """Cluster mode: the cluster's subscriptions replace this node's."""
        self.state.client_metrics = {n: dict(c) for n, c in subscriptions.items() if c}

    def _set_client_metrics(self, name: str, configs: Mapping[str, str]) -> None:
        if configs:
            self.state.client_metrics[name] = dict(configs)
        else:
            self.state.client_metrics.pop(name, None)

    def forget_topic(self, name: str) -> None:
        """A deleted topic's overrides go with it at the next write (ids keep them from being reused)."""
        self.state.topics.pop(name, None)

    async def _persist(self, before: store.StoredConfigs) -> None:
        if self.path is None:
            return
        try:
            async with self._write_lock:
                # a snapshot: the loop may change the state while the thread writes
                await asyncio.to_thread(store.save, self.path, copy.deepcopy(self.state))
        except OSError:
            self.state = before
            raise


def entries_for(entries: list[ConfigEntry], keys: Iterable[str] | None) -> list[ConfigEntry]:
    """Kafka filters by the requested keys and silently skips unknown ones."""
    if keys is None:
        return entries
    wanted = set(keys)
    return [e for e in entries if e.name in wanted]
