"""aiokafka adapters for the strategies in :mod:`assignors` (this subpackage imports aiokafka).

Usage::

    assignor = StickyAssignor()
    consumer = AIOKafkaConsumer("topic", group_id="g", partition_assignment_strategy=(assignor,))
    assignor.bind(consumer)  # lets the assignor learn its group generation (aiokafka never tells it)
"""

from groupcoord.assignors.adapters.aiokafka_compat import install_full_subscription_decoding
from groupcoord.assignors.adapters.base import CoreAssignor
from groupcoord.assignors.adapters.strategies import (
    CopartitionAssignor,
    RackAwareAssignor,
    RangeAssignor,
    ReplicatedAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)

__all__ = [
    "CopartitionAssignor",
    "CoreAssignor",
    "RackAwareAssignor",
    "RangeAssignor",
    "ReplicatedAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "install_full_subscription_decoding",
]
