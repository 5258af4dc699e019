"""Kafka's `group.share.*` broker configs that the share-group coordinator and share partitions obey.

Defaults and ranges are Kafka 4.3's (`ShareGroupConfig`, `GroupCoordinatorConfig`); the server exposes each
as a `--group-share-...` flag (server/config.py).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass

_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE)


def parse_by_duration(text: str) -> int | None:
    """The <duration> of `share.auto.offset.reset=by_duration:<duration>` (ISO-8601 PnDTnHnMn.nS, never
    negative) in milliseconds; None when malformed. (server/configs/group_defs.py validates with the same
    grammar: the configs room may not import the coordinator.)"""
    t = text.strip().upper()
    m = _DURATION.match(t)
    if m is None or t in ("P", "PT") or t.endswith("T"):
        return None
    d, h, mi, s = (m.group(i) for i in range(1, 5))
    return int((int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)) * 1000)


#: group config (Kafka's `GroupConfig`, server/configs/group_defs.py) -> the field it overrides
GROUP_CONFIG_FIELDS = {
    "share.session.timeout.ms": "session_timeout_ms",
    "share.heartbeat.interval.ms": "heartbeat_interval_ms",
    "share.record.lock.duration.ms": "record_lock_duration_ms",
    "share.delivery.count.limit": "delivery_count_limit",
    "share.partition.max.record.locks": "partition_max_record_locks",
    "share.auto.offset.reset": "auto_offset_reset",
    "share.isolation.level": "isolation_level",
    "share.renew.acknowledge.enable": "renew_acknowledge_enable",
}


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    #: `group.share.enable`: when False the share APIs answer UNSUPPORTED_VERSION (Kafka: share.version=0)
    enable: bool = True
    #: `group.share.max.size`: members per share group
    max_size: int = 200
    #: `group.share.session.timeout.ms`: a member silent this long is removed
    session_timeout_ms: int = 45000
    #: `group.share.heartbeat.interval.ms`: returned as HeartbeatIntervalMs
    heartbeat_interval_ms: int = 5000
    #: `group.share.record.lock.duration.ms`: how long an acquired record stays locked to its member
    record_lock_duration_ms: int = 30000
    #: `group.share.delivery.count.limit`: a record is delivered at most this many times, then archived
    delivery_count_limit: int = 5
    #: `group.share.partition.max.record.locks`: in-flight records (SPEO - SPSO + 1) per share partition
    partition_max_record_locks: int = 2000
    #: `group.share.max.share.sessions`: share sessions this broker keeps
    max_share_sessions: int = 2000
    #: the group config `share.auto.offset.reset` of groups that do not set it: latest, earliest or
    #: by_duration:<ISO-8601 duration>
    auto_offset_reset: str = "latest"
    #: the group config `share.isolation.level`: read_uncommitted (Kafka's default) or read_committed
    isolation_level: str = "read_uncommitted"
    #: the group config `share.renew.acknowledge.enable`: whether RENEW acknowledgements are accepted
    renew_acknowledge_enable: bool = True

    def for_group(self, group_configs: Mapping[str, str]) -> ShareGroupConfig:
        """This broker config with a group's `share.*` group configs applied (validated already when set)."""
        changes: dict[str, object] = {}
        for name, value in group_configs.items():
            attr = GROUP_CONFIG_FIELDS.get(name)
            if attr is None:
                continue
            current = getattr(self, attr)
            text = value.strip()
            if isinstance(current, bool):
                changes[attr] = text.lower() == "true"
            elif isinstance(current, int):
                changes[attr] = int(text)
            else:
                changes[attr] = text.lower() if attr != "auto_offset_reset" or ":" not in text else text
        return dataclasses.replace(self, **changes) if changes else self  # type: ignore[arg-type]

    def problems(self) -> list[str]:
        """Kafka's range checks (ShareGroupConfig), as flag names."""
        out = []
        for flag, value, lo, hi in (
            ("--group-share-max-size", self.max_size, 1, 1000),
            ("--group-share-session-timeout-ms", self.session_timeout_ms, 1, 2**31 - 1),
            ("--group-share-heartbeat-interval-ms", self.heartbeat_interval_ms, 1, 2**31 - 1),
            ("--group-share-record-lock-duration-ms", self.record_lock_duration_ms, 1000, 3600000),
            ("--group-share-delivery-count-limit", self.delivery_count_limit, 2, 10),
            ("--group-share-partition-max-record-locks", self.partition_max_record_locks, 100, 10000),
            ("--group-share-max-share-sessions", self.max_share_sessions, 1, 2**31 - 1),
        ):
            if not lo <= value <= hi:
                out.append(f"{flag} must be in [{lo}, {hi}]")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            out.append("--group-share-heartbeat-interval-ms must be below --group-share-session-timeout-ms")
        if self.auto_offset_reset not in ("latest", "earliest"):
            out.append("--share-auto-offset-reset must be latest or earliest")
        return out
