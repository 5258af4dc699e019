"""The concrete aiokafka assignors, one per core strategy."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from groupcoord.assignors.adapters.base import CoreAssignor
from groupcoord.assignors.adapters.userdata import encode_sticky_user_data
from groupcoord.assignors.copartition import CopartitionStrategy
from groupcoord.assignors.model import GroupAssignment, GroupInput
from groupcoord.assignors.rack_aware import RackAwareStrategy
from groupcoord.assignors.range import RangeStrategy
from groupcoord.assignors.replicated import ReplicatedStrategy
from groupcoord.assignors.roundrobin import RoundRobinStrategy
from groupcoord.assignors.sticky import StickyStrategy


class RangeAssignor(CoreAssignor):
    """``range``, identical to Java's RangeAssignor (including KIP-881 racks)."""

    name = "range"

    def run(self, group: GroupInput) -> GroupAssignment:
        return RangeStrategy().assign(group)


class RoundRobinAssignor(CoreAssignor):
    """``roundrobin``, identical to Java's RoundRobinAssignor."""

    name = "roundrobin"

    def run(self, group: GroupInput) -> GroupAssignment:
        return RoundRobinStrategy().assign(group)


class StickyAssignor(CoreAssignor):
    """``sticky`` with KIP-792 generations; interoperates with Java's and aiokafka's eager ``sticky``."""

    name = "sticky"
    uses_sticky_user_data = True

    def subscription_user_data(self) -> bytes | None:
        return encode_sticky_user_data(self.owned, self.generation)

    def run(self, group: GroupInput) -> GroupAssignment:
        return StickyStrategy().assign(group)


class CopartitionAssignor(CoreAssignor):
    """``copartition``: ``sets`` lists groups of topics whose partition p must go to one member."""

    name = "copartition"

    def __init__(self, sets: Iterable[Iterable[str]], **kwargs: Any) -> None:
        self.strategy = CopartitionStrategy(sets)
        super().__init__(**kwargs)

    def run(self, group: GroupInput) -> GroupAssignment:
        return self.strategy.assign(group)


class ReplicatedAssignor(CoreAssignor):
    """``replicated``: every partition to ``k`` distinct members (``strict=False``: fewer if needed)."""

    name = "replicated"

    def __init__(self, k: int = 2, *, strict: bool = True, **kwargs: Any) -> None:
        self.strategy = ReplicatedStrategy(k, strict=strict)
        super().__init__(**kwargs)

    def run(self, group: GroupInput) -> GroupAssignment:
        return self.strategy.assign(group)


class RackAwareAssignor(CoreAssignor):
    """``rack-aware``: prefer members in a rack holding a replica; give this member's rack as ``rack``."""

    name = "rack-aware"

    def run(self, group: GroupInput) -> GroupAssignment:
        return RackAwareStrategy().assign(group)
