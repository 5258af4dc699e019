"""Online migration between classic and consumer groups (spec §9; Kafka 4.3's `GroupMetadataManager`:
`convertToConsumerGroup`, `convertToClassicGroup`, `classicGroupJoinToConsumerGroup`,
`classicGroupSyncToConsumerGroup`, `classicGroupHeartbeatToConsumerGroup`, `classicGroupLeaveToConsumerGroup`;
`ConsumerGroup.fromClassicGroup`, `ClassicGroup.fromConsumerGroup`).

Upgrade: a consumer-protocol member joining a non-empty classic `consumer` group turns it into a consumer
group whose members keep the partitions their last SyncGroup gave them. Classic members then live on in the
consumer group: their JoinGroup runs the same update/target/reconcile path as a heartbeat and answers with
their member epoch as generation, SyncGroup hands them their assigned partitions, Heartbeat tells them to
rejoin (REBALANCE_IN_PROGRESS) when a new assignment waits. Downgrade: when the last consumer-protocol member
goes, the classic members left become a classic group again, which rebalances.

Pure, as the rest of the manager: everything works inside the shard's current operation.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator import consumer as embedded
from groupcoord.server.coordinator.group import COMPLETING, STABLE, ClassicGroup, Member
from groupcoord.server.coordinator.modern.consumer import codec
from groupcoord.server.coordinator.modern.consumer.api import Partitions, TopicImage
from groupcoord.server.coordinator.modern.consumer.group import ConsumerGroup
from groupcoord.server.coordinator.modern.consumer.manager import (
    ConsumerGroupManager,
    join_key,
    sync_key,
)
from groupcoord.server.coordinator.modern.consumer.member import (
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ClassicMemberMetadata,
    ConsumerGroupMember,
)
from groupcoord.server.coordinator.modern.consumer.target import metadata_hash
from groupcoord.server.coordinator.modern.consumer.validation import HeartbeatError
from groupcoord.server.coordinator.records import ConsumerGroupRecord
from groupcoord.server.coordinator.types import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveGroupRequest,
    LeaveGroupResult,
    ScheduleTimer,
    SyncGroupRequest,
    SyncGroupResult,
)

E = ErrorCode
CONSUMER = embedded.CONSUMER


class MigrationError(Exception):
    """The group cannot be converted: the heartbeat that asked for it gets GROUP_ID_NOT_FOUND."""


# ============================================================================================= upgrade


def upgrade_problem(classic: ClassicGroup, mgr: ConsumerGroupManager) -> str | None:
    """Kafka's `validateOnlineUpgrade`: why this non-empty classic group may not become a consumer group."""
    gid = classic.group_id
    if not mgr.config.upgrade_enabled:
        return f"Cannot upgrade classic group {gid} to consumer group because online upgrade is disabled."
    if classic.protocol_type != CONSUMER:
        return (
            f"Cannot upgrade classic group {gid} to consumer group because the group does not use the consumer "
            "embedded protocol."
        )
    if len(classic.members) > mgr.config.max_size:
        return (
            f"Cannot upgrade classic group {gid} to consumer group because the group size exceeds the consumer "
            "group maximum size."
        )
    return None


def from_classic_group(classic: ClassicGroup, topics: TopicImage) -> ConsumerGroup:
    """Kafka's `ConsumerGroup.fromClassicGroup`: group epoch = assignment epoch = generation; every member
    STABLE at the generation with its last assignment as both current and target. Raises MigrationError."""
    gen = classic.generation_id
    g = ConsumerGroup(classic.group_id)
    g.group_epoch = g.assignment_epoch = gen
    g.assignment_timestamp = 0
    for m in classic.members.values():
        # before its first generation a group has no protocol yet: a member's first one stands for it
        name = classic.protocol_name or (m.protocols[0][0] if m.protocols else None)
        sub = embedded.subscription(m.metadata(name))
        assignment = embedded.assignment(m.assignment)
        if sub is None or assignment is None:
            raise MigrationError(
                f"Cannot upgrade classic group {classic.group_id} to consumer group because the embedded "
                "consumer protocol is malformed."
            )
        if assignment.user_data:
            raise MigrationError(
                f"Cannot upgrade classic group {classic.group_id} to consumer group because an unsupported "
                "custom assignor is in use. Please refer to the documentation or switch to a default assignor "
                "before re-attempting the upgrade."
            )
        assigned = _by_id(((tp.topic, tp.partitions) for tp in assignment.assigned_partitions), topics)
        member = ConsumerGroupMember(
            m.member_id,
            member_epoch=gen,
            previous_member_epoch=gen,
            instance_id=m.group_instance_id,
            rack_id=sub.rack_id,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(set(sub.topics))),
            assigned={t: dict.fromkeys(ps, gen) for t, ps in assigned.items()},
            classic=ClassicMemberMetadata(m.session_timeout_ms, m.protocols),
        )
        g.target[m.member_id] = assigned
        g.update_member(member)
    g.metadata_hash = metadata_hash(g.subscribed_names(), topics)
    return g


