"""The `uniform` server assignor (Kafka's `UniformAssignor`, the default): balanced and sticky.

Homogeneous groups (every member subscribes to the same topics) follow Kafka's
`UniformHomogeneousAssignmentBuilder` step by step: each member keeps up to its quota of its current target,
the extra partitions go to the members that already hold them or, failing that, to the last members; the
unassigned partitions then fill the members with spare quota in order. Heterogeneous groups follow the
outline of `UniformHeterogeneousAssignmentBuilder` (balance over stickiness): keep what is still subscribed,
give each unassigned partition to the least-loaded subscriber of its topic (topics with the most partitions
per subscriber first), then move partitions from the most- to the least-loaded subscriber of each topic
while their loads differ by more than one. Loads differ by at most one whenever subscriptions allow it.
"""

from __future__ import annotations

import heapq
import uuid

from groupcoord.server.coordinator.assignors.api import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    counts_of,
    ordered,
)

Result = dict[str, dict[uuid.UUID, frozenset[int]]]


class UniformAssignor:
    name = "uniform"

    def assign(self, group: GroupSpec) -> Result:
        members = sorted(group.members, key=lambda m: m.member_id)
        if not members:
            return {}
        if group.homogeneous:
            return _homogeneous(members, group)
        return _heterogeneous(members, group)


def _homogeneous(members: list[MemberSpec], group: GroupSpec) -> Result:
    subscribed = members[0].subscribed
    if not subscribed:
        return {m.member_id: {} for m in members}
    topics = ordered(subscribed)
    counts = counts_of(group, topics)
    held = {(t, p) for m in members for t, ps in m.current.items() for p in ps}
    unassigned = [(t, p) for t in topics for p in range(counts[t]) if (t, p) not in held]
    total = sum(counts.values())
    n = len(members)
    min_quota, extra_left = divmod(total, n)
    out: Result = {}
    unfilled: list[tuple[str, int]] = []
    for index, m in enumerate(members):
        quota = min_quota
        has_extra = False
        if extra_left > 0:
            quota += 1
            has_extra = True
        kept: dict[uuid.UUID, frozenset[int]] = {}
        for t in ordered(frozenset(m.current)):
            parts = sorted(m.current[t])
            if t not in subscribed:
                continue  # the topic is dropped entirely
            if len(parts) <= quota:
                quota -= len(parts)
                kept[t] = frozenset(parts)
                continue
            keep, give = parts[:quota], parts[quota:]
            quota = 0
            if keep:
                kept[t] = frozenset(keep)
            unassigned.extend((t, p) for p in give)
        if quota > 0 and has_extra and n - index > extra_left:
            quota -= 1  # give the extra back: a later member must take it
            has_extra = False
        if quota > 0:
            unfilled.append((m.member_id, quota))
        if has_extra:
            extra_left -= 1
        out[m.member_id] = kept
    i = 0
    for member_id, quota in unfilled:
        target = {t: set(ps) for t, ps in out[member_id].items()}
        taken = 0
        while taken < quota and i < len(unassigned):
            t, p = unassigned[i]
            target.setdefault(t, set()).add(p)
            i += 1
            taken += 1
        out[member_id] = {t: frozenset(ps) for t, ps in target.items()}
    if i < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return out


def _heterogeneous(members: list[MemberSpec], group: GroupSpec) -> Result:
    index = {m.member_id: i for i, m in enumerate(members)}
    topics = ordered(frozenset().union(*(m.subscribed for m in members)))
    counts = counts_of(group, topics)
    subscribers = {t: [m.member_id for m in members if t in m.subscribed] for t in topics}
    owner: dict[tuple[uuid.UUID, int], str] = {}
    load = {m.member_id: 0 for m in members}
    for m in members:
        for t in ordered(frozenset(m.current)):
            if t not in m.subscribed:
                continue
            for p in sorted(m.current[t]):
                if p < counts[t] and (t, p) not in owner:
                    owner[(t, p)] = m.member_id
                    load[m.member_id] += 1

    def least(candidates: list[str]) -> str:
        return min(candidates, key=lambda mid: (load[mid], index[mid]))

    by_pressure = sorted(
        topics, key=lambda t: (-counts[t] / len(subscribers[t]), len(subscribers[t]), str(t))
    )
    for t in by_pressure:
        # the least-loaded subscriber, (load, index) order, from a heap: only this loop changes these loads
        # while the topic is filled, so each pick equals `least(subscribers[t])` at O(log n), not O(n)
        heap = [(load[mid], index[mid], mid) for mid in subscribers[t]]
        heapq.heapify(heap)
        for p in range(counts[t]):
            if (t, p) not in owner:
                _, i, mid = heapq.heappop(heap)
                owner[(t, p)] = mid
                load[mid] += 1
                heapq.heappush(heap, (load[mid], i, mid))
    # bounded balancing: move a partition of a shared topic from the most to the least loaded subscriber
    for _ in range(sum(counts.values()) * max(1, len(members))):
        moved = False
        for t in by_pressure:
            subs = subscribers[t]
            if len(subs) < 2:
                continue
            lo = least(subs)
            holding = {owner[(t, p)] for p in range(counts[t]) if (t, p) in owner}
            holders = [mid for mid in subs if mid in holding]
            if not holders:
                continue
            hi = max(holders, key=lambda mid: (load[mid], -index[mid]))
            if load[hi] - load[lo] > 1:
                p = max(p for p in range(counts[t]) if owner.get((t, p)) == hi)
                owner[(t, p)] = lo
                load[hi] -= 1
                load[lo] += 1
                moved = True
        if not moved:
            break
    out: Result = {m.member_id: {} for m in members}
    grouped: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in members}
    for (t, p), mid in owner.items():
        grouped[mid].setdefault(t, set()).add(p)
    for mid, assignment in grouped.items():
        out[mid] = {t: frozenset(ps) for t, ps in assignment.items()}
    return out
