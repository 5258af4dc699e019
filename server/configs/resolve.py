"""Effective values, sources and synonyms, as Kafka's `ConfigHelper.describeConfigs` reports them.

A topic config's value is its own override if set, else the first broker synonym that has a value (per
broker dynamic, cluster-default dynamic, static from the command line, then Kafka's default), converted to
the topic config's unit (log.retention.hours=168 -> retention.ms=604800000), else the topic config's own
default. Pure functions: no I/O, no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.server.configs.broker_defs import BROKER_CONFIGS
from groupcoord.server.configs.topic_defs import TOPIC_CONFIGS
from groupcoord.server.configs.types import ConfigDef, ConfigSource, ConfigType, parse
from groupcoord.server.log.config import LogConfig


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    synonyms: tuple[Synonym, ...]
    type: ConfigType
    doc: str


@dataclass(frozen=True, slots=True)
class BrokerLayers:
    """The broker-level values, highest precedence first."""

    node: Mapping[str, str]
    cluster_default: Mapping[str, str]
    static: Mapping[str, str]


def broker_synonyms(name: str, layers: BrokerLayers) -> list[Synonym]:
    """Every value `name` has at broker level, in precedence order (Kafka's synonym list for one name)."""
    out = []
    for values, source in (
        (layers.node, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (layers.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (layers.static, ConfigSource.STATIC_BROKER_CONFIG),
    ):
        if name in values:
            out.append(Synonym(name, values[name], source))
    d = BROKER_CONFIGS.get(name)
    if d is not None and d.default is not None:
        out.append(Synonym(name, d.default, ConfigSource.DEFAULT_CONFIG))
    return out


def _convert(value: str | None, factor: int) -> str | None:
    if value is None or factor == 1:
        return value
    n = int(value.strip())
    return "-1" if n < 0 else str(n * factor)


def topic_entry(d: ConfigDef, overrides: Mapping[str, str], layers: BrokerLayers) -> ConfigEntry:
    chain: list[tuple[Synonym, int]] = []
    if d.name in overrides:
        chain.append((Synonym(d.name, overrides[d.name], ConfigSource.TOPIC_CONFIG), 1))
    for broker_name, factor in d.synonyms:
        chain.extend((s, factor) for s in broker_synonyms(broker_name, layers))
    if chain:
        first, factor = chain[0]
        value, source = _convert(first.value, factor), first.source
    else:
        value, source = d.default, ConfigSource.DEFAULT_CONFIG
    return ConfigEntry(d.name, value, source, False, d.sensitive, tuple(s for s, _ in chain), d.type, d.doc)


def topic_entries(overrides: Mapping[str, str], layers: BrokerLayers) -> list[ConfigEntry]:
    return [topic_entry(d, overrides, layers) for d in TOPIC_CONFIGS.values()]


def broker_entry(d: ConfigDef, layers: BrokerLayers) -> ConfigEntry:
    chain = broker_synonyms(d.name, layers)
    value, source = (chain[0].value, chain[0].source) if chain else (None, ConfigSource.DEFAULT_CONFIG)
    return ConfigEntry(d.name, value, source, not d.dynamic, d.sensitive, tuple(chain), d.type, d.doc)


def broker_entries(layers: BrokerLayers) -> list[ConfigEntry]:
    return [broker_entry(d, layers) for d in BROKER_CONFIGS.values()]


def cluster_default_entries(layers: BrokerLayers) -> list[ConfigEntry]:
    """BROKER "" lists only the cluster-wide dynamic values that are set, as Kafka does."""
    out = []
    for name, value in layers.cluster_default.items():
        d = BROKER_CONFIGS[name]
        syn = Synonym(name, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        out.append(ConfigEntry(name, value, syn.source, False, d.sensitive, (syn,), d.type, d.doc))
    return sorted(out, key=lambda e: e.name)


def log_config(overrides: Mapping[str, str], layers: BrokerLayers) -> LogConfig:
    """The settings the log engine obeys for a topic with these overrides."""

    def value(name: str) -> object:
        entry = topic_entry(TOPIC_CONFIGS[name], overrides, layers)
        return parse(TOPIC_CONFIGS[name], entry.value or "")

    policy = value("cleanup.policy")
    return LogConfig(
        cleanup_policy=frozenset(policy if isinstance(policy, tuple) else ()),
        retention_ms=int(value("retention.ms")),  # type: ignore[call-overload]
        retention_bytes=int(value("retention.bytes")),  # type: ignore[call-overload]
        segment_bytes=int(value("segment.bytes")),  # type: ignore[call-overload]
        segment_ms=int(value("segment.ms")),  # type: ignore[call-overload]
        delete_retention_ms=int(value("delete.retention.ms")),  # type: ignore[call-overload]
        min_compaction_lag_ms=int(value("min.compaction.lag.ms")),  # type: ignore[call-overload]
        max_compaction_lag_ms=int(value("max.compaction.lag.ms")),  # type: ignore[call-overload]
        min_cleanable_dirty_ratio=float(value("min.cleanable.dirty.ratio")),  # type: ignore[arg-type]
        max_message_bytes=int(value("max.message.bytes")),  # type: ignore[call-overload]
        message_timestamp_type=str(value("message.timestamp.type")),
    )