def consumer_group_records(g: ConsumerGroup) -> list[ConsumerGroupRecord]:
    """Kafka's `createConsumerGroupRecords` order: members, epoch, targets, target metadata, assignments."""
    ids = sorted(g.members)
    out = [codec.member_metadata(g.group_id, g.members[mid]) for mid in ids]
    out.append(codec.group_metadata(g.group_id, g.group_epoch, g.metadata_hash))
    out += [codec.target_member(g.group_id, mid, g.target.get(mid, {})) for mid in ids]
    out.append(codec.target_metadata(g.group_id, g.assignment_epoch, g.assignment_timestamp))
    out += [codec.current_assignment(g.group_id, g.members[mid]) for mid in ids]
    return out


def install_upgraded(mgr: ConsumerGroupManager, g: ConsumerGroup) -> None:
    """Write the converted group's records, add it and arm each member's session timer with its classic
    session timeout (the classic group's tombstone is the caller's, written first)."""
    for r in consumer_group_records(g):
        mgr.ctx.fx.record(r)
    mgr.groups[g.group_id] = g
    g.resolved = {}
    g.journaled_state = g.state
    mgr.journal.event(g, "group_created", reason="upgraded")
    for m in g.members.values():
        mgr.schedule_session(g.group_id, m)


# =========================================================================================== downgrade


def downgrade_allowed(
    mgr: ConsumerGroupManager, g: ConsumerGroup, leaving: Iterable[str], max_size: int
) -> bool:
    """Kafka's `validateOnlineDowngradeWithFencedMembers`: only classic members stay, at least one, the
    policy allows it and they fit a classic group."""
    leaving = set(leaving) & set(g.members)
    remaining = len(g.members) - len(leaving)
    return (
        bool(leaving)
        and g.all_classic_except(leaving)
        and remaining > 0
        and mgr.config.downgrade_enabled
        and remaining <= max_size
    )


def to_classic_group(
    g: ConsumerGroup, leaving: Iterable[str], topics: TopicImage, now_ms: int
) -> ClassicGroup:
    """Kafka's `ClassicGroup.fromConsumerGroup`: a Stable classic group at generation = group epoch whose
    members keep their protocols and session timeouts and whose assignments are their targets, written as
    ConsumerProtocolAssignment at the version each member speaks."""
    skip = set(leaving)
    classic = ClassicGroup(g.group_id, now_ms, CONSUMER)
    classic.generation_id = g.group_epoch
    for mid, m in g.members.items():
        if mid in skip or m.classic is None:
            continue
        names: dict[str, list[int]] = {}
        for t, ps in g.target.get(mid, {}).items():
            name = topics.topic_name(t)
            if name is not None:
                names[name] = sorted(ps)
        first = m.classic.protocols[0][1] if m.classic.protocols else b""
        member = Member(
            mid,
            m.instance_id,
            m.client_id,
            m.client_host,
            max(m.rebalance_timeout_ms, 0),
            m.classic.session_timeout_ms,
            CONSUMER,
            m.classic.protocols,
            embedded.encode_partitions(names, embedded.subscription_version(first)),
        )
        classic.add(member, None)
    classic.protocol_name = classic.select_protocol()
    classic.compute_subscribed_topics()
    classic.previous_state, classic.state = COMPLETING, STABLE
    return classic


# ============================================================================ classic members: requests


def _by_id(named: Iterable[tuple[str, Iterable[int]]], topics: TopicImage) -> dict[uuid.UUID, frozenset[int]]:
    """Topic name -> partitions as topic id -> partitions; topics that do not exist are left out."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for name, ps in named:
        t = topics.topic_by_name(name)
        if t is not None and ps:
            out[t[0]] = out.get(t[0], frozenset()) | frozenset(ps)
    return out


def _supports(g: ConsumerGroup, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
    """Kafka's `ConsumerGroup.supportsClassicProtocols`."""
    if not g.members:
        return bool(protocol_type) and bool(protocols)
    if protocol_type != CONSUMER:
        return False
    classic = [m.classic for m in g.members.values() if m.classic is not None]
    return any(all(any(n == name for n, _ in c.protocols) for c in classic) for name, _ in protocols)


