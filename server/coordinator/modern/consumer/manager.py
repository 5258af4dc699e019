"""The consumer-group part of Kafka's `GroupMetadataManager` (spec §2-§5): ConsumerGroupHeartbeat, leave,
the session and rebalance timers, fencing, ConsumerGroupDescribe/ListGroups views, replay and load.

Pure: every public method works inside the shard's current operation (`OperationContext`: the time and the
`Effects` being built) and returns results; records go out in Kafka's write order (member metadata, group
epoch, target members and target metadata, current assignment). Heartbeats themselves are never written:
only the changes they cause are.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.assignors import PartitionAssignorError
from groupcoord.server.coordinator.context import OperationContext
from groupcoord.server.coordinator.modern.consumer import codec
from groupcoord.server.coordinator.modern.consumer.api import (
    ConsumerGroupConfig,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResult,
    Partitions,
    TopicImage,
)
from groupcoord.server.coordinator.modern.consumer.group import DEAD, ConsumerGroup
from groupcoord.server.coordinator.modern.consumer.journal import ConsumerJournal
from groupcoord.server.coordinator.modern.consumer.member import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    UNREVOKED_PARTITIONS,
    ConsumerGroupMember,
)
from groupcoord.server.coordinator.modern.consumer.reconciliation import (
    CurrentAssignmentBuilder,
    FencedMemberEpochError,
)
from groupcoord.server.coordinator.modern.consumer.regex import InvalidRegularExpression, RegexResolver
from groupcoord.server.coordinator.modern.consumer.steady import basis, is_steady, topics_version
from groupcoord.server.coordinator.modern.consumer.target import (
    compute_target,
    metadata_hash,
    subscribed_topic_ids,
)
from groupcoord.server.coordinator.modern.consumer.validation import (
    HeartbeatError,
    check_epoch,
    member_for,
    validate_request,
)
from groupcoord.server.coordinator.records import ConsumerGroupRecord
from groupcoord.server.coordinator.registry import CONSUMER, GroupRegistry
from groupcoord.server.coordinator.types import CancelTimer, ScheduleTimer

E = ErrorCode

SESSION = "cg-session"
REBALANCE = "cg-rebalance"
#: a classic member told to rejoin that did not / that joined and never synced (online migration, spec §9.3)
JOIN = "cg-join"
SYNC = "cg-sync"
TIMER_KINDS = (SESSION, REBALANCE, JOIN, SYNC)


#: (kind, group id, member id): the runtime reads the group id at [1] for the group's mailbox
TimerKey = tuple[str, str, str]


def session_key(group_id: str, member_id: str) -> TimerKey:
    return (SESSION, group_id, member_id)


def rebalance_key(group_id: str, member_id: str) -> TimerKey:
    return (REBALANCE, group_id, member_id)


def join_key(group_id: str, member_id: str) -> TimerKey:
    return (JOIN, group_id, member_id)


def sync_key(group_id: str, member_id: str) -> TimerKey:
    return (SYNC, group_id, member_id)


class ConsumerGroupManager:
    def __init__(
        self,
        ctx: OperationContext,
        registry: GroupRegistry,
        config: ConsumerGroupConfig | None = None,
        id_factory: Callable[[], str] | None = None,
        downgrade: Callable[[ConsumerGroup, list[str], str], bool] | None = None,
    ) -> None:
        self.ctx = ctx
        self.config = config or ConsumerGroupConfig()
        self.groups: dict[str, ConsumerGroup] = {}
        #: groups with `consumer.*` group configs (server/configs/group_defs.py): their effective config
        self.group_configs: dict[str, ConsumerGroupConfig] = {}
        self._new_id = id_factory or (lambda: str(uuid.uuid4()))
        # (group, member) -> the member epoch its rebalance timer was armed at
        self._rebalance_epochs: dict[tuple[str, str], int] = {}
        self.regexes = RegexResolver()
        self.journal = ConsumerJournal(ctx, self.config.assignors[0])
        # (group, member) of the classic members whose join timer is armed (Kafka's `scheduleIfAbsent`)
        self._join_armed: set[tuple[str, str]] = set()
        #: given a group and the members about to be fenced, converts the group to a classic group instead
        #: when the online downgrade applies (spec §9.2) and says whether it did (the shard's conversions)
        self.downgrade = downgrade
        registry.register(self)

    group_type = CONSUMER
    holds_offsets = True

    def has(self, group_id: str) -> bool:
        return group_id in self.groups

    def new_member_id(self) -> str:
        return self._new_id()

    def group(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def set_group_config(self, group_id: str, group_configs: Mapping[str, str]) -> None:
        """A group's `consumer.*` group configs changed; they apply from each member's next heartbeat."""
        cfg = self.config.for_group(group_configs)
        if cfg == self.config:
            self.group_configs.pop(group_id, None)
        else:
            self.group_configs[group_id] = cfg

    def config_for(self, group_id: str) -> ConsumerGroupConfig:
        return self.group_configs.get(group_id, self.config)

    # ================================================================================== validation

    def validate(self, req: ConsumerGroupHeartbeatRequest) -> None:
        """Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid` (spec §2.2 step 5); raises HeartbeatError."""
        validate_request(req, self.config.assignors)

    # =================================================================================== heartbeat

    def heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, topics: TopicImage, validated: bool = False
    ) -> ConsumerGroupHeartbeatResult:
        """The heartbeat's answer; its records are in the operation's `Effects` (the shard answers once they
        are durable). `validated`: the caller already ran `validate` on this request."""
        try:
            if not validated:
                self.validate(req)
            result = self._leave(req) if req.member_epoch < 0 else self._heartbeat(req, topics)
        except HeartbeatError as err:
            result = ConsumerGroupHeartbeatResult(err.code, err.message)
        except PartitionAssignorError as err:
            result = ConsumerGroupHeartbeatResult(int(E.UNKNOWN_SERVER_ERROR), str(err))
        return result

    def steady_heartbeat(
        self, group_id: str, member_id: str, fields: tuple[object, ...], now_ms: int
    ) -> tuple[int, TimerKey, int] | None:
        """(member epoch, session timer key, deadline) of a heartbeat that changes nothing but that timer
        (`steady.is_steady`; `fields`: its other arguments), else None and the full path decides. Touches no
        state and no `Effects`: the caller moves the timer (here `_heartbeat`; the runtime's fast lane)."""
        g = self.groups.get(group_id)
        m = None if g is None else g.members.get(member_id)
        if m is None or not is_steady(g, m, *fields):  # type: ignore[arg-type]
            return None
        return (
            m.member_epoch,
            session_key(group_id, member_id),
            now_ms + self.config_for(group_id).session_timeout_ms,
        )

    def _heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, topics: TopicImage
    ) -> ConsumerGroupHeartbeatResult:
        cfg, now = self.config_for(req.group_id), self.ctx.now
        version = topics_version(topics)
        if (
            req.subscribed_topic_names is None
            and req.subscribed_topic_regex is None
            and req.server_assignor is None
            and req.topic_partitions is None
        ):  # the steady state: the same decision as the fast lane's, with its one effect in `Effects`
            steady = self.steady_heartbeat(req.group_id, req.member_id, (
                req.member_epoch, req.instance_id, req.rack_id, req.rebalance_timeout_ms, req.client_id,
                req.client_host, version,
            ), now)  # fmt: skip
            if steady is not None:
                self.ctx.fx.timer(ScheduleTimer(steady[1], steady[2]))
                interval = cfg.heartbeat_interval_ms
                return ConsumerGroupHeartbeatResult(0, None, req.member_id, steady[0], interval)
        g = self.groups.get(req.group_id)
        if g is None:
            if req.member_epoch != 0:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
            g = ConsumerGroup(req.group_id)
        created = g.group_id not in self.groups
        static_holder = g.static_member(req.instance_id)
        at_max = len(g.members) >= cfg.max_size
        if static_holder is None and at_max and (req.member_id == "" or req.member_id not in g.members):
            raise HeartbeatError(
                E.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {cfg.max_size} members.",
            )
        member_id = req.member_id or self._new_id()
        member, replaced = member_for(g, req, member_id, static_holder)
        if req.member_epoch > 0:
            check_epoch(member, req)
        updated = member.replace(
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
            ),
            server_assignor=req.server_assignor
            if req.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=(
                tuple(sorted(set(req.subscribed_topic_names)))
                if req.subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            subscribed_topic_regex=(
                req.subscribed_topic_regex
                if req.subscribed_topic_regex is not None
                else member.subscribed_topic_regex
            ),
            client_id=req.client_id,
            client_host=req.client_host,
            classic=None,  # a consumer-protocol heartbeat: the member speaks that protocol from now on
        )
        reconciled = self.apply_update(
            g, created, member_id, member, updated, replaced, topics, req.topic_partitions
        )
        self.ctx.fx.timer(ScheduleTimer(session_key(g.group_id, member_id), now + cfg.session_timeout_ms))
        full = (
            req.rebalance_timeout_ms != -1
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
            and req.topic_partitions is not None
        )
        changed = reconciled.assigned_partitions() != member.assigned_partitions()
        send = req.member_epoch == 0 or full or changed or replaced is not None
        return ConsumerGroupHeartbeatResult(
            int(E.NONE),
            member_id=member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            assignment=reconciled.assigned_partitions() if send else None,
        )

    def apply_update(
        self,
        g: ConsumerGroup,
        created: bool,
        member_id: str,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        replaced: ConsumerGroupMember | None,
        topics: TopicImage,
        owned: Partitions | None,
    ) -> ConsumerGroupMember:
        """Kafka's common path of a heartbeat and of a classic member's JoinGroup (spec §2.4 steps 5-8): the
        member's update written, the group epoch bumped if its subscriptions or topics changed, a new target
        computed if due, the member reconciled towards it given the partitions it `owned` (None: unknown).
        Returns the reconciled member; raises HeartbeatError."""
        cfg, now = self.config, self.ctx.now
        new_member = member_id not in g.members and replaced is None
        regex = updated.subscribed_topic_regex or None
        regex_changed = regex != (member.subscribed_topic_regex or None)
        if regex is not None and regex_changed:
            try:
                self.regexes.validate(regex)  # Kafka compiles a regex new to the group (spec §2.5)
            except InvalidRegularExpression as err:
                raise HeartbeatError(E.INVALID_REGULAR_EXPRESSION, str(err)) from None
        records: list[ConsumerGroupRecord] = []
        if replaced is not None:
            records += codec.member_tombstones(g.group_id, replaced.member_id)
        if new_member or replaced is not None or updated.metadata_key() != member.metadata_key():
            records.append(codec.member_metadata(g.group_id, updated))
        # the group epoch: bumped by a subscription change or a change of the subscribed topics' metadata
        old_for_names = replaced if replaced is not None else g.members.get(member_id)
        # regexes resolve here, at once, against the topics this heartbeat sees (Kafka: asynchronously)
        regexes = g.regexes_with(old_for_names, updated)
        resolved = self.regexes.resolve(regexes, topics.topic_names()) if regexes else {}
        prev = g.resolved  # None just after load: the metadata hash alone tells what changed meanwhile
        resolution_changed = prev is not None and any(
            r in prev and prev[r] != ts for r, ts in resolved.items()
        )
        own_resolution_changed = (
            regex is not None and prev is not None and regex in prev and prev[regex] != resolved[regex]
        )
        subscription_changed = (
            updated.subscribed_topic_names != member.subscribed_topic_names
            or regex_changed
            or own_resolution_changed
        )
        names = g.names_with(old_for_names, updated, resolved)
        new_hash = metadata_hash(names, topics)
        group_epoch = g.group_epoch
        # Kafka 4.4's `hasPreferredServerAssignorChanged`: a change of the group's effective server assignor
        # bumps the epoch too, so the target is recomputed with it (asked of Kafka: tests/oracle/test_fuzz.py)
        assignor_changed = updated.server_assignor != member.server_assignor and g.preferred_assignor(
            cfg.assignors[0]
        ) != g.preferred_assignor_with(old_for_names, updated, cfg.assignors[0])
        bumped = subscription_changed or resolution_changed or assignor_changed or new_hash != g.metadata_hash
        if replaced is not None:
            cause = "static_replacement"
        elif new_member:
            cause = "new_member"
        elif updated.subscribed_topic_names != member.subscribed_topic_names or regex_changed:
            cause = "subscription_change"
        elif resolution_changed or own_resolution_changed:
            cause = "regex_resolution"
        else:
            cause = "metadata_change"
        if bumped:
            group_epoch += 1
            records.append(codec.group_metadata(g.group_id, group_epoch, new_hash))
        # the target assignment (the group's maps are copied only when they change: a steady-state heartbeat
        # must not cost O(members))
        target = g.target
        if replaced is not None:
            target = dict(target)
            target[member_id] = target.pop(replaced.member_id, {})
            records.append(codec.target_member(g.group_id, member_id, target[member_id]))
        assignment_epoch, assignment_ts = g.assignment_epoch, g.assignment_timestamp
        assigned = group_epoch > assignment_epoch and self._can_assign(g)
        if assigned:
            members = dict(g.members)
            if replaced is not None:
                members.pop(replaced.member_id, None)
            members[member_id] = updated
            assignor = g.preferred_assignor_with(old_for_names, updated, cfg.assignors[0])
            new_target = compute_target(assignor, members, target, topics, resolved)
            for mid in sorted(new_target):
                if mid not in target or dict(new_target[mid]) != dict(target[mid]):
                    records.append(codec.target_member(g.group_id, mid, new_target[mid]))
            target = new_target
            assignment_epoch, assignment_ts = group_epoch, now
            records.append(codec.target_metadata(g.group_id, assignment_epoch, assignment_ts))
        # apply what is decided so far, then reconcile the member towards its target
        if g.group_id not in self.groups:
            self.groups[g.group_id] = g
        if replaced is not None:
            g.remove_member(replaced.member_id)
            self._cancel_timers(g.group_id, replaced.member_id)
        g.group_epoch, g.metadata_hash = group_epoch, new_hash
        g.resolved = resolved
        g.target = target
        g.assignment_epoch, g.assignment_timestamp = assignment_epoch, assignment_ts
        g.update_member(updated)
        reconciled = updated
        if subscription_changed or not updated.is_reconciled_to(assignment_epoch):
            try:
                reconciled = CurrentAssignmentBuilder(
                    updated,
                    assignment_epoch,
                    target.get(member_id, {}),
                    subscribed_topic_ids(updated.subscribed_topics(resolved), topics),
                    g.partition_epoch,
                    owned,
                    subscription_changed,
                ).build()
            except FencedMemberEpochError as err:
                raise HeartbeatError(E.FENCED_MEMBER_EPOCH, str(err)) from None
        if reconciled.assignment_key() != member.assignment_key() or new_member or replaced is not None:
            records.append(codec.current_assignment(g.group_id, reconciled))
        if reconciled is not updated:
            g.update_member(reconciled)
            self._rebalance_timer(g.group_id, reconciled)
        g.hash_basis = basis(
            g, topics_version(topics)
        )  # the hash just computed holds until one of these changes
        for r in records:
            self.ctx.fx.record(r)
        if created or bumped or assigned or replaced is not None or new_member or reconciled is not updated:
            self._journal_heartbeat(g, topics, created, cause, bumped, assigned, replaced, new_member, member)
        return reconciled

    def _journal_heartbeat(
        self,
        g: ConsumerGroup,
        topics: TopicImage,
        created: bool,
        cause: str,
        bumped: bool,
        assigned: bool,
        replaced: ConsumerGroupMember | None,
        new_member: bool,
        old: ConsumerGroupMember,
    ) -> None:
        """The heartbeat's journal events, once its changes are applied (docs/journal.md). The group's state
        is computed (O(members)) only when something that decides it changed, never in a steady heartbeat."""
        j, now_member = self.journal, g.members[old.member_id]
        if created:
            j.event(g, "group_created")
        if replaced is not None:
            j.member(g, "member_removed", replaced, "static_replaced", previous_member_id=replaced.member_id)
        if new_member or replaced is not None:
            j.member(
                g,
                "member_joined",
                now_member,
                cause,
                previous_member_id=None if replaced is None else replaced.member_id,
            )
        if bumped:
            j.event(g, "group_epoch", reason=cause)
        if assigned:
            j.target(g, topics, cause if bumped else "assignment_interval")
        j.reconciliation(g, old, now_member, g.assignment_epoch)
        if (
            created
            or bumped
            or assigned
            or replaced is not None
            or new_member
            or (now_member.assignment_key() != old.assignment_key())
        ):
            j.states(g, cause, bumped, assigned)

    def _can_assign(self, g: ConsumerGroup) -> bool:
        """Kafka's `canComputeNextTargetAssignment` (KIP-1263's assignment interval)."""
        interval = self.config_for(g.group_id).assignment_interval_ms
        return (
            g.assignment_timestamp == 0 or interval == 0 or self.ctx.now >= g.assignment_timestamp + interval
        )

    # ======================================================================================= leave

    def _leave(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResult:
        g = self.groups.get(req.group_id)
        if g is None:
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found.")
        if req.instance_id is None:
            m = g.members.get(req.member_id)
            if m is None:
                raise HeartbeatError(
                    E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {g.group_id}."
                )
        else:
            m = g.static_member(req.instance_id)
            if m is None:
                raise HeartbeatError(
                    E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown in group {g.group_id}."
                )
            if m.member_id != req.member_id:
                raise HeartbeatError(
                    E.FENCED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member "
                    f"{m.member_id}.",
                )
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                self._temporary_leave(g, m)
                return ConsumerGroupHeartbeatResult(
                    int(E.NONE), member_id=m.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
                )
        self.fence(g, [m.member_id], None, "left")
        return ConsumerGroupHeartbeatResult(int(E.NONE), member_id=req.member_id, member_epoch=-1)

    def _temporary_leave(self, g: ConsumerGroup, m: ConsumerGroupMember) -> None:
        """Static -2 (spec §5.5): the member keeps its place and partitions; no epoch bump, no tombstones."""
        left = m.replace(
            member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
            pending_revocation={},
            assigned={t: dict.fromkeys(ps, 0) for t, ps in m.assigned.items()},
        )
        g.update_member(left)
        self.journal.member(g, "member_epoch", left, "static_leave")
        self.journal.states(g, "static_leave", False, False)
        self.ctx.fx.record(codec.current_assignment(g.group_id, left))
        self._cancel(rebalance_key(g.group_id, m.member_id))

    def fence(
        self, g: ConsumerGroup, member_ids: Iterable[str], topics: TopicImage | None, reason: str = "left"
    ) -> None:
        """Kafka's `consumerGroupFenceMembers` (spec §5.4): tombstones, removal, one epoch bump. `reason`
        (journal): `left`, `session_timeout`, `rebalance_timeout`."""
        member_ids = list(member_ids)
        if self.downgrade is not None and self.downgrade(g, member_ids, reason):
            return
        removed = False
        for mid in member_ids:
            gone = g.remove_member(mid)
            if gone is None:
                continue
            self.journal.member(g, "member_removed", gone, reason)
            removed = True
            g.target.pop(mid, None)
            for r in codec.member_tombstones(g.group_id, mid):
                self.ctx.fx.record(r)
            self._cancel_timers(g.group_id, mid)
        if not removed:
            return
        if topics is not None:
            g.metadata_hash = metadata_hash(g.subscribed_names(), topics)
        g.group_epoch += 1
        self.ctx.fx.record(codec.group_metadata(g.group_id, g.group_epoch, g.metadata_hash))
        if not g.members:
            # Kafka 4.4: the emptied group's assignment epoch catches up with a timestamp of zero, as a new
            # group's, so the assignment interval (KIP-1263) does not delay the next member's first assignment
            g.assignment_epoch, g.assignment_timestamp = g.group_epoch, 0
            self.ctx.fx.record(codec.target_metadata(g.group_id, g.group_epoch, 0))
        self.journal.event(g, "group_epoch", reason=reason)
        self.journal.states(g, reason, True, False)

    # ====================================================================================== timers

    def _rebalance_timer(self, group_id: str, m: ConsumerGroupMember) -> None:
        """Arm the revocation deadline when the member enters UNREVOKED_PARTITIONS; cancel it otherwise."""
        key = rebalance_key(group_id, m.member_id)
        if m.state == UNREVOKED_PARTITIONS:
            self._rebalance_epochs[(group_id, m.member_id)] = m.member_epoch
            self.ctx.fx.timer(ScheduleTimer(key, self.ctx.now + max(m.rebalance_timeout_ms, 0)))
        else:
            self._cancel(key)

    def _cancel(self, key: TimerKey) -> None:
        if key[0] == REBALANCE:
            self._rebalance_epochs.pop((key[1], key[2]), None)
        elif key[0] == JOIN:
            self._join_armed.discard((key[1], key[2]))
        self.ctx.fx.timer(CancelTimer(key))

    cancel = _cancel

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self._cancel(session_key(group_id, member_id))
        self._cancel(rebalance_key(group_id, member_id))
        if (group_id, member_id) in self._join_armed:
            self._cancel(join_key(group_id, member_id))
        self.ctx.fx.timer(CancelTimer(sync_key(group_id, member_id)))

    def cancel_all_timers(self, g: ConsumerGroup) -> None:
        for mid in g.members:
            self._cancel_timers(g.group_id, mid)

    def schedule_session(self, group_id: str, m: ConsumerGroupMember) -> None:
        """(Re)arm the member's session timer: a classic member's own session timeout, else the group's."""
        timeout = (
            m.classic.session_timeout_ms
            if m.classic is not None
            else self.config_for(group_id).session_timeout_ms
        )
        self.ctx.fx.timer(ScheduleTimer(session_key(group_id, m.member_id), self.ctx.now + timeout))

    def schedule_join_if_absent(self, group_id: str, m: ConsumerGroupMember) -> None:
        """A classic member told to rejoin must do so within its rebalance timeout, or it is fenced."""
        if (group_id, m.member_id) in self._join_armed:
            return
        self._join_armed.add((group_id, m.member_id))
        deadline = self.ctx.now + max(m.rebalance_timeout_ms, 0)
        self.ctx.fx.timer(ScheduleTimer(join_key(group_id, m.member_id), deadline))

    def on_timer(self, key: tuple[object, ...]) -> None:
        kind, group_id, member_id = str(key[0]), str(key[1]), str(key[2])
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return
        if kind == SESSION:
            self.fence(g, [member_id], None, "session_timeout")
        elif kind == JOIN:
            self._join_armed.discard((group_id, member_id))
            self.fence(g, [member_id], None, "join_timeout")
        elif kind == SYNC:
            self.fence(g, [member_id], None, "sync_timeout")
        elif kind == REBALANCE:
            epoch = self._rebalance_epochs.pop((group_id, member_id), None)
            m = g.members[member_id]
            if epoch is not None and m.member_epoch == epoch and m.state == UNREVOKED_PARTITIONS:
                self.fence(g, [member_id], None, "rebalance_timeout")

    # ============================================================================== load and unload

    def replay(self, record: ConsumerGroupRecord) -> None:
        codec.replay(self.groups, record)

    def on_loaded(self, group_ids: Collection[str] | None = None) -> None:
        """Re-arm every loaded member's session timer, and the revocation deadline of UNREVOKED members."""
        ids = self.groups.keys() if group_ids is None else [gid for gid in group_ids if gid in self.groups]
        for gid in list(ids):
            g = self.groups[gid]
            g.journaled_state = g.state
            for m in g.members.values():
                self.schedule_session(gid, m)
                if m.state == UNREVOKED_PARTITIONS:
                    self._rebalance_timer(gid, m)

    def unload(self, group_ids: Collection[str] | None = None) -> None:
        ids = list(self.groups) if group_ids is None else [gid for gid in group_ids if gid in self.groups]
        for gid in ids:
            g = self.groups.pop(gid)
            for mid in g.members:
                self._cancel_timers(gid, mid)

    def delete(self, group_id: str, reason: str = "deleted") -> None:
        """Write the group's tombstones in Kafka's order and drop it (DeleteGroups on an Empty group; offset
        expiry: `reason` `expired`)."""
        g = self.groups.pop(group_id, None)
        if g is None:
            return
        for r in codec.group_tombstones(g):
            self.ctx.fx.record(r)
        self.journal.event(g, "state_change", state_from=g.journaled_state, state_to=DEAD, reason=reason)
        self.journal.event(g, "group_deleted", reason=reason)
