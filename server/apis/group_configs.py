"""GROUP config resources (type 32) of DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs
(44): Kafka's `ConfigHelper` (describe) and `ControllerConfigurationValidator` (alter) for group configs
(server/configs/group_defs.py).

A group's configs may be set whether or not the group exists (as in Kafka); an empty name is refused with
INVALID_REQUEST ("Group name must not be empty" on describe, "Default group resources are not allowed." on
alter); a bad name or value is INVALID_CONFIG with Kafka's message. A change answers NONE once it is in
`configs.json` (in cluster mode: PostgreSQL, read and written in one transaction); the broker then hands it to
the group coordinator and the share partitions.

Uses of the server (`ctx.services`): `ctx.services.configs` (the ConfigManager), `ctx.services.config`
(the broker values the group configs override).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.configs.group_defs import GroupBounds, bounds, check_group_configs, group_entries
from groupcoord.server.configs.manager import ConfigManager, Refusal
from groupcoord.server.configs.resolve import ConfigEntry

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

OK: Refusal = (ErrorCode.NONE, "")


def group_bounds(cfg: Any) -> GroupBounds:
    """The broker values and bounds from the server's `group.consumer.*` / `group.share.*` settings."""
    broker = {
        "group.consumer.session.timeout.ms": str(cfg.group_consumer_session_timeout_ms),
        "group.consumer.heartbeat.interval.ms": str(cfg.group_consumer_heartbeat_interval_ms),
        "group.consumer.assignment.interval.ms": str(cfg.group_consumer_assignment_interval_ms),
        "group.share.session.timeout.ms": str(cfg.group_share_session_timeout_ms),
        "group.share.heartbeat.interval.ms": str(cfg.group_share_heartbeat_interval_ms),
        "group.share.record.lock.duration.ms": str(cfg.group_share_record_lock_duration_ms),
        "group.share.delivery.count.limit": str(cfg.group_share_delivery_count_limit),
        "group.share.partition.max.record.locks": str(cfg.group_share_partition_max_record_locks),
    }
    consumer = {
        "consumer.session.timeout.ms": (
            cfg.group_consumer_min_session_timeout_ms,
            cfg.group_consumer_max_session_timeout_ms,
        ),
        "consumer.heartbeat.interval.ms": (
            cfg.group_consumer_min_heartbeat_interval_ms,
            cfg.group_consumer_max_heartbeat_interval_ms,
        ),
        "consumer.assignment.interval.ms": (
            cfg.group_consumer_min_assignment_interval_ms,
            cfg.group_consumer_max_assignment_interval_ms,
        ),
    }
    return bounds(broker, consumer)


def describe_group(ctx: RequestContext, name: str) -> tuple[Refusal | None, list[ConfigEntry]]:
    if not name:
        return (ErrorCode.INVALID_REQUEST, "Group name must not be empty"), []
    configs: ConfigManager = ctx.services.configs
    return None, group_entries(configs.group_overrides(name), group_bounds(ctx.services.config))


async def alter_group(ctx: RequestContext, name: str, change: Any, validate_only: bool) -> Refusal:
    if not name:
        return ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."
    configs: ConfigManager = ctx.services.configs
    outcome: Refusal = OK

    def decide(current: dict[str, str]) -> dict[str, str] | None:
        """The change applied to the group's current overrides (the cluster's in cluster mode)."""
        nonlocal outcome
        outcome = OK  # called again when the cluster's row changed under it
        wanted = change(current)
        if isinstance(wanted, tuple):
            outcome = wanted
            return None
        problem = check_group_configs(wanted, group_bounds(ctx.services.config))
        if problem is not None:
            outcome = (ErrorCode.INVALID_CONFIG, problem)
            return None
        return None if validate_only else dict(wanted)

    try:
        await configs.update_group(name, decide)
    except OSError as exc:
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"could not write the configs: {exc.strerror}"
    return outcome