def classic_join(
    mgr: ConsumerGroupManager,
    g: ConsumerGroup,
    req: JoinGroupRequest,
    topics: TopicImage,
    classic_max_size: int,
    downgrade: Callable[[ConsumerGroup, bool], None],
) -> JoinGroupResult:
    """Kafka's `classicGroupJoinToConsumerGroup` (spec §9.3): the answer, to be sent once the records the
    join wrote into the operation's Effects are durable. When the joiner is a static member replacing the
    last consumer-protocol member (spec §9.2 trigger B), `downgrade(group, rebalance)` turns the group into a
    classic group (`rebalance`: the assignment is stale)."""
    fx = mgr.ctx.fx

    def fail(code: ErrorCode, member_id: str = req.member_id) -> JoinGroupResult:
        return JoinGroupResult(int(code), member_id=member_id)

    if mgr.config.migration_policy == "disabled":
        return fail(E.INCONSISTENT_GROUP_PROTOCOL)
    unknown = req.member_id == ""
    member_id = mgr.new_member_id() if unknown else req.member_id
    holder = g.static_member(req.group_instance_id)
    if holder is None and member_id not in g.members and len(g.members) >= mgr.config.max_size:
        return fail(E.GROUP_MAX_SIZE_REACHED)
    if not _supports(g, req.protocol_type, req.protocols):
        return fail(E.INCONSISTENT_GROUP_PROTOCOL)
    if unknown and req.version >= 4 and req.group_instance_id is None:
        return fail(E.MEMBER_ID_REQUIRED, member_id)
    sub = embedded.subscription(req.protocols[0][1])
    if sub is None:  # Kafka: "Malformed embedded consumer protocol in subscription deserialization."
        return fail(E.INCONSISTENT_GROUP_PROTOCOL)
    replaced = None
    if holder is not None and holder.member_id != member_id:
        # a classic joiner always takes over the instance id (Kafka's replaceMember)
        member = holder.replace(
            member_id=member_id,
            member_epoch=0,
            previous_member_epoch=0,
            pending_revocation={},
            assigned={t: dict(ps) for t, ps in holder.assigned.items()},
        )
        replaced = holder
    else:
        member = g.members.get(member_id) or ConsumerGroupMember(member_id)
    updated = member.replace(
        instance_id=req.group_instance_id if req.group_instance_id is not None else member.instance_id,
        rack_id=sub.rack_id if sub.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms
        if req.rebalance_timeout_ms != -1
        else member.rebalance_timeout_ms,
        subscribed_topic_names=tuple(sorted(set(sub.topics))),
        subscribed_topic_regex=None,
        client_id=req.client_id,
        client_host=req.client_host,
        classic=ClassicMemberMetadata(req.session_timeout_ms, req.protocols),
    )
    # Kafka's validateOnlineDowngradeWithReplacedMember
    downgrading = (
        replaced is not None
        and g.all_classic_except([replaced.member_id])
        and mgr.config.downgrade_enabled
        and len(g.members) <= classic_max_size
    )
    assignment_epoch = g.assignment_epoch
    owned: Partitions = _by_id(((tp.topic, tp.partitions) for tp in sub.owned_partitions), topics)
    try:
        reconciled = mgr.apply_update(g, False, member_id, member, updated, replaced, topics, owned)
    except HeartbeatError as err:
        return fail(E(err.code))
    mgr.cancel(join_key(g.group_id, member_id))
    if downgrading:
        downgrade(g, assignment_epoch < g.group_epoch)
    else:
        mgr.schedule_session(g.group_id, reconciled)
        deadline = mgr.ctx.now + max(req.rebalance_timeout_ms, 0)
        fx.timer(ScheduleTimer(sync_key(g.group_id, member_id), deadline))
    return JoinGroupResult(
        int(E.NONE),
        generation_id=reconciled.member_epoch,
        protocol_type=CONSUMER,
        protocol_name=req.protocols[0][0],
        leader="",
        member_id=member_id,
    )


