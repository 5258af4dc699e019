"""Subscriptions on the wire (ConsumerProtocolSubscription v0..v3) <-> the core's :class:`Member`.

Pure (no aiokafka import), so the decoding rules are testable on their own.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.assignors.adapters.userdata import decode_labels, decode_sticky_user_data
from groupcoord.assignors.model import Member, TopicPartition
from groupcoord.protocol.consumer import ConsumerProtocolSubscription, TopicPartitions


def group_partitions(tps: Iterable[TopicPartition]) -> tuple[TopicPartitions, ...]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(tps):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items())


def member_from_subscription(
    member_id: str, sub: ConsumerProtocolSubscription, *, sticky_user_data: bool = False
) -> Member:
    """Build a core Member from any subscription version.

    Owned partitions and generation come from the v1/v2 fields when the sender filled in a generation (as
    Java does for sticky). Otherwise, for ``sticky``, they come from StickyAssignorUserDataV1 in the user
    data (Java's eager sticky, aiokafka's sticky and our adapters behind aiokafka's v0-only leader decode).
    """
    owned = [TopicPartition(tp.topic, p) for tp in sub.owned_partitions for p in tp.partitions]
    generation = sub.generation_id if sub.version >= 2 else -1
    if sticky_user_data and generation < 0:
        decoded = decode_sticky_user_data(sub.user_data)
        if decoded is not None:
            owned, generation = decoded
    labels = decode_labels(sub.user_data)
    return Member(
        member_id=member_id,
        topics=frozenset(sub.topics),
        user_data=sub.user_data,
        owned=tuple(owned),
        generation=generation,
        rack=sub.rack_id if sub.version >= 3 else None,
        labels=labels,
    )
