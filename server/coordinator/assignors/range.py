"""The `range` server assignor (Kafka's `RangeAssignor`): co-partitioning, deterministic, not sticky.

Members sort static first (by instance id, Java's UTF-16 `compareTo`), then by member id; per topic its
subscribers in that order take contiguous ranges, the first `parts % n` one partition more. Two topics with
the same partition count and subscribers therefore get the same ranges (spec §4.4).
"""

from __future__ import annotations

import uuid

from groupcoord.server.coordinator.assignors.api import GroupSpec, MemberSpec, counts_of, ordered


def _utf16(s: str) -> bytes:
    return s.encode("utf-16-be")


def _order(m: MemberSpec) -> tuple[int, bytes, str]:
    if m.instance_id is not None:
        return (0, _utf16(m.instance_id), m.member_id)
    return (1, _utf16(m.member_id), m.member_id)


class RangeAssignor:
    name = "range"

    def assign(self, group: GroupSpec) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
        members = sorted(group.members, key=_order)
        out: dict[str, dict[uuid.UUID, frozenset[int]]] = {m.member_id: {} for m in members}
        topics = ordered(frozenset().union(*(m.subscribed for m in members)) if members else frozenset())
        counts = counts_of(group, topics)
        for t in topics:
            subscribers = [m for m in members if t in m.subscribed]
            parts = counts[t]
            quota, extra = divmod(parts, len(subscribers))
            start = 0
            for m in subscribers:
                n = quota + (1 if extra > 0 else 0)
                extra -= 1 if extra > 0 else 0
                end = min(start + n, parts)
                if end > start:
                    out[m.member_id][t] = frozenset(range(start, end))
                start = end
        return out
