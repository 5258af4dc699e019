"""The classic-group coordinator as a pure, synchronous state machine (spec §1-§7).

Every public method takes the current time and returns results plus `Effects`; nothing here does I/O, sleeps
or reads a clock. The actor applies the effects: timers and journal events at once, then the durable write
of `records`, then `after_persist(ok, now)`, then the replies. Replies that depend on a write succeeding
(leader's SyncGroup, static replacement in Stable, offset commits, group creation) are produced by
`after_persist`, which re-checks the group because other requests may have run while the write was in flight.

Parked JoinGroup/SyncGroup requests are represented by the caller's opaque `token` (must not be None),
stored on the member and handed back in `Effects.replies` when the request completes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.consumer import CONSUMER, EMPTY_CONSUMER_ASSIGNMENT, assignment_partitions
from groupcoord.server.coordinator.group import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    ClassicGroup,
    GroupState,
    Member,
)
from groupcoord.server.coordinator.records import (
    GroupMetadataValue,
    GroupRecord,
    MemberMetadataValue,
    OffsetRecord,
    OffsetValue,
    Record,
)
from groupcoord.server.coordinator.types import (
    CancelTimer,
    CommitPartition,
    CoordinatorConfig,
    DescribedGroup,
    DescribedMember,
    Effects,
    FetchedPartition,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResult,
    JoinMember,
    LeaveGroupRequest,
    LeaveGroupResult,
    ListedGroup,
    OffsetCommitRequest,
    OffsetCommitResult,
    OffsetFetchRequest,
    OffsetFetchResult,
    ScheduleTimer,
    SyncGroupRequest,
    SyncGroupResult,
)

E = ErrorCode
NONE = int(E.NONE)
#: Error returned when a durable write fails. The actor only reports ok/failed; a failed or timed-out
#: `__consumer_offsets` write maps to COORDINATOR_NOT_AVAILABLE in Kafka (spec §2.12).
PERSIST_ERROR = int(E.COORDINATOR_NOT_AVAILABLE)

#: every journal event carries exactly these keys (docs/journal.md; the journal adds `seq`)
EVENT_KEYS = (
    "ts",
    "group",
    "event",
    "generation",
    "state_from",
    "state_to",
    "reason",
    "member_id",
    "previous_member_id",
    "group_instance_id",
    "client_id",
    "members",
    "leader",
    "protocol_type",
    "protocol",
    "skip_assignment",
    "assignment",
)


def hb_key(group_id: str, member_id: str) -> tuple:
    return ("heartbeat", group_id, member_id)


def join_key(group_id: str) -> tuple:
    return ("join", group_id)


def sync_key(group_id: str, generation: int) -> tuple:
    return ("sync", group_id, generation)


class GroupStateMachine:
    """All classic groups of this coordinator and their committed offsets."""

    def __init__(
        self, config: CoordinatorConfig | None = None, *, id_factory: Callable[[str], str] | None = None
    ):
        self.config = config or CoordinatorConfig()
        # id_factory(prefix) -> member id; tests inject a deterministic one
        self._new_id = id_factory or (lambda prefix: f"{prefix}-{uuid.uuid4()}")
        self._groups: dict[str, ClassicGroup] = {}
        self._offsets: dict[str, dict[tuple[str, int], OffsetValue]] = {}
        self._inflight_commits: dict[tuple[str, str, int], int] = {}  # unpersisted commits (RequireStable)
        self._fx = Effects()
        self._now = 0

    # ================================================================================== small helpers

    def group_ids(self) -> list[str]:
        return list(self._groups)

    def has_group(self, group_id: str) -> bool:
        return group_id in self._groups

    def group(self, group_id: str) -> ClassicGroup | None:
        """The live group object (for tests and diagnostics; do not mutate)."""
        return self._groups.get(group_id)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetValue]:
        return dict(self._offsets.get(group_id, {}))

    def _begin(self, now_ms: int) -> Effects:
        self._now = now_ms
        self._fx = Effects()
        return self._fx

    def _event(self, g: ClassicGroup, event: str, **fields: object) -> None:
        ev = dict.fromkeys(EVENT_KEYS)
        ev["ts"] = self._now
        ev["group"] = g.group_id
        ev["event"] = event
        ev["generation"] = g.generation_id
        ev["members"] = len(g.members)
        ev["leader"] = g.leader_id
        ev["protocol_type"] = g.protocol_type
        ev["protocol"] = g.protocol_name
        ev.update(fields)
        self._fx.event(ev)

    def _member_event(
        self, g: ClassicGroup, event: str, m: Member, reason: str | None, **fields: object
    ) -> None:
        self._event(
            g,
            event,
            reason=reason,
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            **fields,
        )

    def _transition(self, g: ClassicGroup, target: GroupState, reason: str, **fields: object) -> None:
        before = g.state
        g.transition_to(target, self._now)
        self._event(g, "state_change", state_from=str(before), state_to=str(target), reason=reason, **fields)

    def _schedule_hb(self, g: ClassicGroup, m: Member, timeout_ms: int) -> None:
        m.hb_deadline = self._now + timeout_ms
        self._fx.timer(ScheduleTimer(hb_key(g.group_id, m.member_id), m.hb_deadline))

    def _cancel_hb(self, g: ClassicGroup, member_id: str) -> None:
        self._fx.timer(CancelTimer(hb_key(g.group_id, member_id)))

    def _schedule_join(self, g: ClassicGroup, delay_ms: int, initial: tuple[int, int] | None) -> None:
        g.join_deadline = self._now + delay_ms
        g.initial_delay = initial
        self._fx.timer(ScheduleTimer(join_key(g.group_id), g.join_deadline))

    def _cancel_join(self, g: ClassicGroup) -> None:
        if g.join_deadline is not None:
            g.join_deadline = None
            g.initial_delay = None
            self._fx.timer(CancelTimer(join_key(g.group_id)))

    def _cancel_sync(self, g: ClassicGroup) -> None:
        if g.sync_generation is not None:
            self._fx.timer(CancelTimer(sync_key(g.group_id, g.sync_generation)))
            g.sync_generation = None
            g.sync_deadline = None

    def _group_record(self, g: ClassicGroup) -> None:
        self._fx.record(GroupRecord(g.group_id, g.to_record_value()))

    def _reply_join(self, token: Hashable, result: JoinGroupResult) -> None:
        self._fx.reply(token, result)

    def _answer_parked(
        self, m: Member, join_error: int | None, join_member_id: str, sync_error: int | None
    ) -> None:
        """Answer a removed/fenced member's parked requests (no group bookkeeping: it is already out)."""
        if join_error is not None and m.join_token is not None:
            self._fx.reply(m.join_token, JoinGroupResult(join_error, member_id=join_member_id))
            m.join_token = None
        if sync_error is not None and m.sync_token is not None:
            self._fx.reply(m.sync_token, SyncGroupResult(sync_error))
            m.sync_token = None

    def _remove_member(self, g: ClassicGroup, member_id: str, reason: str, cancel_timer: bool = True) -> None:
        """Remove a member: parked Join answered UNKNOWN_MEMBER_ID with member id "" (so a live client
        rejoins from scratch); a parked Sync, which Kafka would leave hanging, is answered UNKNOWN_MEMBER_ID."""
        m = g.remove(member_id)
        if cancel_timer:
            self._cancel_hb(g, member_id)
        if m is None:
            return
        m.hb_deadline = None
        self._answer_parked(m, int(E.UNKNOWN_MEMBER_ID), "", int(E.UNKNOWN_MEMBER_ID))
        self._member_event(g, "member_removed", m, reason)

    def _assignment_for_reply(self, g: ClassicGroup, m: Member) -> bytes:
        # never hand a consumer empty bytes: it cannot decode them
        if not m.assignment and g.protocol_type == CONSUMER:
            return EMPTY_CONSUMER_ASSIGNMENT
        return m.assignment

    def _leader_members(self, g: ClassicGroup) -> tuple[JoinMember, ...]:
        return tuple(
            JoinMember(m.member_id, m.group_instance_id, m.metadata(g.protocol_name))
            for m in g.members.values()
        )

    # ===================================================================================== JoinGroup

    def join_group(self, req: JoinGroupRequest, token: Hashable, now_ms: int) -> Effects:
        fx = self._begin(now_ms)
        if req.version == 0:
            req = _replace_rebalance_timeout(req)
        if not req.group_id:
            fx.reply(token, JoinGroupResult(int(E.INVALID_GROUP_ID), member_id=req.member_id))
            return fx
        cfg = self.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            fx.reply(token, JoinGroupResult(int(E.INVALID_SESSION_TIMEOUT), member_id=req.member_id))
            return fx

        g = self._groups.get(req.group_id)
        created = False
        if g is None:
            if req.member_id:
                fx.reply(token, JoinGroupResult(int(E.UNKNOWN_MEMBER_ID), member_id=req.member_id))
                return fx
            g = ClassicGroup(req.group_id, now_ms)
            self._groups[req.group_id] = g
            created = True
            self._event(g, "group_created")

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
            fx = self._begin(now_ms)
            if ok or self._groups.get(g.group_id) is not g:
                return fx
            del self._groups[g.group_id]
            self._offsets.pop(g.group_id, None)
            for mid, m in list(g.members.items()):
                self._cancel_hb(g, mid)
                self._answer_parked(m, PERSIST_ERROR, "", PERSIST_ERROR)
            for mid in g.pending_join_members:
                self._cancel_hb(g, mid)
            self._cancel_join(g)
            self._cancel_sync(g)
            self._event(g, "group_deleted", reason="persist_failure")
            return fx

        return after

    def _accept_joining_member(self, g: ClassicGroup, member_id: str) -> bool:
        """Capacity check (spec §2.4), run for every JoinGroup before anything else."""
        max_size = self.config.max_size
        if g.state in (EMPTY, DEAD):
            return True
        if g.state == PREPARING:
            m = g.members.get(member_id)
            return (m is not None and m.awaiting_join) or g.num_awaiting_join < max_size
        return member_id in g.members or len(g.members) < max_size

    def _join_new_member(self, g: ClassicGroup, req: JoinGroupRequest, token: Hashable) -> None:
        fx = self._fx
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
            deadline = self._now + req.session_timeout_ms
            g.pending_join_members[new_id] = deadline
            fx.timer(ScheduleTimer(hb_key(g.group_id, new_id), deadline))
            fx.reply(token, JoinGroupResult(int(E.MEMBER_ID_REQUIRED), member_id=new_id))
        else:
            self._add_member(g, req, token, self._new_id(req.client_id))

    def _join_existing_member(self, g: ClassicGroup, req: JoinGroupRequest, token: Hashable) -> None:
        fx = self._fx
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
        err = self._validate_member(g, mid, req.group_instance_id)
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
            self._fx.reply(old, JoinGroupResult(int(E.REBALANCE_IN_PROGRESS), member_id=m.member_id))

    def _validate_member(self, g: ClassicGroup, member_id: str, instance_id: str | None) -> int:
        """validateMember (spec §2.6.2): 0, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID."""
        if instance_id is not None:
            mapped = g.static_members.get(instance_id)
            if mapped is None:
                return int(E.UNKNOWN_MEMBER_ID)
            if mapped != member_id:
                return int(E.FENCED_INSTANCE_ID)
        if member_id not in g.members:
            return int(E.UNKNOWN_MEMBER_ID)
        return NONE

    def _add_member(self, g: ClassicGroup, req: JoinGroupRequest, token: Hashable, member_id: str) -> None:
        """addMemberThenRebalanceOrCompleteJoin (spec §2.8.1)."""
        m = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            tuple(req.protocols),
        )
        m.is_new = True
        if g.state == PREPARING and g.previous_state == EMPTY:
            g.new_member_added = True
        g.add(m, token)
        self._member_event(g, "member_joined", m, None)
        self._schedule_hb(g, m, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(g, "new_member")

    def _replace_static_member(
        self, g: ClassicGroup, req: JoinGroupRequest, token: Hashable, old_id: str, new_id: str
    ) -> None:
        """updateStaticMemberThenRebalanceOrCompleteJoin (spec §2.6.1)."""
        instance_id = req.group_instance_id
        assert instance_id is not None
        old_leader = g.leader_id or ""
        old, new = g.replace_static_member(instance_id, old_id, new_id)
        self._answer_parked(old, int(E.FENCED_INSTANCE_ID), old_id, int(E.FENCED_INSTANCE_ID))
        old.hb_deadline = None
        self._cancel_hb(g, old_id)
        self._schedule_hb(g, new, new.session_timeout_ms)
        old_protocols = new.protocols
        old_rebalance, old_session = new.rebalance_timeout_ms, new.session_timeout_ms
        g.update_member(new, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, token)

        if g.state == STABLE and g.select_protocol() == g.protocol_name:
            self._group_record(g)
            self._fx.after_persist = self._on_static_replacement_persisted(
                g,
                req,
                token,
                instance_id,
                old_id,
                new_id,
                old_leader,
                (old_protocols, old_rebalance, old_session),
            )
            return
        self._member_event(g, "member_removed", old, "static_replaced", previous_member_id=old_id)
        self._member_event(g, "member_joined", new, None, previous_member_id=old_id)
        if g.state in (STABLE, COMPLETING):
            self._prepare_rebalance(g, "static_replacement")
        elif g.state == PREPARING:
            self._maybe_complete_join_phase(g)
        else:  # a known instance implies members
            raise AssertionError(f"static replacement in {g.state}")

    def _on_static_replacement_persisted(
        self,
        g: ClassicGroup,
        req: JoinGroupRequest,
        token: Hashable,
        instance_id: str,
        old_id: str,
        new_id: str,
        old_leader: str,
        old_settings: tuple[tuple[tuple[str, bytes], ...], int, int],
    ) -> Callable[[bool, int], Effects]:
        def after(ok: bool, now_ms: int) -> Effects:
            fx = self._begin(now_ms)
            m = g.members.get(new_id)
            if self._groups.get(g.group_id) is not g or m is None or m.join_token != token:
                return fx  # something else already answered the parked join (e.g. a rebalance started)
            g.set_join_token(m, None)
            if ok:
                if req.version >= 9 and g.is_leader(new_id):
                    result = self._current_join_result(g, m, new_id, with_members=True, skip=True)
                elif req.version >= 9:
                    result = self._current_join_result(g, m, g.leader_id or "", with_members=False)
                else:
                    result = self._current_join_result(g, m, old_leader, with_members=False)
                fx.reply(token, result)
                self._member_event(
                    g,
                    "static_rejoin",
                    m,
                    None,
                    previous_member_id=old_id,
                    skip_assignment=result.skip_assignment,
                )
                return fx
            protocols, rebalance, session = old_settings
            g.update_member(m, protocols, rebalance, session, None)
            if g.static_members.get(instance_id) == new_id:
                _, back = g.replace_static_member(instance_id, new_id, old_id)
                m.hb_deadline = None
                self._cancel_hb(g, new_id)
                self._schedule_hb(g, back, back.session_timeout_ms)
            fx.reply(
                token,
                JoinGroupResult(
                    PERSIST_ERROR, g.generation_id, g.protocol_type, g.protocol_name, old_leader, False, ""
                ),
            )
            return fx

        return after

    # --------------------------------------------------------------------------- rebalance mechanics

    def _maybe_prepare_rebalance_or_complete_join(self, g: ClassicGroup, reason: str) -> None:
        if g.can_rebalance():
            self._prepare_rebalance(g, reason)
        else:
            self._maybe_complete_join_phase(g)

    def _prepare_rebalance(self, g: ClassicGroup, reason: str) -> None:
        """Spec §2.8.2."""
        if g.state == COMPLETING:
            self._reset_and_propagate_assignment_with_error(g, int(E.REBALANCE_IN_PROGRESS))
        g.pending_sync_members.clear()
        self._cancel_sync(g)
        initial = g.state == EMPTY
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(g.rebalance_timeout_ms() - delay, 0)
            self._schedule_join(g, delay, (delay, remaining))
        self._transition(g, PREPARING, reason)
        if not initial:
            if g.has_all_members_joined():
                self._complete_join(g)
            else:
                self._schedule_join(g, g.rebalance_timeout_ms(), None)

    def _reset_and_propagate_assignment_with_error(self, g: ClassicGroup, error: int) -> None:
        for m in g.members.values():
            m.assignment = b""
            if m.sync_token is not None:
                self._fx.reply(m.sync_token, SyncGroupResult(error))
                m.sync_token = None
                self._schedule_hb(g, m, m.session_timeout_ms)

    def _maybe_complete_join_phase(self, g: ClassicGroup) -> None:
        """Early completion (spec §2.8.4): never during the initial delay."""
        if g.state == PREPARING and g.previous_state != EMPTY and g.has_all_members_joined():
            self._complete_join(g)

    def _complete_join(self, g: ClassicGroup) -> None:
        """completeClassicGroupJoin (spec §2.8.5)."""
        if g.state != PREPARING:
            return
        self._cancel_join(g)
        for m in [m for m in g.members.values() if not m.awaiting_join and not m.is_static]:
            self._remove_member(g, m.member_id, "rebalance_timeout")
        if not self._maybe_elect_new_joined_leader(g) and g.members:
            # only static members that did not rejoin remain: wait another rebalance timeout
            self._schedule_join(g, g.rebalance_timeout_ms(), None)
            return
        before = g.state
        g.init_next_generation(self._now)
        if g.state == EMPTY:
            self._event(
                g, "state_change", state_from=str(before), state_to=str(EMPTY), reason="join_complete"
            )
            self._group_record(g)
            return
        self._event(
            g, "state_change", state_from=str(before), state_to=str(COMPLETING), reason="join_complete"
        )
        leader_members = self._leader_members(g)
        for m in g.members.values():
            if m.join_token is not None:
                token = m.join_token
                g.set_join_token(m, None)
                self._reply_join(
                    token,
                    JoinGroupResult(
                        NONE,
                        g.generation_id,
                        g.protocol_type,
                        g.protocol_name,
                        g.leader_id or "",
                        False,
                        m.member_id,
                        leader_members if g.is_leader(m.member_id) else (),
                    ),
                )
            self._schedule_hb(g, m, m.session_timeout_ms)
            m.is_new = False
            g.pending_sync_members.add(m.member_id)
        g.sync_generation = g.generation_id
        g.sync_deadline = self._now + g.rebalance_timeout_ms()
        self._fx.timer(ScheduleTimer(sync_key(g.group_id, g.generation_id), g.sync_deadline))

    def _maybe_elect_new_joined_leader(self, g: ClassicGroup) -> bool:
        if g.leader_id is None:
            return False
        leader = g.members.get(g.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for m in g.members.values():
            if m.awaiting_join:
                g.leader_id = m.member_id
                return True
        return False

    # ===================================================================================== SyncGroup

    def sync_group(self, req: SyncGroupRequest, token: Hashable, now_ms: int) -> Effects:
        fx = self._begin(now_ms)
        err = self._validate_sync(req)
        if err:
            fx.reply(token, SyncGroupResult(err))
            return fx
        g = self._groups[req.group_id]
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
        g = self._groups.get(req.group_id)
        if g is None or g.state == EMPTY:
            return int(E.UNKNOWN_MEMBER_ID)
        if g.state == DEAD:
            return int(E.COORDINATOR_NOT_AVAILABLE)
        err = self._validate_member(g, req.member_id, req.group_instance_id)
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
            fx = self._begin(now_ms)
            if (
                self._groups.get(g.group_id) is not g
                or g.state != COMPLETING
                or g.generation_id != generation
            ):
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

    def heartbeat(self, req: HeartbeatRequest, now_ms: int) -> tuple[int, Effects | None]:
        if not req.group_id:
            return int(E.INVALID_GROUP_ID), None
        g = self._groups.get(req.group_id)
        if g is None:
            return int(E.UNKNOWN_MEMBER_ID), None
        if g.state == DEAD:
            return int(E.COORDINATOR_NOT_AVAILABLE), None
        err = self._validate_member(g, req.member_id, req.group_instance_id)
        if err:
            return err, None
        if req.generation_id != g.generation_id:
            return int(E.ILLEGAL_GENERATION), None
        if g.state == EMPTY:
            return int(E.UNKNOWN_MEMBER_ID), None
        fx = self._begin(now_ms)
        m = g.members[req.member_id]
        self._schedule_hb(g, m, m.session_timeout_ms)
        if g.state == PREPARING:
            return int(E.REBALANCE_IN_PROGRESS), fx
        return NONE, fx

    # ==================================================================================== LeaveGroup

    def leave_group(self, req: LeaveGroupRequest, now_ms: int) -> tuple[LeaveGroupResult, Effects]:
        fx = self._begin(now_ms)
        if not req.group_id:
            return LeaveGroupResult(int(E.INVALID_GROUP_ID), ()), fx
        g = self._groups.get(req.group_id)
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
                err = self._validate_member(g, x.member_id, x.group_instance_id)
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

    # ======================================================================================== timers

    def on_timer(self, key: tuple, now_ms: int) -> Effects:
        """A timer fired. Timers of replaced/removed members or past generations do nothing; a timer that
        fires before the deadline the machine recorded for its key (early, or a stale firing racing a re-arm)
        is re-armed for that deadline instead of acting."""
        fx = self._begin(now_ms)
        kind = key[0]
        g = self._groups.get(key[1])
        if g is None or g.state == DEAD:
            return fx
        if kind == "heartbeat":
            self._expire_heartbeat(g, key)
        elif kind == "join":
            if g.join_deadline is None or g.state != PREPARING:
                return fx
            if now_ms < g.join_deadline:
                fx.timer(ScheduleTimer(key, g.join_deadline))
                return fx
            initial = g.initial_delay
            g.join_deadline = None
            g.initial_delay = None
            if initial is not None:
                self._try_complete_initial_rebalance(g, *initial)
            else:
                self._complete_join(g)
        elif kind == "sync":
            if g.sync_generation != key[2] or g.sync_deadline is None:
                return fx
            if now_ms < g.sync_deadline:
                fx.timer(ScheduleTimer(key, g.sync_deadline))
                return fx
            g.sync_generation = None
            g.sync_deadline = None
            self._expire_pending_sync(g, key[2])
        return fx

    def _try_complete_initial_rebalance(self, g: ClassicGroup, delay: int, remaining: int) -> None:
        """Spec §2.8.3: extend by min(initial delay, remaining) while new members keep arriving."""
        if g.new_member_added and remaining != 0:
            g.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self._schedule_join(g, new_delay, (new_delay, new_remaining))
        else:
            self._complete_join(g)

    def _expire_heartbeat(self, g: ClassicGroup, key: tuple) -> None:
        member_id = key[2]
        pending_deadline = g.pending_join_members.get(member_id)
        if pending_deadline is not None:
            if self._now < pending_deadline:
                self._fx.timer(ScheduleTimer(key, pending_deadline))
                return
            g.remove(member_id)
            if g.state == PREPARING and g.has_all_members_joined():
                self._complete_join(g)
            return
        m = g.members.get(member_id)
        if m is None or m.hb_deadline is None:
            return  # replaced, removed or cancelled: not this member's timer
        if self._now < m.hb_deadline:
            self._fx.timer(ScheduleTimer(key, m.hb_deadline))
            return
        m.hb_deadline = None
        if m.has_satisfied_heartbeat():
            return
        self._remove_member(g, member_id, "session_timeout", cancel_timer=False)
        if g.state in (STABLE, COMPLETING):
            self._maybe_prepare_rebalance_or_complete_join(g, "session_timeout")
        elif g.state == PREPARING and g.has_all_members_joined():
            self._complete_join(g)

    def _expire_pending_sync(self, g: ClassicGroup, generation: int) -> None:
        if generation != g.generation_id or g.state not in (COMPLETING, STABLE):
            return
        if not g.pending_sync_members:
            return
        for mid in list(g.pending_sync_members):
            self._remove_member(g, mid, "sync_timeout")
        self._prepare_rebalance(g, "sync_timeout")

    # ================================================================================ OffsetCommit

    def commit_offsets(self, req: OffsetCommitRequest, token: Hashable, now_ms: int) -> Effects:
        fx = self._begin(now_ms)
        err = self._validate_commit(req)
        if err:
            fx.reply(token, _commit_result(req, lambda t, p: err))
            return fx
        max_meta = self.config.offset_metadata_max_bytes
        retention = req.retention_time_ms if 2 <= req.version <= 4 and req.retention_time_ms != -1 else None
        pending: dict[tuple[str, int], OffsetValue] = {}
        for topic, parts in req.topics:
            for p in parts:
                meta = p.metadata if p.metadata is not None else ""
                if len(meta) > max_meta:
                    continue
                commit_ts = p.commit_timestamp if req.version == 1 and p.commit_timestamp != -1 else now_ms
                value = OffsetValue(
                    offset=p.offset,
                    leader_epoch=p.leader_epoch,
                    metadata=meta,
                    commit_timestamp=commit_ts,
                    expire_timestamp=now_ms + retention if retention is not None else -1,
                )
                pending[(topic, p.partition)] = value
                fx.record(OffsetRecord(req.group_id, topic, p.partition, value))

        def error_of(topic: str, p: CommitPartition, ok: bool) -> int:
            meta = p.metadata if p.metadata is not None else ""
            if len(meta) > max_meta:
                return int(E.OFFSET_METADATA_TOO_LARGE)
            return NONE if ok else PERSIST_ERROR

        if not pending:
            fx.reply(token, _commit_result(req, lambda t, p: error_of(t, p, True)))
            return fx
        gid = req.group_id
        for topic, partition in pending:
            k = (gid, topic, partition)
            self._inflight_commits[k] = self._inflight_commits.get(k, 0) + 1

        def after(ok: bool, now: int) -> Effects:
            fx2 = self._begin(now)
            for topic, partition in pending:
                k = (gid, topic, partition)
                n = self._inflight_commits.get(k, 0) - 1
                if n > 0:
                    self._inflight_commits[k] = n
                else:
                    self._inflight_commits.pop(k, None)
            if ok:
                if gid not in self._groups:  # deleted meanwhile: the offsets recreate it, as a replay would
                    self._groups[gid] = ClassicGroup(gid, now)
                self._offsets.setdefault(gid, {}).update(pending)
            fx2.reply(token, _commit_result(req, lambda t, p: error_of(t, p, ok)))
            return fx2

        fx.after_persist = after
        return fx

    def _validate_commit(self, req: OffsetCommitRequest) -> int:
        """Spec §6.2-§6.3; creates a simple group for generation < 0 on an unknown group."""
        g = self._groups.get(req.group_id)
        if g is None:
            if req.generation_id < 0:
                g = ClassicGroup(req.group_id, self._now)
                self._groups[req.group_id] = g
                self._event(g, "group_created", reason="simple_group")
                return NONE
            return int(E.GROUP_ID_NOT_FOUND) if req.version >= 9 else int(E.ILLEGAL_GENERATION)
        if g.state == DEAD:
            return int(E.COORDINATOR_NOT_AVAILABLE)
        if req.generation_id < 0 and g.state == EMPTY:
            return NONE
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            err = self._validate_member(g, req.member_id, req.group_instance_id)
            if err:
                return err
            if req.generation_id != g.generation_id:
                return int(E.ILLEGAL_GENERATION)
        else:
            return int(E.UNKNOWN_MEMBER_ID)
        if g.state == COMPLETING:
            return int(E.REBALANCE_IN_PROGRESS)
        if g.state in (STABLE, PREPARING):
            m = g.members[req.member_id]
            self._schedule_hb(g, m, m.session_timeout_ms)
        return NONE

    # ================================================================================= OffsetFetch

    def fetch_offsets(self, req: OffsetFetchRequest, now_ms: int) -> OffsetFetchResult:
        offsets = self._offsets.get(req.group_id, {})
        gid = req.group_id
        if req.topics is None:
            by_topic: dict[str, list[FetchedPartition]] = {}
            for (topic, partition), v in offsets.items():
                by_topic.setdefault(topic, []).append(
                    self._fetched(gid, topic, partition, v, req.require_stable)
                )
            return OffsetFetchResult(
                NONE, tuple((t, tuple(sorted(ps, key=lambda p: p.partition))) for t, ps in by_topic.items())
            )
        topics = tuple(
            (
                topic,
                tuple(
                    self._fetched(gid, topic, p, offsets.get((topic, p)), req.require_stable)
                    for p in partitions
                ),
            )
            for topic, partitions in req.topics
        )
        return OffsetFetchResult(NONE, topics)

    def _fetched(
        self, gid: str, topic: str, partition: int, v: OffsetValue | None, require_stable: bool
    ) -> FetchedPartition:
        if require_stable and (gid, topic, partition) in self._inflight_commits:
            return FetchedPartition(partition, -1, -1, "", int(E.UNSTABLE_OFFSET_COMMIT))
        if v is None:
            return FetchedPartition(partition, -1, -1, "", NONE)
        return FetchedPartition(partition, v.offset, v.leader_epoch, v.metadata, NONE)

    # ===================================================================== Describe / List / Delete

    def describe_groups(self, ids: Iterable[str]) -> list[DescribedGroup]:
        out: list[DescribedGroup] = []
        for gid in ids:
            g = self._groups.get(gid)
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
            for gid, g in self._groups.items()
            if not states or str(g.state).lower() in states
        ]

    def delete_groups(self, ids: Iterable[str], now_ms: int) -> tuple[list[tuple[str, int]], Effects]:
        fx = self._begin(now_ms)
        results: list[tuple[str, int]] = []
        for gid in dict.fromkeys(ids):
            g = self._groups.get(gid)
            if g is None or g.state == DEAD:
                results.append((gid, int(E.GROUP_ID_NOT_FOUND)))
            elif g.state != EMPTY:
                results.append((gid, int(E.NON_EMPTY_GROUP)))
            else:
                for topic, partition in self._offsets.get(gid, {}):
                    fx.record(OffsetRecord(gid, topic, partition, None))
                self._delete_group(g, "deleted")
                results.append((gid, NONE))
        return results, fx

    def _delete_group(self, g: ClassicGroup, reason: str) -> None:
        for mid in g.pending_join_members:
            self._cancel_hb(g, mid)
        self._fx.record(GroupRecord(g.group_id, None))
        self._transition(g, DEAD, "deleted")
        self._event(g, "group_deleted", reason=reason)
        del self._groups[g.group_id]
        self._offsets.pop(g.group_id, None)

    # ========================================================================= retention and expiry

    def cleanup_expired_offsets(self, now_ms: int) -> Effects:
        """Spec §6.6: expire offsets, then delete Empty groups left without offsets."""
        fx = self._begin(now_ms)
        retention = self.config.offsets_retention_ms
        for gid, g in list(self._groups.items()):
            offsets = self._offsets.get(gid, {})
            base: Callable[[OffsetValue], int] | None
            subscribed: set[str] = set()
            if g.protocol_type is not None and g.state == EMPTY:
                state_ts = g.current_state_timestamp

                def base(v: OffsetValue, ts: int | None = state_ts) -> int:
                    return ts if ts is not None else v.commit_timestamp
            elif g.protocol_type == CONSUMER and g.state == STABLE and g.subscribed_topics is not None:
                subscribed = g.subscribed_topics

                def base(v: OffsetValue) -> int:
                    return v.commit_timestamp
            elif g.protocol_type is None:

                def base(v: OffsetValue) -> int:
                    return v.commit_timestamp
            else:
                base = None
            if base is not None:
                for (topic, partition), v in list(offsets.items()):
                    if topic in subscribed or (gid, topic, partition) in self._inflight_commits:
                        continue
                    expired = (
                        now_ms >= v.expire_timestamp
                        if v.expire_timestamp != -1
                        else now_ms - base(v) >= retention
                    )
                    if expired:
                        del offsets[(topic, partition)]
                        fx.record(OffsetRecord(gid, topic, partition, None))
            if not offsets and g.state == EMPTY and not any(k[0] == gid for k in self._inflight_commits):
                self._delete_group(g, "expired")
        return fx

    # ============================================================================ load from storage

    def replay(self, record: Record) -> None:
        """Apply one persisted record (latest value per key, any order between keys)."""
        if isinstance(record, GroupRecord):
            if record.value is None:
                self._groups.pop(record.group_id, None)
                return
            self._groups[record.group_id] = ClassicGroup.from_record_value(record.group_id, record.value)
        else:
            offsets = self._offsets.setdefault(record.group_id, {})
            if record.value is None:
                offsets.pop((record.topic, record.partition), None)
            else:
                offsets[(record.topic, record.partition)] = record.value
                if record.group_id not in self._groups:  # offsets alone: a simple group
                    self._groups[record.group_id] = ClassicGroup(
                        record.group_id, record.value.commit_timestamp
                    )

    def finish_load(self, now_ms: int) -> Effects:
        """Arm session timers for loaded members; journal loaded Empty groups; rebalance over-capacity groups."""
        fx = self._begin(now_ms)
        for gid in [gid for gid, offs in self._offsets.items() if not offs]:
            del self._offsets[gid]
        for g in list(self._groups.values()):
            if g.state == EMPTY:
                self._event(g, "state_change", state_from=None, state_to=str(EMPTY), reason="loaded")
                continue
            for m in g.members.values():
                self._schedule_hb(g, m, m.session_timeout_ms)
            if len(g.members) > self.config.max_size:
                self._prepare_rebalance(g, "loaded")
        return fx

    def unload(self, now_ms: int) -> Effects:
        """Drop every group as Kafka does on resignation (spec §1.6, e.g. at shutdown): parked requests are
        answered NOT_COORDINATOR, timers cancelled, groups go Dead (journalled, reason `unloaded`)."""
        fx = self._begin(now_ms)
        err = int(E.NOT_COORDINATOR)
        for g in list(self._groups.values()):
            for mid, m in g.members.items():
                self._answer_parked(m, err, mid, err)
                self._cancel_hb(g, mid)
            for mid in g.pending_join_members:
                self._cancel_hb(g, mid)
            self._cancel_join(g)
            self._cancel_sync(g)
            self._transition(g, DEAD, "unloaded")
        self._groups.clear()
        self._offsets.clear()
        self._inflight_commits.clear()
        return fx


# ============================================================================================ helpers


def _replace_rebalance_timeout(req: JoinGroupRequest) -> JoinGroupRequest:
    return replace(req, rebalance_timeout_ms=req.session_timeout_ms)


def _with_assignment(mv: MemberMetadataValue, assignment: bytes) -> MemberMetadataValue:
    return replace(mv, assignment=assignment)


def _replace_members(
    value: GroupMetadataValue, members: tuple[MemberMetadataValue, ...]
) -> GroupMetadataValue:
    return replace(value, members=members)


def _commit_result(
    req: OffsetCommitRequest, error_of: Callable[[str, CommitPartition], int]
) -> OffsetCommitResult:
    return OffsetCommitResult(
        tuple((topic, tuple((p.partition, error_of(topic, p)) for p in parts)) for topic, parts in req.topics)
    )
