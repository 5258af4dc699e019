"""The classic-group request handlers: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups,
ListGroups, and the group half of deletion and loading (Kafka's `GroupMetadataManager`, classic part).

The membership mechanics these handlers share (member add/replace/remove, the rebalance, timers) live in the
`ClassicMembership` base class. Offsets are the `OffsetMetadataManager`'s; the shard composes both.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable
from dataclasses import replace

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.consumer import CONSUMER, assignment_partitions
from groupcoord.server.coordinator.context import NONE, PERSIST_ERROR, OperationContext, hb_key
from groupcoord.server.coordinator.group import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    ClassicGroup,
    Member,
)
from groupcoord.server.coordinator.membership import ClassicMembership
from groupcoord.server.coordinator.records import GroupMetadataValue, GroupRecord, MemberMetadataValue
from groupcoord.server.coordinator.registry import CLASSIC, GroupRegistry
from groupcoord.server.coordinator.types import (
    DescribedGroup,
    DescribedMember,
    Effects,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveGroupRequest,
    LeaveGroupResult,
    ListedGroup,
    ScheduleTimer,
    SyncGroupRequest,
    SyncGroupResult,
)

E = ErrorCode


class GroupMetadataManager(ClassicMembership):
    """Every classic group of the shard and the membership requests on them."""

    group_type = CLASSIC
    holds_offsets = True

    def __init__(
        self,
        ctx: OperationContext,
        registry: GroupRegistry,
        id_factory: Callable[[str], str] | None = None,
        on_group_dropped: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(ctx, id_factory)
        # called when a group whose creation failed to persist is rolled back (the shard drops its offsets)
        self._on_group_dropped = on_group_dropped or (lambda group_id: None)
        registry.register(self)

    def has(self, group_id: str) -> bool:
        return group_id in self.groups

    def group(self, group_id: str) -> ClassicGroup | None:
        return self.groups.get(group_id)

    # ===================================================================================== JoinGroup

    def join_group(self, req: JoinGroupRequest, token: Hashable, now_ms: int) -> Effects:
        fx = self.ctx.begin(now_ms)
        if req.version == 0:
            req = _replace_rebalance_timeout(req)
        if not req.group_id:
            fx.reply(token, JoinGroupResult(int(E.INVALID_GROUP_ID), member_id=req.member_id))
            return fx
        cfg = self.ctx.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            fx.reply(token, JoinGroupResult(int(E.INVALID_SESSION_TIMEOUT), member_id=req.member_id))
            return fx

        g = self.groups.get(req.group_id)
        created = False
        if g is None:
            if req.member_id:
                fx.reply(token, JoinGroupResult(int(E.UNKNOWN_MEMBER_ID), member_id=req.member_id))
                return fx
            g = ClassicGroup(req.group_id, now_ms)
            self.groups[req.group_id] = g
            created = True
            self.ctx.event(g, "group_created")

        if not self._accept_joining_member(g, req.member_id):
            if req.member_id in g.members:
                self._remove_member(g, req.member_id, "group_max_size")
            elif req.member_id in g.pending_join_members:
                g.remove(req.member_id)
                self._cancel_hb(g, req.member_id)
            fx.reply(token, JoinGroupResult(int(E.GROUP_MAX_SIZE_REACHED), member_id=""))
        elif not req.member_id:
            self._join_new_member(g, req, token)
        else:
            self._join_existing_member(g, req, token)

        if created and not fx.records:
            # commit the new group; if that fails, roll the creation back (spec §2.3)
            fx.record(GroupRecord(g.group_id, ClassicGroup(g.group_id, now_ms).to_record_value()))
            fx.after_persist = self._on_group_created_persisted(g)
        return fx

    def _on_group_created_persisted(self, g: ClassicGroup) -> Callable[[bool, int], Effects]:
        def after(ok: bool, now_ms: int) -> Effects:
            fx = self.ctx.begin(now_ms)
            if ok or self.groups.get(g.group_id) is not g:
                return fx
            self.groups.pop(g.group_id, None)
            self._on_group_dropped(g.group_id)
            for mid, m in list(g.members.items()):
                self._cancel_hb(g, mid)
                self._answer_parked(m, PERSIST_ERROR, "", PERSIST_ERROR)
            for mid in g.pending_join_members:
                self._cancel_hb(g, mid)
            self._cancel_join(g)
            self._cancel_sync(g)
            self.ctx.event(g, "group_deleted", reason="persist_failure")
            return fx

        return after

    def _accept_joining_member(self, g: ClassicGroup, member_id: str) -> bool:
        """Capacity check (spec §2.4), run for every JoinGroup before anything else."""
        max_size = self.ctx.config.max_size
        if g.state in (EMPTY, DEAD):
            return True
        if g.state == PREPARING:
            m = g.members.get(member_id)
            return (m is not None and m.awaiting_join) or g.num_awaiting_join < max_size
        return member_id in g.members or len(g.members) < max_size

    def _join_new_member(self, g: ClassicGroup, req: JoinGroupRequest, token: Hashable) -> None:
        fx = self.ctx.fx
        if g.state == DEAD:
            fx.reply(token, JoinGroupResult(int(E.COORDINATOR_NOT_AVAILABLE), member_id=""))
            return
        if not g.supports_protocols(req.protocol_type, req.protocols):
            fx.reply(token, JoinGroupResult(int(E.INCONSISTENT_GROUP_PROTOCOL), member_id=""))
            return
        if req.group_instance_id is not None:
            new_id = self._new_id(req.group_instance_id)
            old_id = g.static_members.get(req.group_instance_id)
            if old_id is not None:
                self._replace_static_member(g, req, token, old_id, new_id)
            else:
                self._add_member(g, req, token, new_id)
        elif req.version >= 4:
            new_id = self._new_id(req.client_id)
            deadline = self.ctx.now + req.session_timeout_ms
            g.pending_join_members[new_id] = deadline
            fx.timer(ScheduleTimer(hb_key(g.group_id, new_id), deadline))
            fx.reply(token, JoinGroupResult(int(E.MEMBER_ID_REQUIRED), member_id=new_id))
        else:
            self._add_member(g, req, token, self._new_id(req.client_id))

    def _join_existing_member(self, g: ClassicGroup, req: JoinGroupRequest, token: Hashable) -> None:
        fx = self.ctx.fx
        mid = req.member_id
        if g.state == DEAD:
            fx.reply(token, JoinGroupResult(int(E.COORDINATOR_NOT_AVAILABLE), member_id=mid))
            return
        if not g.supports_protocols(req.protocol_type, req.protocols):
            fx.reply(token, JoinGroupResult(int(E.INCONSISTENT_GROUP_PROTOCOL), member_id=mid))
            return
        if mid in g.pending_join_members:
            if req.group_instance_id is not None:
                # Kafka: IllegalStateException -> UNKNOWN_SERVER_ERROR (spec §2.6.3)
                fx.reply(token, JoinGroupResult(int(E.UNKNOWN_SERVER_ERROR), member_id=mid))
            else:
                self._add_member(g, req, token, mid)
            return
        err = self.validate_member(g, mid, req.group_instance_id)
        if err:
            fx.reply(token, JoinGroupResult(err, member_id=mid))
            return
        m = g.members[mid]
        if g.state == PREPARING:
            self._update_member_and_park(g, m, req, token)
            self._maybe_complete_join_phase(g)
        elif g.state == COMPLETING:
            if m.matches(req.protocols):
                fx.reply(token, self._current_join_result(g, m, g.leader_id or ""))
            else:
                self._update_member_and_park(g, m, req, token)
                self._maybe_prepare_rebalance_or_complete_join(g, "metadata_change")
        elif g.state == STABLE:
            if g.is_leader(mid):
                self._update_member_and_park(g, m, req, token)
                self._maybe_prepare_rebalance_or_complete_join(g, "leader_rejoin")
            elif not m.matches(req.protocols):
                self._update_member_and_park(g, m, req, token)
                self._maybe_prepare_rebalance_or_complete_join(g, "metadata_change")
            else:
                fx.reply(token, self._current_join_result(g, m, g.leader_id or "", with_members=False))
        else:  # Empty
            fx.reply(token, JoinGroupResult(int(E.UNKNOWN_MEMBER_ID), member_id=mid))

    def _current_join_result(
        self, g: ClassicGroup, m: Member, leader: str, with_members: bool = True, skip: bool = False
    ) -> JoinGroupResult:
        members = self._leader_members(g) if with_members and g.is_leader(m.member_id) else ()
        return JoinGroupResult(
            NONE, g.generation_id, g.protocol_type, g.protocol_name, leader, skip, m.member_id, members
        )

    def _update_member_and_park(
        self, g: ClassicGroup, m: Member, req: JoinGroupRequest, token: Hashable
    ) -> None:
        old = g.update_member(m, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, token)
        if old is not None and old != token:
            # Kafka drops a superseded parked JoinGroup unanswered; we answer it so the actor never leaks it
            self.ctx.fx.reply(old, JoinGroupResult(int(E.REBALANCE_IN_PROGRESS), member_id=m.member_id))

    # ===================================================================================== SyncGroup

    def sync_group(self, req: SyncGroupRequest, token: Hashable, now_ms: int) -> Effects:
        fx = self.ctx.begin(now_ms)
        err = self._validate_sync(req)
        if err:
            fx.reply(token, SyncGroupResult(err))
            return fx
        g = self.groups[req.group_id]
        mid = req.member_id
        if g.state == PREPARING:
            fx.reply(token, SyncGroupResult(int(E.REBALANCE_IN_PROGRESS)))
            return fx
        m = g.members[mid]
        if g.state == STABLE:
            self._remove_pending_sync(g, mid)
            fx.reply(
                token,
                SyncGroupResult(NONE, g.protocol_type, g.protocol_name, self._assignment_for_reply(g, m)),
            )
            return fx
        # CompletingRebalance
        if m.sync_token is not None and m.sync_token != token:
            fx.reply(m.sync_token, SyncGroupResult(int(E.REBALANCE_IN_PROGRESS)))
        m.sync_token = token
        self._remove_pending_sync(g, mid)
        if g.is_leader(mid):
            given = dict(req.assignments)
            assignment = {m_id: given.get(m_id, b"") for m_id in g.members}
            value = g.to_record_value()
            members = tuple(_with_assignment(mv, assignment[mv.member_id]) for mv in value.members)
            fx.record(GroupRecord(g.group_id, _replace_members(value, members)))
            fx.after_persist = self._on_assignment_persisted(g, req.generation_id, assignment)
        return fx

    def _validate_sync(self, req: SyncGroupRequest) -> int:
        if req.version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            return int(E.INCONSISTENT_GROUP_PROTOCOL)
        if not req.group_id:
            return int(E.INVALID_GROUP_ID)
        g = self.groups.get(req.group_id)
        if g is None or g.state == EMPTY:
            return int(E.UNKNOWN_MEMBER_ID)
        if g.state == DEAD:
            return int(E.COORDINATOR_NOT_AVAILABLE)
        err = self.validate_member(g, req.member_id, req.group_instance_id)
        if err:
            return err
        if req.generation_id != g.generation_id:
            return int(E.ILLEGAL_GENERATION)
        if (
            req.protocol_type is not None
            and g.protocol_type is not None
            and req.protocol_type != g.protocol_type
        ):
            return int(E.INCONSISTENT_GROUP_PROTOCOL)
        if (
            req.protocol_name is not None
            and g.protocol_name is not None
            and req.protocol_name != g.protocol_name
        ):
            return int(E.INCONSISTENT_GROUP_PROTOCOL)
        return NONE

    def _remove_pending_sync(self, g: ClassicGroup, member_id: str) -> None:
        if member_id in g.pending_sync_members:
            g.pending_sync_members.discard(member_id)
            if not g.pending_sync_members:
                self._cancel_sync(g)

    def _on_assignment_persisted(
        self, g: ClassicGroup, generation: int, assignment: dict[str, bytes]
    ) -> Callable[[bool, int], Effects]:
        def after(ok: bool, now_ms: int) -> Effects:
            fx = self.ctx.begin(now_ms)
            if self.groups.get(g.group_id) is not g or g.state != COMPLETING or g.generation_id != generation:
                return fx
            if not ok:
                self._reset_and_propagate_assignment_with_error(g, PERSIST_ERROR)
                self._maybe_prepare_rebalance_or_complete_join(g, "persist_failure")
                return fx
            for mid, m in g.members.items():
                m.assignment = assignment.get(mid, b"")
                if m.sync_token is not None:
                    fx.reply(
                        m.sync_token,
                        SyncGroupResult(
                            NONE, g.protocol_type, g.protocol_name, self._assignment_for_reply(g, m)
                        ),
                    )
                    m.sync_token = None
                    self._schedule_hb(g, m, m.session_timeout_ms)
            self._transition(g, STABLE, "sync_complete", assignment=self._journal_assignment(g))
            return fx

        return after

    def _journal_assignment(self, g: ClassicGroup) -> dict[str, list[str]] | None:
        if g.protocol_type != CONSUMER:
            return None
        out: dict[str, list[str]] = {}
        for mid, m in g.members.items():
            parts = assignment_partitions(m.assignment)
            if parts is None:
                return None
            out[mid] = parts
        return out

    # ===================================================================================== Heartbeat

    def _heartbeat_member(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None
    ) -> tuple[int, ClassicGroup | None, Member | None]:
        """The Heartbeat decision (spec §2.10): the error code, and the group and member whose session timer
        the heartbeat resets (None when it resets none)."""
        if not group_id:
            return int(E.INVALID_GROUP_ID), None, None
        g = self.groups.get(group_id)
        if g is None:
            return int(E.UNKNOWN_MEMBER_ID), None, None
        if g.state == DEAD:
            return int(E.COORDINATOR_NOT_AVAILABLE), None, None
        err = self.validate_member(g, member_id, instance_id)
        if err:
            return err, None, None
        if generation_id != g.generation_id:
            return int(E.ILLEGAL_GENERATION), None, None
        if g.state == EMPTY:
            return int(E.UNKNOWN_MEMBER_ID), None, None
        if g.state == PREPARING:
            return int(E.REBALANCE_IN_PROGRESS), g, g.members[member_id]
        return NONE, g, g.members[member_id]

    def heartbeat(self, req: HeartbeatRequest, now_ms: int) -> tuple[int, Effects | None]:
        err, g, m = self._heartbeat_member(
            req.group_id, req.generation_id, req.member_id, req.group_instance_id
        )
        if g is None or m is None:
            return err, None
        fx = self.ctx.begin(now_ms)
        self._schedule_hb(g, m, m.session_timeout_ms)
        return err, fx

    def heartbeat_timer(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> tuple[int, Hashable | None, int]:
        """`heartbeat` with its only possible effect, the member's session timer, returned as (key, deadline)
        instead of an `Effects` (the runtime's fast path: same decision, same state change)."""
        err, g, m = self._heartbeat_member(group_id, generation_id, member_id, instance_id)
        if g is None or m is None:
            return err, None, 0
        m.hb_deadline = now_ms + m.session_timeout_ms
        return err, hb_key(group_id, member_id), m.hb_deadline

    # ============================================================================== forced rebalance

    def force_rebalance(self, group_id: str, reason: str, now_ms: int) -> tuple[str, Effects]:
        """Start a rebalance now, as Kafka's `prepareRebalance(group, reason)` does when something outside
        the members triggers one: a Stable or CompletingRebalance group goes to PreparingRebalance (parked
        SyncGroups are answered REBALANCE_IN_PROGRESS, heartbeats get it next), journalled with `reason`.

        Returns the state the group was in ("Dead" when there is none). Only a Stable or CompletingRebalance
        group rebalances; an Empty one has nobody to rebalance and a PreparingRebalance one already is.
        """
        fx = self.ctx.begin(now_ms)
        g = self.groups.get(group_id)
        if g is None:
            return str(DEAD), fx
        before = str(g.state)
        if g.state in (STABLE, COMPLETING):
            self._prepare_rebalance(g, reason)
        return before, fx

    # ==================================================================================== LeaveGroup

    def leave_group(self, req: LeaveGroupRequest, now_ms: int) -> tuple[LeaveGroupResult, Effects]:
        fx = self.ctx.begin(now_ms)
        if not req.group_id:
            return LeaveGroupResult(int(E.INVALID_GROUP_ID), ()), fx
        g = self.groups.get(req.group_id)
        unknown = int(E.UNKNOWN_MEMBER_ID)
        if g is None:
            return LeaveGroupResult(
                NONE, tuple((x.member_id, x.group_instance_id, unknown) for x in req.members)
            ), fx
        if g.state == DEAD:
            return LeaveGroupResult(int(E.COORDINATOR_NOT_AVAILABLE), ()), fx
        out: list[tuple[str, str | None, int]] = []
        removed_any = False
        for x in req.members:
            if not x.member_id:
                target = (
                    g.static_members.get(x.group_instance_id) if x.group_instance_id is not None else None
                )
                if target is None:
                    out.append((x.member_id, x.group_instance_id, unknown))
                    continue
                self._remove_member(g, target, "left")
            elif x.member_id in g.pending_join_members:
                g.remove(x.member_id)
                self._cancel_hb(g, x.member_id)
            else:
                err = self.validate_member(g, x.member_id, x.group_instance_id)
                if err:
                    out.append((x.member_id, x.group_instance_id, err))
                    continue
                self._remove_member(g, x.member_id, "left")
            removed_any = True
            out.append((x.member_id, x.group_instance_id, NONE))
        if removed_any:
            if g.state in (STABLE, COMPLETING):
                self._prepare_rebalance(g, "leave")
            elif g.state == PREPARING:
                self._maybe_complete_join_phase(g)
        return LeaveGroupResult(NONE, tuple(out)), fx

    def describe_groups(self, ids: Iterable[str]) -> list[DescribedGroup]:
        out: list[DescribedGroup] = []
        for gid in ids:
            g = self.groups.get(gid)
            if g is None or g.state == DEAD:
                out.append(DescribedGroup(NONE, gid, "Dead", "", "", ()))
                continue
            stable = g.state == STABLE
            members = tuple(
                DescribedMember(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata(g.protocol_name) if stable else b"",
                    m.assignment,
                )
                for m in g.members.values()
            )
            out.append(
                DescribedGroup(
                    NONE,
                    gid,
                    str(g.state),
                    g.protocol_type or "",
                    (g.protocol_name or "") if stable else "",
                    members,
                )
            )
        return out

    def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        states = {s.strip().lower() for s in states_filter}
        types = {t.strip().lower() for t in types_filter}
        if types and "classic" not in types:
            return []
        return [
            ListedGroup(gid, g.protocol_type or "", str(g.state), "classic")
            for gid, g in self.groups.items()
            if not states or str(g.state).lower() in states
        ]

    # ========================================================================== deletion and loading

    def add_simple_group(self, group_id: str, created_ms: int) -> ClassicGroup:
        """Create an Empty group with no protocol, the kind offsets committed outside any group live in."""
        g = ClassicGroup(group_id, created_ms)
        self.groups[group_id] = g
        return g

    def delete_group(self, g: ClassicGroup, reason: str) -> None:
        """Tombstone an Empty group, journal it going Dead and drop it (its offsets are the shard's business)."""
        for mid in g.pending_join_members:
            self._cancel_hb(g, mid)
        self.ctx.fx.record(GroupRecord(g.group_id, None))
        self._transition(g, DEAD, "deleted")
        self.ctx.event(g, "group_deleted", reason=reason)
        del self.groups[g.group_id]

    def replay_group(self, record: GroupRecord) -> None:
        """Apply one persisted group record (a tombstone drops the group, not its offsets)."""
        if record.value is None:
            self.groups.pop(record.group_id, None)
            return
        self.groups[record.group_id] = ClassicGroup.from_record_value(record.group_id, record.value)

    def on_loaded(self, group_ids: Collection[str] | None = None) -> None:
        """Arm session timers for loaded members; journal loaded Empty groups; rebalance over-capacity groups.
        `group_ids`: only these (a shard taken over while other groups are being served)."""
        groups = self.groups.values() if group_ids is None else (self.groups.get(gid) for gid in group_ids)
        for g in [g for g in groups if g is not None]:
            if g.state == EMPTY:
                self.ctx.event(g, "state_change", state_from=None, state_to=str(EMPTY), reason="loaded")
                continue
            for m in g.members.values():
                self._schedule_hb(g, m, m.session_timeout_ms)
            if len(g.members) > self.ctx.config.max_size:
                self._prepare_rebalance(g, "loaded")

    def reset_group(self, g: ClassicGroup) -> None:
        """Bring a group whose step raised (a bug) back to a state the machine can work from, the way it would
        load one from storage: parked JoinGroup/SyncGroup requests are answered UNKNOWN_SERVER_ERROR (as Kafka
        maps an unexpected exception), its timers are cancelled, and it is replaced by an Empty group at the
        next generation (members gone, committed offsets kept), persisted and journalled (`state_change`,
        reason `reset_after_internal_error`). The failed step's partial effects were never applied. Kafka
        instead reverts to its last committed snapshot, which can leave a join parked for good when the failed
        step was the join timer."""
        err = int(E.UNKNOWN_SERVER_ERROR)
        for mid, m in g.members.items():
            self._answer_parked(m, err, mid, err)
            self._cancel_hb(g, mid)
        for mid in g.pending_join_members:
            self._cancel_hb(g, mid)
        self._cancel_join(g)
        self._cancel_sync(g)
        record = GroupRecord(
            g.group_id,
            GroupMetadataValue(
                protocol_type=g.protocol_type,
                generation=g.generation_id + 1,
                protocol=None,
                leader=None,
                current_state_timestamp=self.ctx.now,
                members=(),
            ),
        )
        state_from = str(g.state)
        self.replay_group(record)
        self.ctx.fx.record(record)
        fresh = self.groups[g.group_id]
        self.ctx.event(
            fresh,
            "state_change",
            state_from=state_from,
            state_to=str(fresh.state),
            reason="reset_after_internal_error",
        )

    def unload(self, group_ids: Collection[str] | None = None) -> None:
        """Answer parked requests NOT_COORDINATOR, cancel timers, journal every group going Dead, drop them.
        `group_ids`: only these (a shard this node stopped owning)."""
        err = int(E.NOT_COORDINATOR)
        groups = self.groups.values() if group_ids is None else (self.groups.get(gid) for gid in group_ids)
        for g in [g for g in groups if g is not None]:
            for mid, m in g.members.items():
                self._answer_parked(m, err, mid, err)
                self._cancel_hb(g, mid)
            for mid in g.pending_join_members:
                self._cancel_hb(g, mid)
            self._cancel_join(g)
            self._cancel_sync(g)
            self._transition(g, DEAD, "unloaded")
            self.groups.pop(g.group_id, None)


# ============================================================================================ helpers


def _replace_rebalance_timeout(req: JoinGroupRequest) -> JoinGroupRequest:
    return replace(req, rebalance_timeout_ms=req.session_timeout_ms)


def _with_assignment(mv: MemberMetadataValue, assignment: bytes) -> MemberMetadataValue:
    return replace(mv, assignment=assignment)


def _replace_members(
    value: GroupMetadataValue, members: tuple[MemberMetadataValue, ...]
) -> GroupMetadataValue:
    return replace(value, members=members)
