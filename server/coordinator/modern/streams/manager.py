"""The streams-group part of Kafka's `GroupMetadataManager` (spec §2-§9): StreamsGroupHeartbeat, leave, the
session and rebalance timers, fencing, replay and load.

Pure: every method works inside the shard's current operation (`OperationContext`) and returns results;
records go out in Kafka's write order (member metadata, topology, group epoch, target members and target
metadata, current assignment). Heartbeats themselves are never written: only the changes they cause are.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.context import OperationContext
from groupcoord.server.coordinator.modern.streams import codec
from groupcoord.server.coordinator.modern.streams.api import (
    ASSIGNMENT_DELAYED,
    MISSING_CLIENT_TAGS,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    StreamsGroupConfig,
    StreamsHeartbeatRequest,
    StreamsHeartbeatResult,
    TaskOffset,
)
from groupcoord.server.coordinator.modern.streams.group import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    UNREVOKED_TASKS,
    StreamsGroup,
    StreamsGroupMember,
    TaskTuple,
    task_set,
)
from groupcoord.server.coordinator.modern.streams.reconciliation import reconcile
from groupcoord.server.coordinator.modern.streams.target import compute_target, endpoint_partitions
from groupcoord.server.coordinator.modern.streams.topology import (
    InvalidTopology,
    PartitionCount,
    configure,
    metadata_hash,
)
from groupcoord.server.coordinator.modern.streams.validation import HeartbeatError, validate
from groupcoord.server.coordinator.records import StreamsGroupRecord
from groupcoord.server.coordinator.registry import STREAMS, GroupRegistry
from groupcoord.server.coordinator.types import CancelTimer, ScheduleTimer

E = ErrorCode
SESSION = "sg-session"
REBALANCE = "sg-rebalance"
TIMER_KINDS = (SESSION, REBALANCE)


class StreamsGroupManager:
    #: the registry's view of this manager (registry.py): streams groups commit offsets
    group_type = STREAMS
    holds_offsets = True

    def __init__(
        self, ctx: OperationContext, registry: GroupRegistry, config: StreamsGroupConfig | None = None
    ) -> None:
        self.ctx = ctx
        registry.register(self)
        self.config = config or StreamsGroupConfig()
        self.groups: dict[str, StreamsGroup] = {}
        self.group_configs: dict[str, StreamsGroupConfig] = {}
        self._rebalance_epochs: dict[tuple[str, str], int] = {}

    def has(self, group_id: str) -> bool:
        return group_id in self.groups

    def group(self, group_id: str) -> StreamsGroup | None:
        return self.groups.get(group_id)

    def set_group_config(self, group_id: str, group_configs: Mapping[str, str]) -> None:
        cfg = self.config.for_group(group_configs)
        if cfg == self.config:
            self.group_configs.pop(group_id, None)
        else:
            self.group_configs[group_id] = cfg

    def config_for(self, group_id: str) -> StreamsGroupConfig:
        return self.group_configs.get(group_id, self.config)

    def _record(self, r: StreamsGroupRecord) -> None:
        self.ctx.fx.record(r)

    # =================================================================================== heartbeat

    def heartbeat(self, req: StreamsHeartbeatRequest, count: PartitionCount) -> StreamsHeartbeatResult:
        """`count`: a topic's partition count (None: it does not exist), as the metadata image says."""
        try:
            if req.precheck is not None:
                raise HeartbeatError(*req.precheck)
            validate(req)
            if req.member_epoch < 0:
                return self._leave(req)
            return self._heartbeat(req, count)
        except HeartbeatError as err:
            return StreamsHeartbeatResult(err.code, err.message)
        except InvalidTopology as err:
            return StreamsHeartbeatResult(int(E.STREAMS_INVALID_TOPOLOGY), str(err))

    def _member(
        self, g: StreamsGroup, req: StreamsHeartbeatRequest
    ) -> tuple[StreamsGroupMember, StreamsGroupMember | None]:
        """(the member, the static member it replaces) — spec §2.4 step 2, §8.2."""
        if req.instance_id is None:
            m = g.members.get(req.member_id)
            if m is None:
                if req.member_epoch != 0:
                    raise HeartbeatError(
                        E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {g.group_id}."
                    )
                m = StreamsGroupMember(req.member_id)
            return m, None
        old = g.static_member(req.instance_id)
        if req.member_epoch == 0:
            if old is None or old.member_id == req.member_id:
                return (old or StreamsGroupMember(req.member_id, instance_id=req.instance_id)), None
            if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise HeartbeatError(
                    E.UNRELEASED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} cannot join the group "
                    f"because the instance id is owned by {old.member_id} member.",
                )
            return old.replace(member_id=req.member_id, member_epoch=0, previous_member_epoch=0), old
        if old is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if old.member_id != req.member_id:
            raise HeartbeatError(
                E.FENCED_INSTANCE_ID,
                f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member {old.member_id}.",
            )
        return old, None

    def _check_epoch(
        self, m: StreamsGroupMember, req: StreamsHeartbeatRequest, owned: TaskTuple | None
    ) -> None:
        if req.member_epoch == m.member_epoch:
            return
        if (
            req.member_epoch < m.member_epoch
            and req.member_epoch == m.previous_member_epoch
            and (owned is None or all(
                task_set(o) <= task_set(a)
                for o, a in ((owned.active, m.assigned.active), (owned.standby, m.assigned.standby),
                             (owned.warmup, m.assigned.warmup))
            ))
        ):  # fmt: skip
            return
        raise HeartbeatError(
            E.FENCED_MEMBER_EPOCH,
            f"The streams group member has a smaller member epoch ({req.member_epoch}) than the one known by the "
            f"group coordinator ({m.member_epoch}). The member must abandon all its tasks and rejoin."
            if req.member_epoch < m.member_epoch
            else f"The streams group member has a greater member epoch ({req.member_epoch}) than the one known by "
            f"the group coordinator ({m.member_epoch}). The member must abandon all its tasks and rejoin.",
        )

    def _heartbeat(self, req: StreamsHeartbeatRequest, count: PartitionCount) -> StreamsHeartbeatResult:
        cfg, now = self.config_for(req.group_id), self.ctx.now
        g = self.groups.get(req.group_id)
        if g is None:
            if req.member_epoch != 0:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Streams group {req.group_id} not found.")
            g = StreamsGroup(req.group_id)
        known = req.member_id in g.members or g.static_member(req.instance_id) is not None
        if not known and len(g.members) >= cfg.max_size:
            raise HeartbeatError(
                E.GROUP_MAX_SIZE_REACHED,
                f"The streams group has reached its maximum capacity of {cfg.max_size} members.",
            )
        owned = None
        if req.active_tasks is not None:
            owned = TaskTuple(req.active_tasks, req.standby_tasks or {}, req.warmup_tasks or {})
        member, replaced = self._member(g, req)
        if req.member_epoch > 0:
            self._check_epoch(member, req, owned)
        new_member = member.member_id not in g.members and replaced is None
        was_empty = not g.members
        updated = member.replace(
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            topology_epoch=req.topology.epoch if req.topology is not None else member.topology_epoch,
            process_id=req.process_id if req.process_id is not None else member.process_id,
            client_tags=req.client_tags if req.client_tags is not None else member.client_tags,
            user_endpoint=req.user_endpoint if (req.member_epoch == 0 or req.user_endpoint is not None) else member.user_endpoint,
            client_id=req.client_id,
            client_host=req.client_host,
        )  # fmt: skip
        if req.member_epoch == 0 and replaced is None and not new_member:
            # a rejoin with the same member id: reconciled from scratch
            updated = updated.replace(state=1)
        bump = False
        if replaced is not None:
            for r in codec.member_tombstones(g.group_id, replaced.member_id):
                self._record(r)
        if new_member or replaced is not None or updated.metadata_key() != member.metadata_key():
            self._record(codec.member_metadata(g.group_id, updated))
            if (
                updated.instance_id is None
                or new_member
                or updated.epoch_relevant_key() != member.epoch_relevant_key()
            ):
                bump = True
        if g.group_id not in self.groups:
            self.groups[g.group_id] = g
        # ---- the topology (spec §2.2)
        statuses: list[tuple[int, str]] = []
        if g.topology is None:
            assert req.topology is not None
            g.topology = req.topology
            g.configured = None
            self._record(codec.topology(g.group_id, req.topology))
        elif req.topology is not None:
            if g.topology.epoch > req.topology.epoch:
                pass
            elif g.topology != req.topology:
                raise HeartbeatError(E.INVALID_REQUEST, "Topology updates are not supported yet.")
        if updated.topology_epoch < g.topology.epoch:
            statuses.append((STALE_TOPOLOGY, f"The member's topology epoch {updated.topology_epoch} is behind the "
                                             f"group's topology epoch {g.topology.epoch}."))  # fmt: skip
        # ---- the configured topology (spec §4)
        new_hash = metadata_hash(g.topology, count)
        if g.configured is None or g.configured.metadata_hash != new_hash:
            g.configured = configure(g.topology, count, new_hash)
        configured = g.configured
        if new_hash != g.metadata_hash:
            bump = True
        if configured.ready and owned is not None:
            self._validate_owned(owned, configured.tasks())
        validated = g.topology.epoch if configured.ready else -1
        if validated != g.validated_topology_epoch:
            bump = True
        assignment_configs = cfg.assignment_configs()
        if assignment_configs != g.last_assignment_configs:
            bump = True
        if req.task_offsets is not None:
            g.task_offsets[updated.member_id] = req.task_offsets
        if req.task_end_offsets is not None:
            g.task_end_offsets[updated.member_id] = req.task_end_offsets
        # ---- apply the member, the group epoch
        if replaced is not None:
            g.members.pop(replaced.member_id, None)
            g.target[updated.member_id] = g.target.pop(replaced.member_id, TaskTuple())
            self._cancel_timers(g.group_id, replaced.member_id)
            self._record(codec.target_member(g.group_id, updated.member_id, g.target[updated.member_id]))
        g.members[updated.member_id] = updated
        if was_empty and cfg.initial_rebalance_delay_ms > 0:
            g.initial_delay_until = now + cfg.initial_rebalance_delay_ms
        if bump:
            g.group_epoch += 1
            g.metadata_hash = new_hash
            g.validated_topology_epoch = validated
            g.last_assignment_configs = assignment_configs
            self._record(codec.group_metadata(g))
        # ---- the target assignment (spec §6.1)
        if g.group_epoch > g.assignment_epoch:
            if g.initial_delay_until > now:
                statuses.append(
                    (ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance delay.")
                )
            elif not (
                g.assignment_timestamp == 0
                or cfg.assignment_interval_ms == 0
                or now >= g.assignment_timestamp + cfg.assignment_interval_ms
            ):
                statuses.append(
                    (ASSIGNMENT_DELAYED, "Assignment delayed due to the configured assignment interval.")
                )
            else:
                self._new_target(g, cfg)  # fmt: skip
        if configured.status is not None:
            statuses.append(configured.status)
        # ---- reconcile
        before = g.members[updated.member_id]
        target = g.target.get(updated.member_id, TaskTuple())
        reconciled = reconcile(before, g.assignment_epoch, target, owned, g.members.values())
        if reconciled is not before or new_member or replaced is not None:
            g.members[updated.member_id] = reconciled
            self._record(codec.current_assignment(g.group_id, reconciled))
            if not reconciled.assigned.same(member.assigned) and reconciled.user_endpoint is not None:
                g.endpoint_epoch += 1
        if updated.user_endpoint != member.user_endpoint and not new_member:
            g.endpoint_epoch += 1
        self._rebalance_timer(g.group_id, reconciled)
        self.ctx.fx.timer(
            ScheduleTimer((SESSION, g.group_id, reconciled.member_id), now + cfg.session_timeout_ms)
        )
        if req.shutdown_application:
            g.shutdown_requester = reconciled.member_id
        if g.shutdown_requester is not None:
            statuses.append(
                (
                    SHUTDOWN_APPLICATION,
                    f"Streams group member {g.shutdown_requester} encountered a fatal "
                    "error and requested a shutdown for the entire application.",
                )
            )
        if req.version >= 1 and cfg.rack_aware_assignment_tags:
            tags = {k for k, _ in reconciled.client_tags}
            missing = [t for t in cfg.rack_aware_assignment_tags if t not in tags]
            if missing:
                statuses.append((MISSING_CLIENT_TAGS, f"Missing required client tags for rack-aware standby "
                                 f"assignment: [{', '.join(missing)}]. Configure them via 'client.tag.<tagKey>' in "
                                 "your Streams config."))  # fmt: skip
        changed = not reconciled.assigned.same(member.assigned)
        send = req.member_epoch == 0 or changed or replaced is not None
        a = reconciled.assigned
        endpoints = None
        if req.endpoint_information_epoch != g.endpoint_epoch:
            endpoints = endpoint_partitions(g)
        return StreamsHeartbeatResult(
            int(E.NONE),
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            acceptable_recovery_lag=cfg.acceptable_recovery_lag,
            task_offset_interval_ms=cfg.task_offset_interval_ms,
            status=tuple(statuses),
            tasks=(a.active, a.standby, a.warmup) if send else None,
            endpoint_information_epoch=g.endpoint_epoch,
            partitions_by_user_endpoint=endpoints,
            topics_to_create=configured.topics_to_create,
        )

    @staticmethod
    def _validate_owned(owned: TaskTuple, tasks: dict[str, int]) -> None:
        for t in (owned.active, owned.standby, owned.warmup):
            for s, ps in t.items():
                if s not in tasks:
                    raise HeartbeatError(
                        E.INVALID_REQUEST, f"Subtopology {s} does not exist in the topology."
                    )
                for p in sorted(ps):
                    if not 0 <= p < tasks[s]:
                        raise HeartbeatError(
                            E.INVALID_REQUEST,
                            f"Task {p} for subtopology {s} is invalid. Number of tasks for this subtopology: {tasks[s]}",
                        )

    def _new_target(self, g: StreamsGroup, cfg: StreamsGroupConfig) -> None:
        offsets = {mid: _offset_sums(g.task_offsets.get(mid, ())) for mid in g.members}
        new = compute_target(g, cfg.num_standby_replicas, offsets)
        for mid in sorted(new):
            old = g.target.get(mid)
            if old is None or not old.same(new[mid]):
                self._record(codec.target_member(g.group_id, mid, new[mid]))
        g.target = new
        g.assignment_epoch, g.assignment_timestamp = g.group_epoch, self.ctx.now
        self._record(codec.target_metadata(g.group_id, g.assignment_epoch, g.assignment_timestamp))

    # ======================================================================================= leave

    def _leave(self, req: StreamsHeartbeatRequest) -> StreamsHeartbeatResult:
        g = self.groups.get(req.group_id)
        if g is None:
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Streams group {req.group_id} not found.")
        if req.instance_id is None:
            m = g.members.get(req.member_id)
            if m is None:
                raise HeartbeatError(
                    E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {g.group_id}."
                )
        else:
            m = g.static_member(req.instance_id)
            if m is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if m.member_id != req.member_id:
                raise HeartbeatError(
                    E.FENCED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member {m.member_id}.",
                )
        if req.shutdown_application:
            g.shutdown_requester = m.member_id
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and req.instance_id is not None:
            left = m.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation=TaskTuple(),
                             active_epochs=dict.fromkeys(m.active_epochs, 0), state=1)  # fmt: skip
            g.members[m.member_id] = left
            self._record(codec.current_assignment(g.group_id, left))
            self._cancel((REBALANCE, g.group_id, m.member_id))
            return StreamsHeartbeatResult(
                int(E.NONE), member_id=m.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
            )
        self.fence(g, m.member_id)
        return StreamsHeartbeatResult(int(E.NONE), member_id=req.member_id, member_epoch=req.member_epoch)

    def fence(self, g: StreamsGroup, member_id: str) -> None:
        """Remove a member (left, session or rebalance timeout): tombstones, one epoch bump."""
        if g.members.pop(member_id, None) is None:
            return
        g.target.pop(member_id, None)
        g.task_offsets.pop(member_id, None)
        g.task_end_offsets.pop(member_id, None)
        for r in codec.member_tombstones(g.group_id, member_id):
            self._record(r)
        self._cancel_timers(g.group_id, member_id)
        g.group_epoch += 1
        self._record(codec.group_metadata(g))
        g.endpoint_epoch += 1
        if not g.members:
            g.assignment_epoch, g.assignment_timestamp = g.group_epoch, 0
            g.shutdown_requester = None
            self._record(codec.target_metadata(g.group_id, g.assignment_epoch, 0))

    # ====================================================================================== timers

    def _rebalance_timer(self, group_id: str, m: StreamsGroupMember) -> None:
        key = (REBALANCE, group_id, m.member_id)
        if m.state == UNREVOKED_TASKS:
            if self._rebalance_epochs.get((group_id, m.member_id)) != m.member_epoch:
                self._rebalance_epochs[(group_id, m.member_id)] = m.member_epoch
                self.ctx.fx.timer(ScheduleTimer(key, self.ctx.now + max(m.rebalance_timeout_ms, 0)))
        elif (group_id, m.member_id) in self._rebalance_epochs:
            self._cancel(key)

    def _cancel(self, key: tuple[str, str, str]) -> None:
        if key[0] == REBALANCE:
            self._rebalance_epochs.pop((key[1], key[2]), None)
        self.ctx.fx.timer(CancelTimer(key))

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self._cancel((SESSION, group_id, member_id))
        self._cancel((REBALANCE, group_id, member_id))

    def on_timer(self, key: tuple[object, ...]) -> None:
        kind, group_id, member_id = str(key[0]), str(key[1]), str(key[2])
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return
        if kind == SESSION:
            self.fence(g, member_id)
        elif kind == REBALANCE:
            epoch = self._rebalance_epochs.pop((group_id, member_id), None)
            m = g.members[member_id]
            if epoch is not None and m.member_epoch == epoch and m.state == UNREVOKED_TASKS:
                self.fence(g, member_id)

    # ============================================================================== load and unload

    def replay(self, record: StreamsGroupRecord) -> None:
        codec.replay(self.groups, record)

    def on_loaded(self, group_ids: Collection[str] | None = None) -> None:
        ids = self.groups.keys() if group_ids is None else [gid for gid in group_ids if gid in self.groups]
        for gid in list(ids):
            g = self.groups[gid]
            timeout = self.config_for(gid).session_timeout_ms
            for m in g.members.values():
                self.ctx.fx.timer(ScheduleTimer((SESSION, gid, m.member_id), self.ctx.now + timeout))
                self._rebalance_timer(gid, m)

    def unload(self, group_ids: Collection[str] | None = None) -> None:
        ids = list(self.groups) if group_ids is None else [gid for gid in group_ids if gid in self.groups]
        for gid in ids:
            g = self.groups.pop(gid)
            for mid in g.members:
                self._cancel_timers(gid, mid)

    def delete(self, group_id: str) -> None:
        g = self.groups.pop(group_id, None)
        if g is not None:
            for r in codec.group_tombstones(g):
                self._record(r)


def _offset_sums(offsets: tuple[TaskOffset, ...]) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for o in offsets:
        out[(o.subtopology_id, o.partition)] = out.get((o.subtopology_id, o.partition), 0) + o.offset
    return out


IdFactory = Callable[[], str]
