"""``rack-aware``: metadata-based assignment that keeps consumers next to their partitions' replicas.

A member's rack is its subscription v3 ``rack_id`` or, failing that, the ``rack`` label in its user
data (aiokafka's leader only sees v0 fields unless full decoding is installed, and labels travel in v0).
Partition racks are the racks of the partition's replicas as reported in Metadata (groupcoord's
``--broker-rack`` fills them in).

Each partition is first given a *preferred* member: its previous owner if that member is in a matching
rack (so moves stay rare), otherwise the least-preferred-so-far eligible member of a matching rack.
The sticky engine then keeps as many preferences as balance allows, so the result is always balanced and
falls back to any rack when a rack has too few members (or none) for its partitions.
"""

from __future__ import annotations

import heapq

from groupcoord.assignors.balance import sticky_balance
from groupcoord.assignors.model import GroupAssignment, GroupInput, Member, TopicPartition, finish
from groupcoord.assignors.ordering import sorted_members
from groupcoord.assignors.ownership import trusted_owned
from groupcoord.assignors.sticky import partition_validator

RACK_LABEL = "rack"


def member_rack(member: Member) -> str | None:
    """The rack a member advertised: v3 rack_id first, then the ``rack`` user-data label."""
    return member.rack or member.labels.get(RACK_LABEL) or None


class RackAwareStrategy:
    """Rack-preferring balanced assignment (see module docstring)."""

    name = "rack-aware"

    def assign(self, group: GroupInput) -> GroupAssignment:
        ordered = [m.member_id for m in sorted_members(group.members.values())]
        rack = {m: member_rack(group.members[m]) for m in ordered}
        topics = group.subscribed_topics()
        items = {t: [TopicPartition(t, p) for p in group.topics[t].partitions] for t in topics}
        eligible = {t: [m for m in ordered if t in group.members[m].topics] for t in topics}
        previous = {
            tp: m
            for m, tps in trusted_owned(group.members.values(), partition_validator(group)).items()
            for tp in tps
        }

        preferred: dict[str, list[TopicPartition]] = {m: [] for m in ordered}
        pos = {m: i for i, m in enumerate(ordered)}
        for t in topics:
            # One heap per rack of (preferences so far, member order, member): the head is the next pick.
            heaps: dict[str, list[tuple[int, int, str]]] = {}
            for m in eligible[t]:
                if rack[m] is not None:
                    heaps.setdefault(rack[m], []).append((len(preferred[m]), pos[m], m))
            if not heaps:
                continue
            for h in heaps.values():
                heapq.heapify(h)
            meta = group.topics[t]
            for tp in items[t]:
                replica_racks = meta.racks_of(tp.partition)
                prev = previous.get(tp)
                if prev is not None and rack[prev] in replica_racks:
                    preferred[prev].append(tp)
                    heapq.heappush(heaps[rack[prev]], (len(preferred[prev]), pos[prev], prev))
                    continue
                heads = [(_head(heaps[r], preferred), r) for r in replica_racks if r in heaps]
                if heads:
                    (_count, _pos, best), r = min(heads)
                    preferred[best].append(tp)
                    heapq.heapreplace(heaps[r], (len(preferred[best]), pos[best], best))
        return finish(sticky_balance(items, eligible, ordered, preferred), group.members)


def _head(
    heap: list[tuple[int, int, str]], preferred: dict[str, list[TopicPartition]]
) -> tuple[int, int, str]:
    """Current head of a lazily updated heap: entries whose count is out of date are discarded."""
    while heap[0][0] != len(preferred[heap[0][2]]):
        heapq.heappop(heap)
    return heap[0]
