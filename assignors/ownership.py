"""KIP-792: which previously owned partitions may be trusted when computing a sticky assignment.

A member that missed a rebalance still reports the partitions it had then. Trusting them would let two
members keep the same partition, so (as the issue specifies) claims made at a generation older than the
newest generation in the group are ignored, and claims that still overlap are resolved to the newest one;
two claims at the same generation cannot both be right, so such a partition is treated as unowned
(Kafka's AbstractStickyAssignor does the same).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from groupcoord.assignors.model import Member, TopicPartition


def trusted_owned(
    members: Iterable[Member], valid: Callable[[Member, TopicPartition], bool]
) -> dict[str, list[TopicPartition]]:
    """Map member id -> owned partitions that survive generation and overlap checks.

    ``valid(member, tp)`` filters claims on partitions that no longer exist or are no longer subscribed.
    Every member id appears in the result (possibly with an empty list).
    """
    members = list(members)
    newest = max((m.generation for m in members), default=-1)
    best: dict[TopicPartition, tuple[int, str | None]] = {}  # tp -> (generation, owner or None if tied)
    for m in members:
        if m.generation < newest:
            continue  # stale: this member missed at least one generation
        for tp in m.owned:
            if not valid(m, tp):
                continue
            prev = best.get(tp)
            if prev is None or m.generation > prev[0]:
                best[tp] = (m.generation, m.member_id)
            elif m.generation == prev[0] and prev[1] != m.member_id:
                best[tp] = (m.generation, None)
    out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    for tp, (_gen, owner) in best.items():
        if owner is not None:
            out[owner].append(tp)
    for owned in out.values():
        owned.sort()
    return out
