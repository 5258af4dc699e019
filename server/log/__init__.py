"""Data-plane storage: per-partition append-only logs of Kafka record batches (see docs/storage.md)."""

from server.log.errors import LogError
from server.log.flush import FlushPolicy
from server.log.manager import AppendResult, LogManager, OffsetResult, ReadResult
from server.log.partition import PartitionLog
from server.log.producer_state import ProducerStateManager
from server.log.topics import TopicInfo, validate_topic_name

__all__ = [
    "AppendResult",
    "FlushPolicy",
    "LogError",
    "LogManager",
    "OffsetResult",
    "PartitionLog",
    "ProducerStateManager",
    "ReadResult",
    "TopicInfo",
    "validate_topic_name",
]
