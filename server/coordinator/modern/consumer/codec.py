"""Consumer groups to and from their records (Kafka's `GroupCoordinatorRecordHelpers` and the consumer-group
half of `GroupMetadataManager.replay`, spec §6).

Replay is order-independent between keys (stores keep the latest value per key and hand them back in any
order): a member metadata or current-assignment record creates the member if needed and sets only its own
fields; tombstones never reach replay (stores delete the key).
"""

from __future__ import annotations

import uuid

from groupcoord.server.coordinator.modern.consumer.api import Partitions
from groupcoord.server.coordinator.modern.consumer.group import ConsumerGroup
from groupcoord.server.coordinator.modern.consumer.member import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroupMember,
)
from groupcoord.server.coordinator.records import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    CONSUMER_GROUP_MEMBER_METADATA,
    CONSUMER_GROUP_METADATA,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    TopicPartitionsValue,
)


def _partitions_value(p: Partitions) -> tuple[TopicPartitionsValue, ...]:
    return tuple(TopicPartitionsValue(str(t), tuple(sorted(p[t]))) for t in sorted(p, key=str) if p[t])


def _assignment_value(a: Assignment) -> tuple[TopicPartitionsValue, ...]:
    out = []
    for t in sorted(a, key=str):
        parts = sorted(a[t])
        if parts:
            out.append(TopicPartitionsValue(str(t), tuple(parts), tuple(a[t][p] for p in parts)))
    return tuple(out)


def _assignment(
    values: tuple[TopicPartitionsValue, ...], member_epoch: int
) -> dict[uuid.UUID, dict[int, int]]:
    """Missing or mismatched assignment epochs (an older record) default to max(member epoch, 0)."""
    out: dict[uuid.UUID, dict[int, int]] = {}
    for tp in values:
        epochs = tp.assignment_epochs
        if epochs is None or len(epochs) != len(tp.partitions):
            epochs = (max(member_epoch, 0),) * len(tp.partitions)
        out[uuid.UUID(tp.topic_id)] = dict(zip(tp.partitions, epochs, strict=True))
    return out


def group_metadata(group_id: str, epoch: int, metadata_hash: int) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        CONSUMER_GROUP_METADATA, group_id, "", ConsumerGroupMetadataValue(epoch, metadata_hash)
    )


def member_metadata(group_id: str, m: ConsumerGroupMember) -> ConsumerGroupRecord:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=m.instance_id,
        rack_id=m.rack_id,
        client_id=m.client_id,
        client_host=m.client_host,
        subscribed_topic_names=m.subscribed_topic_names,
        subscribed_topic_regex=m.subscribed_topic_regex,
        rebalance_timeout_ms=m.rebalance_timeout_ms,
        server_assignor=m.server_assignor,
        classic_session_timeout_ms=None if m.classic is None else m.classic.session_timeout_ms,
        classic_protocols=None
        if m.classic is None
        else tuple((name, meta.hex()) for name, meta in m.classic.protocols),
    )
    return ConsumerGroupRecord(CONSUMER_GROUP_MEMBER_METADATA, group_id, m.member_id, value)


def target_member(group_id: str, member_id: str, target: Partitions) -> ConsumerGroupRecord:
    value = ConsumerGroupTargetAssignmentMemberValue(_partitions_value(target))
    return ConsumerGroupRecord(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id, value)


def target_metadata(group_id: str, epoch: int, timestamp: int) -> ConsumerGroupRecord:
    value = ConsumerGroupTargetAssignmentMetadataValue(epoch, timestamp)
    return ConsumerGroupRecord(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group_id, "", value)


def current_assignment(group_id: str, m: ConsumerGroupMember) -> ConsumerGroupRecord:
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=m.member_epoch,
        previous_member_epoch=m.previous_member_epoch,
        state=m.state,
        assigned_partitions=_assignment_value(m.assigned),
        partitions_pending_revocation=_assignment_value(m.pending_revocation),
    )
    return ConsumerGroupRecord(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, m.member_id, value)


