"""``roundrobin``: Kafka's RoundRobinAssignor, output-identical to Java's for the same input.

All subscribed partitions sorted by (topic, partition) are dealt to members in ``MemberInfo`` order
(static members first), skipping members that do not subscribe to the partition's topic; the skip
advances the shared cursor exactly as Java's ``CircularIterator`` does.
"""

from __future__ import annotations

from groupcoord.assignors.model import GroupAssignment, GroupInput, TopicPartition, finish
from groupcoord.assignors.ordering import sorted_members


class RoundRobinStrategy:
    """Kafka's ``roundrobin`` strategy (see module docstring)."""

    name = "roundrobin"

    def assign(self, group: GroupInput) -> GroupAssignment:
        ordered = sorted_members(group.members.values())
        out: dict[str, list[TopicPartition]] = {m: [] for m in group.members}
        if not ordered:
            return {}
        n = len(ordered)
        cursor = 0
        for topic in group.subscribed_topics():
            subscribed = [topic in m.topics for m in ordered]
            if all(subscribed):
                # Nobody is skipped: partition i of this topic goes to the member at cursor + i.
                parts = group.topics[topic].partitions
                for i, p in enumerate(parts):
                    out[ordered[(cursor + i) % n].member_id].append(TopicPartition(topic, p))
                cursor = (cursor + len(parts)) % n
                continue
            for p in group.topics[topic].partitions:
                while not subscribed[cursor]:
                    cursor = (cursor + 1) % n
                out[ordered[cursor].member_id].append(TopicPartition(topic, p))
                cursor = (cursor + 1) % n
        return finish(out, group.members)
