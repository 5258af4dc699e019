"""The configs room without a server: Kafka's parse/validation messages, effective values with sources and
synonyms, IncrementalAlterConfigs operations, the LogConfig handed to the log, and configs.json."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.config import ServerConfig
from groupcoord.server.configs.broker_defs import BROKER_CONFIGS
from groupcoord.server.configs.manager import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    ConfigManager,
    check_broker_configs,
    check_topic_configs,
    incremental,
    static_broker_values,
)
from groupcoord.server.configs.resolve import BrokerLayers, broker_entry, log_config, topic_entry
from groupcoord.server.configs.topic_defs import TOPIC_CONFIGS
from groupcoord.server.configs.types import ConfigSource
from groupcoord.server.log.config import LogConfig

NO_LAYERS = BrokerLayers({}, {}, {})


def test_kafka_defaults_make_the_default_log_config() -> None:
    assert log_config({}, NO_LAYERS) == LogConfig()


def test_every_topic_config_has_a_parsable_default_and_documentation() -> None:
    for d in TOPIC_CONFIGS.values():
        assert d.doc and d.default is not None
        assert check_topic_configs({d.name: d.default}) is None, d.name


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("retention.ms", "abc", "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
        ("retention.ms", "-5", "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
        ("cleanup.policy", "compact,bogus",
         "Invalid value compact,bogus for configuration cleanup.policy: String must be one of: compact, delete"),
        ("message.timestamp.type", "Now",
         "Invalid value Now for configuration message.timestamp.type: String must be one of: CreateTime, "
         "LogAppendTime"),
        ("min.cleanable.dirty.ratio", "1.5",
         "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
        ("segment.bytes", "1000",
         "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"),
        ("preallocate", "yes",
         "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
        ("no.such.config", "1", "Unknown topic config name: no.such.config"),
    ],
)  # fmt: skip
def test_bad_topic_values_get_invalid_config_with_kafkas_message(name: str, value: str, message: str) -> None:
    assert check_topic_configs({name: value}) == (ErrorCode.INVALID_CONFIG, message)


def test_compaction_lags_must_be_ordered() -> None:
    refusal = check_topic_configs({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    assert refusal is not None and refusal[0] == ErrorCode.INVALID_CONFIG


def test_read_only_broker_configs_cannot_be_altered() -> None:
    assert check_broker_configs({"node.id": "3"}) == (
        ErrorCode.INVALID_REQUEST,
        "Cannot update these configs dynamically: [node.id]",
    )
    assert check_broker_configs({"log.retention.ms": "1000"}) is None


def test_retention_ms_follows_the_broker_synonyms_in_kafkas_order() -> None:
    d = TOPIC_CONFIGS["retention.ms"]
    e = topic_entry(d, {}, NO_LAYERS)
    assert (e.value, e.source) == ("604800000", ConfigSource.DEFAULT_CONFIG)
    assert [(s.name, s.value, s.source) for s in e.synonyms] == [
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)
    ]
    layers = BrokerLayers({}, {"log.retention.minutes": "5"}, {"log.retention.hours": "24"})
    e = topic_entry(d, {}, layers)
    assert (e.value, e.source) == ("300000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    e = topic_entry(d, {"retention.ms": "1000"}, layers)
    assert (e.value, e.source) == ("1000", ConfigSource.TOPIC_CONFIG)
    assert [s.source for s in e.synonyms] == [
        ConfigSource.TOPIC_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.STATIC_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG,
    ]
    # a negative hour count means "no limit", not a negative number of milliseconds
    assert topic_entry(d, {}, BrokerLayers({}, {"log.retention.hours": "-1"}, {})).value == "-1"


def test_broker_entries_are_read_only_unless_dynamic() -> None:
    static = static_broker_values(ServerConfig(node_id=3, log_retention_hours=24))
    # the --host/--port shorthand is Kafka's one PLAINTEXT listener
    assert static == {"node.id": "3", "log.retention.hours": "24", "listeners": "PLAINTEXT://127.0.0.1:9092"}
    layers = BrokerLayers({"log.retention.hours": "12"}, {}, static)
    node = broker_entry(BROKER_CONFIGS["node.id"], layers)
    assert (node.value, node.source, node.read_only) == ("3", ConfigSource.STATIC_BROKER_CONFIG, True)
    hours = broker_entry(BROKER_CONFIGS["log.retention.hours"], layers)
    assert (hours.value, hours.source, hours.read_only) == ("12", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    unset = broker_entry(BROKER_CONFIGS["log.retention.ms"], layers)
    assert (unset.value, unset.source) == (None, ConfigSource.DEFAULT_CONFIG)


def test_incremental_operations() -> None:
    defs = TOPIC_CONFIGS
    assert incremental({"retention.ms": "5"}, defs, [("retention.ms", DELETE, None)]) == {}
    assert incremental({}, defs, [("cleanup.policy", APPEND, "compact")]) == {
        "cleanup.policy": "delete,compact"
    }
    assert incremental(
        {"cleanup.policy": "compact,delete"}, defs, [("cleanup.policy", SUBTRACT, "delete")]
    ) == {"cleanup.policy": "compact"}
    assert incremental({}, defs, [("retention.ms", APPEND, "5")]) == (
        ErrorCode.INVALID_CONFIG,
        "Config value append is not allowed for config key: retention.ms",
    )
    assert incremental({}, defs, [("retention.ms", SET, "5"), ("retention.ms", DELETE, None)])[0] == (
        ErrorCode.INVALID_REQUEST
    )
    assert incremental({}, defs, [("retention.ms", 9, "5")])[0] == ErrorCode.INVALID_REQUEST


def test_configs_survive_a_new_manager_and_follow_topic_ids(tmp_path: Path) -> None:
    applied: dict[str, LogConfig] = {}
    path = tmp_path / "configs.json"

    async def main() -> None:
        cm = ConfigManager(path, {}, 0, applied.__setitem__)
        await cm.set_topic("t", "id-1", {"cleanup.policy": "compact"})
        await cm.set_broker(True, {"log.retention.hours": "1"}, {"t": "id-1"})
        assert (
            applied["t"].cleanup_policy == frozenset({"compact"}) and applied["t"].retention_ms == 3_600_000
        )

    asyncio.run(main())
    applied.clear()
    again = ConfigManager(path, {}, 0, applied.__setitem__)
    again.load_topics({"t": ("id-1", {}), "gone-and-back": ("id-9", {})})
    assert applied["t"] == LogConfig(cleanup_policy=frozenset({"compact"}), retention_ms=3_600_000)
    assert applied["gone-and-back"] == LogConfig(retention_ms=3_600_000)
    # the same name with another id (deleted and created again) starts from the defaults
    assert again.topic_overrides("t", "id-2") == {}


def test_adopted_group_configs_tell_only_the_groups_that_changed(tmp_path: Path) -> None:
    """Cluster mode's lease tick hands every group's overrides to `adopt_groups`: the groups whose overrides
    changed (or went) are told, the others not, and configs.json is not written."""
    path = tmp_path / "configs.json"
    cm = ConfigManager(path, {}, 0, lambda name, cfg: None)
    told: list[tuple[str, dict[str, str]]] = []
    cm.on_group_changed = lambda g, cfg: told.append((g, dict(cfg)))
    cm.adopt_groups(
        {"a": {"share.isolation.level": "read_committed"}, "b": {"consumer.heartbeat.interval.ms": "6000"}}
    )
    assert sorted(told) == [
        ("a", {"share.isolation.level": "read_committed"}),
        ("b", {"consumer.heartbeat.interval.ms": "6000"}),
    ]
    told.clear()
    cm.adopt_groups({"a": {"share.isolation.level": "read_committed"}})
    assert told == [("b", {})] and cm.group_overrides("b") == {} and not path.exists()
