"""Group configs as Kafka 4.3's `GroupConfig` defines and validates them (server/configs/group_defs.py), and
their application to the share-group and consumer-group settings (`for_group`). Pure: no server."""

from __future__ import annotations

from groupcoord.server.configs.group_defs import GROUP_CONFIGS, bounds, check_group_configs, group_entries
from groupcoord.server.configs.types import ConfigSource
from groupcoord.server.coordinator.modern.consumer.api import ConsumerGroupConfig
from groupcoord.server.coordinator.modern.share.config import ShareGroupConfig, parse_by_duration

CONSUMER = {
    "consumer.session.timeout.ms": (45000, 60000),
    "consumer.heartbeat.interval.ms": (5000, 15000),
    "consumer.assignment.interval.ms": (0, 15000),
}


def test_kafka_names_defaults_and_sources() -> None:
    assert set(GROUP_CONFIGS) == {
        "consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms",
        "consumer.assignment.interval.ms",
        "share.session.timeout.ms",
        "share.heartbeat.interval.ms",
        "share.record.lock.duration.ms",
        "share.delivery.count.limit",
        "share.partition.max.record.locks",
        "share.auto.offset.reset",
        "share.isolation.level",
        "share.renew.acknowledge.enable",
        "share.assignment.interval.ms",
        # Kafka 4.4 has streams groups on by default: its GROUP configs list the streams.* ones too
        "streams.session.timeout.ms",
        "streams.heartbeat.interval.ms",
        "streams.num.standby.replicas",
        "streams.initial.rebalance.delay.ms",
        "streams.assignment.interval.ms",
        "streams.rack.aware.assignment.tags",
    }
    b = bounds({"group.share.record.lock.duration.ms": "40000"}, CONSUMER)
    entries = {e.name: e for e in group_entries({"share.delivery.count.limit": "3"}, b)}
    assert (entries["share.delivery.count.limit"].value, entries["share.delivery.count.limit"].source) == (
        "3",
        ConfigSource.GROUP_CONFIG,
    )
    lock = entries["share.record.lock.duration.ms"]
    assert (lock.value, lock.source) == ("40000", ConfigSource.STATIC_BROKER_CONFIG)
    assert [(s.name, s.value) for s in lock.synonyms] == [
        ("group.share.record.lock.duration.ms", "40000"),
        ("group.share.record.lock.duration.ms", "30000"),
    ]
    assert entries["share.isolation.level"].synonyms[0].name == "share.isolation.level"


def test_validation_messages_and_bounds() -> None:
    b = bounds({}, CONSUMER)
    assert check_group_configs({"share.delivery.count.limit": "10"}, b) is None
    assert check_group_configs({"x": "1"}, b) == "Unknown group config name: x"
    assert "must be greater than or equal to group.share.min.record.lock.duration.ms" in str(
        check_group_configs({"share.record.lock.duration.ms": "14999"}, b)
    )
    assert "must be less than or equal to group.share.max.partition.max.record.locks" in str(
        check_group_configs({"share.partition.max.record.locks": "4001"}, b)
    )
    assert (
        check_group_configs({"share.heartbeat.interval.ms": "15000", "share.session.timeout.ms": "45000"}, b)
        is None
    )
    assert (
        check_group_configs(
            {"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "15000"}, b
        )
        is None
    )
    # the assignment interval is checked only when the group sets it (Kafka's KAFKA-20337 note)
    assert "consumer.assignment.interval.ms must be less than" in str(
        check_group_configs({"consumer.assignment.interval.ms": "15001"}, b)
    )
    assert "Expected value to be either true or false" in str(
        check_group_configs({"share.renew.acknowledge.enable": "yes"}, b)
    )
    # a broker started with a 1 s lock widens the bound to its own value
    assert (
        check_group_configs(
            {"share.record.lock.duration.ms": "1000"},
            bounds({"group.share.record.lock.duration.ms": "1000"}, CONSUMER),
        )
        is None
    )


def test_by_duration_and_application() -> None:
    assert parse_by_duration("PT1H") == 3_600_000
    assert parse_by_duration("P1DT0.5S") == 86_400_500
    assert parse_by_duration("P0D") == 0
    assert (
        parse_by_duration("PT") is None
        and parse_by_duration("-PT1S") is None
        and parse_by_duration("1h") is None
    )
    base = ShareGroupConfig()
    cfg = base.for_group(
        {
            "share.record.lock.duration.ms": "20000",
            "share.isolation.level": "read_committed",
            "share.auto.offset.reset": "by_duration:PT5M",
            "share.renew.acknowledge.enable": "false",
            "consumer.session.timeout.ms": "50000",
        }
    )
    assert (cfg.record_lock_duration_ms, cfg.isolation_level, cfg.auto_offset_reset) == (
        20000,
        "read_committed",
        "by_duration:PT5M",
    )
    assert cfg.renew_acknowledge_enable is False and cfg.session_timeout_ms == base.session_timeout_ms
    assert base.for_group({}) is base
    consumer = ConsumerGroupConfig().for_group({"consumer.heartbeat.interval.ms": "7000", "share.x": "1"})
    assert consumer.heartbeat_interval_ms == 7000
