"""Data-plane storage: per-partition append-only logs of Kafka record batches (see docs/storage.md)."""

from groupcoord.server.log.errors import LogError
from groupcoord.server.log.flush import FlushPolicy
from groupcoord.server.log.manager import AppendResult, LogManager, OffsetResult, ReadResult
from groupcoord.server.log.partition import PartitionLog
from groupcoord.server.log.producer_state import ProducerStateManager
from groupcoord.server.log.topics import TopicInfo, validate_topic_name

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