def member_tombstones(group_id: str, member_id: str) -> list[ConsumerGroupRecord]:
    """Current assignment, target member, member metadata: Kafka's order when a member is removed."""
    return [
        ConsumerGroupRecord(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id, None),
        ConsumerGroupRecord(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id, None),
        ConsumerGroupRecord(CONSUMER_GROUP_MEMBER_METADATA, group_id, member_id, None),
    ]


def group_tombstones(g: ConsumerGroup) -> list[ConsumerGroupRecord]:
    """Kafka's `createGroupTombstoneRecords` order; the epoch tombstone last."""
    gid = g.group_id
    ids = sorted(set(g.members) | set(g.target))
    out = [ConsumerGroupRecord(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, gid, mid, None) for mid in ids]
    out += [ConsumerGroupRecord(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, gid, mid, None) for mid in ids]
    out.append(ConsumerGroupRecord(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, gid, "", None))
    out += [ConsumerGroupRecord(CONSUMER_GROUP_MEMBER_METADATA, gid, mid, None) for mid in ids]
    out.append(ConsumerGroupRecord(CONSUMER_GROUP_METADATA, gid, "", None))
    return out


def replay(groups: dict[str, ConsumerGroup], r: ConsumerGroupRecord) -> None:
    """Apply one stored record (a tombstone too, for symmetry with Kafka's replay)."""
    g = groups.get(r.group_id)
    if g is None:
        if r.value is None:
            return
        g = groups[r.group_id] = ConsumerGroup(r.group_id)
    v = r.value
    if r.kind == CONSUMER_GROUP_METADATA:
        if v is None:
            del groups[r.group_id]
        elif isinstance(v, ConsumerGroupMetadataValue):
            g.group_epoch, g.metadata_hash = v.epoch, v.metadata_hash
    elif r.kind == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA and isinstance(
        v, ConsumerGroupTargetAssignmentMetadataValue
    ):
        g.assignment_epoch, g.assignment_timestamp = v.assignment_epoch, v.assignment_timestamp
    elif r.kind == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        if v is None:
            g.target.pop(r.member_id, None)
        elif isinstance(v, ConsumerGroupTargetAssignmentMemberValue):
            g.target[r.member_id] = {
                uuid.UUID(tp.topic_id): frozenset(tp.partitions) for tp in v.topic_partitions if tp.partitions
            }
    elif r.kind == CONSUMER_GROUP_MEMBER_METADATA:
        if v is None:
            g.remove_member(r.member_id)
        elif isinstance(v, ConsumerGroupMemberMetadataValue):
            m = g.members.get(r.member_id) or ConsumerGroupMember(r.member_id)
            g.update_member(
                m.replace(
                    instance_id=v.instance_id,
                    rack_id=v.rack_id,
                    client_id=v.client_id,
                    client_host=v.client_host,
                    subscribed_topic_names=tuple(v.subscribed_topic_names),
                    subscribed_topic_regex=v.subscribed_topic_regex,
                    rebalance_timeout_ms=v.rebalance_timeout_ms,
                    server_assignor=v.server_assignor,
                    classic=None
                    if v.classic_protocols is None
                    else ClassicMemberMetadata(
                        v.classic_session_timeout_ms or 0,
                        tuple((name, bytes.fromhex(meta)) for name, meta in v.classic_protocols),
                    ),
                )
            )
    elif r.kind == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        m = g.members.get(r.member_id) or ConsumerGroupMember(r.member_id)
        if v is None:
            g.update_member(
                m.replace(member_epoch=-1, previous_member_epoch=-1, assigned={}, pending_revocation={})
            )
        elif isinstance(v, ConsumerGroupCurrentMemberAssignmentValue):
            g.update_member(
                m.replace(
                    member_epoch=v.member_epoch,
                    previous_member_epoch=v.previous_member_epoch,
                    state=v.state,
                    assigned=_assignment(v.assigned_partitions, v.member_epoch),
                    pending_revocation=_assignment(v.partitions_pending_revocation, v.member_epoch),
                )
            )
