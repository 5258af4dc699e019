"""Server-side partition assignors of KIP-848 consumer groups (Kafka's `group.consumer.assignors`).

Apart from the client-side strategies in the top-level `assignors/` room: these run inside the coordinator,
on topic ids, and must be deterministic (Kafka iterates hash maps; we iterate member ids and topic ids in
sorted order, so the same inputs always give the same assignment).
"""

from __future__ import annotations

from groupcoord.server.coordinator.assignors.api import (
    GroupSpec,
    MemberAssignment,
    MemberSpec,
    PartitionAssignorError,
    ServerAssignor,
)
from groupcoord.server.coordinator.assignors.range import RangeAssignor
from groupcoord.server.coordinator.assignors.uniform import UniformAssignor

#: every built-in assignor by the name a client names in ServerAssignor (Kafka's built-ins)
BUILTIN: dict[str, ServerAssignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}

__all__ = [
    "BUILTIN",
    "GroupSpec",
    "MemberAssignment",
    "MemberSpec",
    "PartitionAssignorError",
    "RangeAssignor",
    "ServerAssignor",
    "UniformAssignor",
]