def _classic_member(g: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember | int:
    """Kafka's `validateConsumerGroupMember` + `throwIfMemberDoesNotUseClassicProtocol`: the member or the
    error code."""
    if instance_id is None:
        m = g.members.get(member_id)
    else:
        m = g.static_member(instance_id)
        if m is not None and m.member_id != member_id:
            return int(E.FENCED_INSTANCE_ID)
    if m is None or m.classic is None:
        return int(E.UNKNOWN_MEMBER_ID)
    return m


def classic_sync(
    mgr: ConsumerGroupManager, g: ConsumerGroup, req: SyncGroupRequest, topics: TopicImage
) -> SyncGroupResult:
    """Kafka's `classicGroupSyncToConsumerGroup`: the member's assigned partitions; the leader's assignments,
    if any, are ignored (the coordinator assigns)."""
    m = _classic_member(g, req.member_id, req.group_instance_id)
    if isinstance(m, int):
        return SyncGroupResult(m)
    assert m.classic is not None
    if req.generation_id != m.member_epoch:
        return SyncGroupResult(int(E.ILLEGAL_GENERATION))
    name, metadata = m.classic.protocols[0] if m.classic.protocols else ("", b"")
    if (req.protocol_type is not None and req.protocol_type != CONSUMER) or (
        req.protocol_name is not None and req.protocol_name != name
    ):
        return SyncGroupResult(int(E.INCONSISTENT_GROUP_PROTOCOL))
    if g.group_epoch > m.member_epoch and m.state != UNREVOKED_PARTITIONS:
        mgr.schedule_join_if_absent(g.group_id, m)
        return SyncGroupResult(int(E.REBALANCE_IN_PROGRESS))
    mgr.cancel(sync_key(g.group_id, m.member_id))
    mgr.schedule_session(g.group_id, m)
    names: dict[str, list[int]] = {}
    for t, ps in m.assigned.items():
        topic = topics.topic_name(t)
        if topic is not None and ps:
            names[topic] = sorted(ps)
    payload = embedded.encode_partitions(names, embedded.subscription_version(metadata))
    return SyncGroupResult(int(E.NONE), req.protocol_type, req.protocol_name, payload)


def classic_heartbeat(mgr: ConsumerGroupManager, g: ConsumerGroup, req: HeartbeatRequest) -> int:
    """Kafka's `classicGroupHeartbeatToConsumerGroup`: REBALANCE_IN_PROGRESS when the member must rejoin to
    catch up with a newer assignment, finish a revocation, or collect partitions that are free now."""
    m = _classic_member(g, req.member_id, req.group_instance_id)
    if isinstance(m, int):
        return m
    if req.generation_id != m.member_epoch:
        return int(E.ILLEGAL_GENERATION)
    mgr.schedule_session(g.group_id, m)
    if (
        m.member_epoch < g.assignment_epoch
        or m.state == UNREVOKED_PARTITIONS
        or (m.state == UNRELEASED_PARTITIONS and not _waiting_on_unreleased(g, m))
    ):
        mgr.schedule_join_if_absent(g.group_id, m)
        return int(E.REBALANCE_IN_PROGRESS)
    return int(E.NONE)


def _waiting_on_unreleased(g: ConsumerGroup, m: ConsumerGroupMember) -> bool:
    """Kafka's `waitingOnUnreleasedPartition`: a target partition it lacks is still owned by another member."""
    for t, ps in g.target.get(m.member_id, {}).items():
        have = m.assigned.get(t, {})
        if any(p not in have and g.partition_epoch(t, p) != -1 for p in ps):
            return True
    return False


def classic_leave(mgr: ConsumerGroupManager, g: ConsumerGroup, req: LeaveGroupRequest) -> LeaveGroupResult:
    """Kafka's `classicGroupLeaveToConsumerGroup`: per-identity answers; the valid ones fenced together."""
    out: list[tuple[str, str | None, int]] = []
    leaving: list[str] = []
    for x in req.members:
        if x.group_instance_id is None:
            m = g.members.get(x.member_id)
            err = 0 if m is not None else int(E.UNKNOWN_MEMBER_ID)
        else:
            m = g.static_member(x.group_instance_id)
            if m is None:
                err = int(E.UNKNOWN_MEMBER_ID)
            elif x.member_id and x.member_id != m.member_id:
                err = int(E.FENCED_INSTANCE_ID)
            else:
                err = 0
        out.append((x.member_id, x.group_instance_id, err))
        if not err and m is not None:
            leaving.append(m.member_id)
    if leaving:
        mgr.fence(g, leaving, None, "left")
    return LeaveGroupResult(int(E.NONE), tuple(out))
