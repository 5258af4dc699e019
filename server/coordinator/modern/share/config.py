"""Kafka's `group.share.*` broker configs that the share-group coordinator and share partitions obey.

Defaults and ranges are Kafka 4.3's (`ShareGroupConfig`, `GroupCoordinatorConfig`); the server exposes each
as a `--group-share-...` flag (server/config.py).
"""

from __future__ import annotations

from dataclasses import dataclass


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
    #: the group config `share.auto.offset.reset` every group gets (no per-group configs yet): latest|earliest
    auto_offset_reset: str = "latest"

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
