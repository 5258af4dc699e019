"""Interim bridge from a topic's CreateTopics configs (name, value strings) to its `LogConfig`.

The configs side (server/configs/) owns validation, defaults, broker-level overrides and durability of topic
configs, and calls `LogManager.set_log_config` itself; until it does, `LogManager` builds the `LogConfig` of
a topic from the configs it was created with, here. Values that do not parse keep Kafka's default (CreateTopics
validation of values belongs to the configs side).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from groupcoord.server.log.config import LogConfig

_INT_FIELDS = {
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "delete.retention.ms": "delete_retention_ms",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "max.message.bytes": "max_message_bytes",
}


def log_config_from(configs: Iterable[tuple[str, str | None]], base: LogConfig | None = None) -> LogConfig:
    changes: dict[str, object] = {}
    for name, value in configs:
        if value is None:
            continue
        try:
            if name in _INT_FIELDS:
                changes[_INT_FIELDS[name]] = int(value)
            elif name == "cleanup.policy":
                policy = frozenset(p.strip().lower() for p in value.split(",") if p.strip())
                if policy and policy <= {"compact", "delete"}:
                    changes["cleanup_policy"] = policy
            elif name == "min.cleanable.dirty.ratio":
                changes["min_cleanable_dirty_ratio"] = float(value)
            elif name == "message.timestamp.type" and value in ("CreateTime", "LogAppendTime"):
                changes["message_timestamp_type"] = value
        except ValueError:
            continue
    return dataclasses.replace(base or LogConfig(), **changes)  # type: ignore[arg-type]
