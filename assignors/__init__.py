"""Client-side partition-assignment strategies for Kafka's classic consumer-group protocol.

The core (this package's top level) is pure: no I/O and no aiokafka import. Build a
:class:`GroupInput` from topic metadata and member subscriptions and call a strategy's ``assign``.
aiokafka adapters live in :mod:`groupcoord.assignors.adapters` (imported on demand so the core stays light).
"""

from groupcoord.assignors.cooperative import CooperativeStickyStrategy
from groupcoord.assignors.copartition import CopartitionStrategy
from groupcoord.assignors.model import (
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
from groupcoord.assignors.rack_aware import RackAwareStrategy
from groupcoord.assignors.range import RangeStrategy
from groupcoord.assignors.replicated import ReplicatedStrategy
from groupcoord.assignors.roundrobin import RoundRobinStrategy
from groupcoord.assignors.sticky import StickyStrategy

__all__ = [
    "AssignmentError",
    "CooperativeStickyStrategy",
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
