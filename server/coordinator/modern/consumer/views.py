"""Read-only views of consumer groups: ConsumerGroupDescribe (Kafka's `ConsumerGroup.asDescribedGroup`,
spec §7)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.modern.consumer.api import (
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedTopicPartitions,
    TopicImage,
)
from groupcoord.server.coordinator.modern.consumer.group import (
    MEMBER_TYPE_CLASSIC,
    MEMBER_TYPE_CONSUMER,
    ConsumerGroup,
)

E = ErrorCode


def _described(
    parts: Mapping[uuid.UUID, frozenset[int]], topics: TopicImage
) -> tuple[DescribedTopicPartitions, ...]:
    """Topic names resolved from ids; a topic missing from metadata is left out, as Kafka does."""
    out = []
    for t in sorted(parts, key=str):
        name = topics.topic_name(t)
        if name is not None and parts[t]:
            out.append(DescribedTopicPartitions(t, name, tuple(sorted(parts[t]))))
    return tuple(out)


def describe(g: ConsumerGroup, topics: TopicImage, default_assignor: str) -> DescribedConsumerGroup:
    members = []
    for mid in sorted(g.members):
        m = g.members[mid]
        current: dict[uuid.UUID, frozenset[int]] = {}
        for a in (m.assigned, m.pending_revocation):  # 4.3 (KAFKA-20431): pending revocations included
            for t, ps in a.items():
                current[t] = current.get(t, frozenset()) | frozenset(ps)
        members.append(
            DescribedConsumerMember(
                member_id=mid,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topic_names,
                subscribed_topic_regex=m.subscribed_topic_regex or "",  # Kafka: "" when none (never null)
                assignment=_described(current, topics),
                target_assignment=_described(g.target.get(mid, {}), topics),
                member_type=MEMBER_TYPE_CLASSIC if m.uses_classic_protocol else MEMBER_TYPE_CONSUMER,
            )
        )
    return DescribedConsumerGroup(
        error=int(E.NONE),
        error_message=None,
        group_id=g.group_id,
        state=g.state,
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        assignor_name=g.preferred_assignor(default_assignor),
        members=tuple(members),
    )


def not_found(group_id: str, message: str) -> DescribedConsumerGroup:
    return DescribedConsumerGroup(int(E.GROUP_ID_NOT_FOUND), message, group_id)
