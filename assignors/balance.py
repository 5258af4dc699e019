"""The balancing engine shared by ``sticky``, ``copartition`` and ``rack-aware``.

Given items (partitions, or co-partitioned units) grouped by topic, the members eligible for each topic,
and which items each member currently holds ("owned"), produce a balanced assignment that keeps as many
owned items where they are as balance allows.

* Equal eligibility (every member may take every item, the usual "same subscription" case): targets are
  ``floor(P/N)`` plus one extra for ``P % N`` members, and the extras go to the members owning the most,
  so the number of moved items is the minimum any balanced assignment needs:
  ``sum(max(0, owned_i - target_i))`` plus the previously unowned items.
* Unequal eligibility: unowned items go to the least-loaded eligible member (scarcest topics first), then
  items move from a member to an eligible one with at least two fewer items until no such move exists,
  moving items that were not owned before in preference. Each move lowers the sum of squared loads, so
  this terminates; it is balanced in Kafka's sense but not guaranteed minimal in moves.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from groupcoord.assignors.model import AssignmentError

T = TypeVar("T", bound=Hashable)


def sticky_balance(
    items_by_topic: Mapping[str, Sequence[T]],
    eligible: Mapping[str, Sequence[str]],
    members: Sequence[str],
    owned: Mapping[str, Sequence[T]],
) -> dict[str, list[T]]:
    """Balanced, sticky assignment of ``items_by_topic`` (see module docstring).

    ``members`` is the canonical (deterministic) member order used for tie-breaks; ``owned`` must already
    be validated: each item claimed by at most one member, and only by a member eligible for its topic.
    """
    for topic, items in items_by_topic.items():
        if items and not eligible.get(topic):
            raise AssignmentError(f"no eligible member for topic {topic!r}")
    if not members:
        return {}
    n = len(members)
    if all(len(eligible.get(t, ())) == n for t, items in items_by_topic.items() if items):
        return _balance_equal(items_by_topic, members, owned)
    return _balance_general(items_by_topic, eligible, members, owned)


def _balance_equal(
    items_by_topic: Mapping[str, Sequence[T]], members: Sequence[str], owned: Mapping[str, Sequence[T]]
) -> dict[str, list[T]]:
    total = sum(len(v) for v in items_by_topic.values())
    floor, extra = divmod(total, len(members))
    pos = {m: i for i, m in enumerate(members)}
    by_owned = sorted(members, key=lambda m: (-len(owned.get(m, ())), pos[m]))
    target = {m: floor + (1 if i < extra else 0) for i, m in enumerate(by_owned)}

    result: dict[str, list[T]] = {}
    kept: set[T] = set()
    for m in members:
        mine = list(owned.get(m, ()))[: target[m]]
        result[m] = mine
        kept.update(mine)
    pool = [item for items in items_by_topic.values() for item in items if item not in kept]
    _deal(pool, [m for m in members if len(result[m]) < target[m]], result, target)
    return result


def _deal(pool: list[T], needy: list[str], result: dict[str, list[T]], target: Mapping[str, int]) -> None:
    """Deal ``pool`` one item at a time to members below target, cycling in order (spreads topics)."""
    it = iter(pool)
    while needy:
        still: list[str] = []
        for m in needy:
            result[m].append(next(it))
            if len(result[m]) < target[m]:
                still.append(m)
        needy = still


def _balance_general(
    items_by_topic: Mapping[str, Sequence[T]],
    eligible: Mapping[str, Sequence[str]],
    members: Sequence[str],
    owned: Mapping[str, Sequence[T]],
) -> dict[str, list[T]]:
    pos = {m: i for i, m in enumerate(members)}
    count = {m: len(owned.get(m, ())) for m in members}
    topic_of: dict[T, str] = {item: t for t, items in items_by_topic.items() for item in items}
    # held[topic][member] = (fresh items, previously owned items); fresh ones move first.
    held: dict[str, dict[str, tuple[list[T], list[T]]]] = {
        t: {m: ([], []) for m in eligible[t]} for t, items in items_by_topic.items() if items
    }
    owned_set: set[T] = set()
    for m in members:
        for item in owned.get(m, ()):
            held[topic_of[item]][m][1].append(item)
            owned_set.add(item)

    topic_order = sorted(held, key=lambda t: (len(eligible[t]), t))
    for t in topic_order:
        heap = [(count[m], pos[m], m) for m in eligible[t]]
        heapq.heapify(heap)
        for item in items_by_topic[t]:
            if item in owned_set:
                continue
            c, p, m = heapq.heappop(heap)
            held[t][m][0].append(item)
            count[m] = c + 1
            heapq.heappush(heap, (c + 1, p, m))

    moved = True
    while moved:
        moved = False
        for t in topic_order:
            if len(eligible[t]) > 1 and _level_topic(held[t], eligible[t], count, pos):
                moved = True

    result: dict[str, list[T]] = {m: [] for m in members}
    for per_member in held.values():
        for m, (fresh, kept) in per_member.items():
            result[m].extend(kept)
            result[m].extend(fresh)
    return result


def _level_topic(
    holders: dict[str, tuple[list[T], list[T]]],
    eligible: Sequence[str],
    count: dict[str, int],
    pos: Mapping[str, int],
) -> bool:
    """Move items of one topic from the most- to the least-loaded eligible member while they differ by 2+."""
    low = [(count[m], pos[m], m) for m in eligible]
    high = [(-count[m], pos[m], m) for m in eligible if holders[m][0] or holders[m][1]]
    heapq.heapify(low)
    heapq.heapify(high)
    moved = False
    while low and high:
        lc, _, lm = low[0]
        if lc != count[lm]:
            heapq.heappop(low)
            continue
        hc, _, hm = high[0]
        if -hc != count[hm] or not (holders[hm][0] or holders[hm][1]):
            heapq.heappop(high)
            continue
        if count[hm] - count[lm] < 2:
            break
        fresh, kept = holders[hm]
        item = fresh.pop() if fresh else kept.pop()
        holders[lm][0].append(item)
        count[hm] -= 1
        count[lm] += 1
        heapq.heappush(low, (count[lm], pos[lm], lm))
        heapq.heappush(low, (count[hm], pos[hm], hm))
        heapq.heappush(high, (-count[hm], pos[hm], hm))
        heapq.heappush(high, (-count[lm], pos[lm], lm))
        moved = True
    return moved
