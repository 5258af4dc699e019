"""``sticky``: balanced assignment that moves as few partitions as possible, with KIP-792 generations.

Previously owned partitions come from each member's subscription (v1+ ``ownedPartitions`` with the v2+
``generationId``, or the ``StickyAssignorUserDataV1`` user data that Java's and aiokafka's eager sticky
assignors send); :func:`groupcoord.assignors.ownership.trusted_owned` drops stale and conflicting claims, and
:func:`groupcoord.assignors.balance.sticky_balance` does the rest.
"""

from __future__ import annotations

from collections.abc import Callable

from groupcoord.assignors.balance import sticky_balance
from groupcoord.assignors.model import GroupAssignment, GroupInput, Member, TopicPartition, finish
from groupcoord.assignors.ordering import sorted_members
from groupcoord.assignors.ownership import trusted_owned


def partition_validator(group: GroupInput) -> Callable[[Member, TopicPartition], bool]:
    """Claims are valid only on existing partitions of topics the claiming member still subscribes to."""
    existing = {t: set(group.topics[t].partitions) for t in group.subscribed_topics()}

    def valid(member: Member, tp: TopicPartition) -> bool:
        parts = existing.get(tp.topic)
        return parts is not None and tp.partition in parts and tp.topic in member.topics

    return valid


class StickyStrategy:
    """Kafka's ``sticky`` protocol name; our own balancing algorithm (not output-identical to Java)."""

    name = "sticky"

    def assign(self, group: GroupInput) -> GroupAssignment:
        ordered = [m.member_id for m in sorted_members(group.members.values())]
        topics = group.subscribed_topics()
        items = {t: [TopicPartition(t, p) for p in group.topics[t].partitions] for t in topics}
        eligible = {t: [m for m in ordered if t in group.members[m].topics] for t in topics}
        owned = trusted_owned(group.members.values(), partition_validator(group))
        return finish(sticky_balance(items, eligible, ordered, owned), group.members)
