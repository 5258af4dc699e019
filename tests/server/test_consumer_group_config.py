"""`group.consumer.*` flags: Kafka's names, defaults and bounds (GroupCoordinatorConfig, Kafka 4.3)."""

from __future__ import annotations

import argparse

import pytest

from groupcoord.server.config import add_serve_arguments, config_from_args
from groupcoord.server.coordinator.modern.consumer.api import ConsumerGroupConfig


def parse(argv: list[str], env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return config_from_args(parser.parse_args(argv), env or {})


def test_defaults_are_kafkas() -> None:
    assert parse([]).consumer_group() == ConsumerGroupConfig(
        45000, 5000, 2**31 - 1, ("uniform", "range"), 1000, "bidirectional"
    )


def test_migration_policy_flag_and_environment() -> None:
    """`group.consumer.migration.policy`: case-insensitive, as Kafka's `ConsumerGroupMigrationPolicy.parse`."""
    cfg = parse(["--group-consumer-migration-policy", "Upgrade"]).consumer_group()
    assert (cfg.migration_policy, cfg.upgrade_enabled, cfg.downgrade_enabled) == ("upgrade", True, False)
    cfg = parse([], {"GROUPCOORD_GROUP_CONSUMER_MIGRATION_POLICY": "DISABLED"}).consumer_group()
    assert (cfg.migration_policy, cfg.upgrade_enabled, cfg.downgrade_enabled) == ("disabled", False, False)
    assert parse(["--group-consumer-migration-policy", "downgrade"]).consumer_group().downgrade_enabled


def test_flags_and_environment() -> None:
    cfg = parse(
        ["--group-consumer-assignors", "range, uniform", "--group-consumer-assignment-interval-ms", "0"],
        {"GROUPCOORD_GROUP_CONSUMER_MAX_SIZE": "3", "GROUPCOORD_GROUP_CONSUMER_SESSION_TIMEOUT_MS": "50000"},
    ).consumer_group()
    assert (cfg.assignors, cfg.assignment_interval_ms, cfg.max_size, cfg.session_timeout_ms) == (
        ("range", "uniform"), 0, 3, 50000,
    )  # fmt: skip
    full = "org.apache.kafka.coordinator.group.assignor.UniformAssignor"
    assert parse(["--group-consumer-assignors", full]).consumer_group().assignors == ("uniform",)


@pytest.mark.parametrize(
    "argv",
    [
        ["--group-consumer-session-timeout-ms", "30000"],  # below the 45000 minimum
        ["--group-consumer-heartbeat-interval-ms", "20000"],  # above the 15000 maximum
        ["--group-consumer-assignment-interval-ms", "-1"],
        ["--group-consumer-max-size", "0"],
        ["--group-consumer-assignors", "sticky"],
        ["--group-consumer-assignors", "uniform,uniform"],
        ["--group-consumer-migration-policy", "sideways"],
        ["--group-consumer-min-heartbeat-interval-ms", "1000", "--group-consumer-heartbeat-interval-ms", "45000",
         "--group-consumer-max-heartbeat-interval-ms", "50000"],  # not below the session timeout
    ],
)  # fmt: skip
def test_out_of_bounds_values_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse(argv)
