"""Client-side partition-assignment strategies for Kafka's classic consumer-group protocol.

The core (this package's top level) is pure: no I/O and no aiokafka import. Build a
:class:`GroupInput` from topic metadata and member subscriptions and call a strategy's ``assign``.
aiokafka adapters live in :mod:`assignors.adapters` (imported on demand so the core stays light).
"""

from assignors.copartition import CopartitionStrategy
from assignors.model import (
    AssignmentError,
    CopartitionMismatchError,
    GroupAssignment,
    GroupInput,
    InvalidInputError,
    Member,
    MemberAssignment,
    NotEnoughMembersError,
    TopicMetadata,
    TopicPartition,
)
from assignors.rack_aware import RackAwareStrategy
from assignors.range import RangeStrategy
from assignors.replicated import ReplicatedStrategy
from assignors.roundrobin import RoundRobinStrategy
from assignors.sticky import StickyStrategy

__all__ = [
    "AssignmentError",
    "CopartitionMismatchError",
    "CopartitionStrategy",
    "GroupAssignment",
    "GroupInput",
    "InvalidInputError",
    "Member",
    "MemberAssignment",
    "NotEnoughMembersError",
    "RackAwareStrategy",
    "RangeStrategy",
    "ReplicatedStrategy",
    "RoundRobinStrategy",
    "StickyStrategy",
    "TopicMetadata",
    "TopicPartition",
]
