"""``replicated``: every partition goes to ``k`` distinct members, balanced.

For redundant consumption (e.g. several search indexers each building a full copy of a shard). Per topic
(in Java topic order), the topic's ``P*k`` replica slots are dealt over its subscribers ordered by current
load, then member order: slot ``s`` goes to ``subscribers[s % n]`` and partition i takes slots
``i*k .. i*k+k-1``, which are distinct members because ``k <= n``. With equal subscriptions every member
ends within one of every other.
"""

from __future__ import annotations

from groupcoord.assignors.model import (
    GroupAssignment,
    GroupInput,
    InvalidInputError,
    NotEnoughMembersError,
    TopicPartition,
    finish,
)
from groupcoord.assignors.ordering import sorted_members


class ReplicatedStrategy:
    """Each partition to ``k`` members; ``strict=False`` uses all subscribers when fewer than k exist."""

    name = "replicated"

    def __init__(self, k: int = 2, *, strict: bool = True) -> None:
        if k < 1:
            raise InvalidInputError(f"replication factor k must be >= 1, got {k}")
        self.k = k
        self.strict = strict

    def assign(self, group: GroupInput) -> GroupAssignment:
        ordered = sorted_members(group.members.values())
        rank = {m.member_id: i for i, m in enumerate(ordered)}
        load = dict.fromkeys(rank, 0)
        out: dict[str, list[TopicPartition]] = {m: [] for m in group.members}
        for topic in group.subscribed_topics():
            subs = [m.member_id for m in ordered if topic in m.topics]
            k = self.k
            if len(subs) < k:
                if self.strict:
                    raise NotEnoughMembersError(
                        f"topic {topic!r} needs {k} distinct members per partition but only "
                        f"{len(subs)} subscribe to it"
                    )
                k = len(subs)
            subs.sort(key=lambda m: (load[m], rank[m]))
            n = len(subs)
            for i, p in enumerate(group.topics[topic].partitions):
                tp = TopicPartition(topic, p)
                for s in range(i * k, i * k + k):
                    out[subs[s % n]].append(tp)
            for m in subs:
                load[m] = len(out[m])
        return finish(out, group.members)
