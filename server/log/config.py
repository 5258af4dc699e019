"""Per-topic log settings the log engine obeys (Kafka's LogConfig subset). Built from topic configs by the
configs room; the log room only reads it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogConfig:
    cleanup_policy: frozenset[str] = frozenset({"delete"})  # {"delete"}, {"compact"} or both
    retention_ms: int = 604_800_000  # -1: no time limit
    retention_bytes: int = -1  # per partition; -1: no size limit
    segment_bytes: int = 1_073_741_824
    segment_ms: int = 604_800_000
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 9_223_372_036_854_775_807
    min_cleanable_dirty_ratio: float = 0.5
    max_message_bytes: int = 1_048_588
    message_timestamp_type: str = "CreateTime"
