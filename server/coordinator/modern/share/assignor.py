"""The `simple` share-group assignor (Kafka's `SimpleAssignor` with its homogeneous assignment builder).

Members of a share group consume cooperatively, so a partition may go to several members. With M members and
P assignable partitions every partition is shared by `desired_sharing = ceil(M / P)` members, and member i (in
member order) gets `ceil(x(i+1)) - ceil(x*i)` partitions with `x = desired_sharing * P / M`, so counts differ by
at most one. The previous assignment is kept where it can be (sticky), in Kafka's order: drop partitions that
are no longer assignable, trim members holding more than their count, trim partitions shared by more than
`desired_sharing` members, then fill under-shared partitions round-robin over under-filled members, never twice
to the same member.

Heterogeneous subscriptions run the same builder per topic over that topic's subscribers (Kafka has a
separate heterogeneous builder that balances across topics; docs/differences.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

#: member id -> {topic id (hex) -> partitions}
Assignment = dict[str, dict[str, set[int]]]


def _homogeneous(
    members: Sequence[str],
    targets: Sequence[tuple[str, int]],
    old: Mapping[str, Mapping[str, set[int]]],
) -> Assignment:
    """One subscription shared by every member in `members`; `targets` the assignable partitions in order."""
    n_members = len(members)
    result: Assignment = {m: {} for m in members}
    if n_members == 0 or not targets:
        return result
    desired_sharing = (n_members + len(targets) - 1) // len(targets)
    precise = desired_sharing * len(targets) / n_members
    desired = [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(n_members)]
    target_set = set(targets)
    by_partition: dict[tuple[str, int], list[int]] = {tp: [] for tp in targets}
    by_member: list[list[tuple[str, int]]] = [[] for _ in members]
    # 1. keep what is still assignable (drop unsubscribed or vanished partitions)
    for i, m in enumerate(members):
        for topic_id, parts in sorted(old.get(m, {}).items()):
            for p in sorted(parts):
                tp = (topic_id, p)
                if tp in target_set:
                    by_partition[tp].append(i)
                    by_member[i].append(tp)
    # 2. trim members over their count
    for i in range(n_members):
        while len(by_member[i]) > desired[i]:
            tp = by_member[i].pop()
            by_partition[tp].remove(i)
    # 3. trim partitions shared by more members than desired
    for tp, holders in by_partition.items():
        while len(holders) > desired_sharing:
            i = holders.pop()
            by_member[i].remove(tp)
    # 4. fill under-shared partitions round-robin over the under-filled members
    unfilled = [i for i in range(n_members) if len(by_member[i]) < desired[i]]
    cursor = 0
    for tp in targets:
        holders = by_partition[tp]
        tried = 0
        while len(holders) < desired_sharing and unfilled and tried < len(unfilled):
            cursor %= len(unfilled)
            i = unfilled[cursor]
            if i in holders:
                cursor += 1
                tried += 1
                continue
            holders.append(i)
            by_member[i].append(tp)
            tried = 0
            if len(by_member[i]) >= desired[i]:
                unfilled.pop(cursor)
            else:
                cursor += 1
        if not unfilled:
            break
    for i, m in enumerate(members):
        for topic_id, p in by_member[i]:
            result[m].setdefault(topic_id, set()).add(p)
    return result


def assign(
    subscriptions: Mapping[str, Sequence[str]],
    topics: Mapping[str, tuple[str, int]],
    old: Mapping[str, Mapping[str, set[int]]],
) -> Assignment:
    """The target assignment.

    `subscriptions`: member id -> subscribed topic names, in member order; `topics`: topic name -> (topic id
    hex, partition count) for the topics that exist; `old`: the current target assignment.
    """
    members = list(subscriptions)
    result: Assignment = {m: {} for m in members}
    if not members:
        return result
    subscribed_sets = {frozenset(subscriptions[m]) for m in members}
    if len(subscribed_sets) == 1:
        names = sorted(n for n in next(iter(subscribed_sets)) if n in topics)
        targets = [(topics[n][0], p) for n in names for p in range(topics[n][1])]
        return _homogeneous(members, targets, old)
    for name in sorted({n for m in members for n in subscriptions[m] if n in topics}):
        topic_id, count = topics[name]
        subscribers = [m for m in members if name in subscriptions[m]]
        old_topic = {m: {topic_id: set(old.get(m, {}).get(topic_id, set()))} for m in subscribers}
        part = _homogeneous(subscribers, [(topic_id, p) for p in range(count)], old_topic)
        for m, a in part.items():
            for tid, ps in a.items():
                result[m].setdefault(tid, set()).update(ps)
    return result
