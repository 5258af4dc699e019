"""Classic-group membership mechanics shared by every membership request: adding, replacing and removing
members, the rebalance (prepare, complete the join phase, elect a leader), session/join/sync timers and
their expiry (spec §2.6-§2.9).

This is the lower half of the group manager (Kafka keeps all of it in `GroupMetadataManager`); it is a base
class only so that `group_manager.py`, which holds the request handlers, stays readable. It holds the groups
map; it never touches offsets.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.consumer import CONSUMER, EMPTY_CONSUMER_ASSIGNMENT
from groupcoord.server.coordinator.context import (
    NONE,
    PERSIST_ERROR,
    OperationContext,
    hb_key,
    join_key,
    sync_key,
)
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
from groupcoord.server.coordinator.records import GroupRecord
from groupcoord.server.coordinator.types import (
    CancelTimer,
    Effects,
    JoinGroupRequest,
    JoinGroupResult,
    JoinMember,
    ScheduleTimer,
    SyncGroupResult,
)

E = ErrorCode


class ClassicMembership:
    """The groups map and the rebalance mechanics; see `GroupMetadataManager` for the requests."""

    def __init__(self, ctx: OperationContext, id_factory: Callable[[str], str] | None = None) -> None:
        self.ctx = ctx
        # id_factory(prefix) -> member id; tests inject a deterministic one
        self._new_id = id_factory or (lambda prefix: f"{prefix}-{uuid.uuid4()}")
        self.groups: dict[str, ClassicGroup] = {}

    if TYPE_CHECKING:  # defined by the subclass, GroupMetadataManager, with the JoinGroup handlers

        def _current_join_result(
            self, g: ClassicGroup, m: Member, leader: str, with_members: bool = True, skip: bool = False
        ) -> JoinGroupResult: ...

    def reschedule_member_heartbeat(self, g: ClassicGroup, m: Member) -> None:
        """Restart a member's session timeout (an accepted heartbeat or offset commit counts as liveness)."""
        self._schedule_hb(g, m, m.session_timeout_ms)

    def _transition(self, g: ClassicGroup, target: GroupState, reason: str, **fields: object) -> None:
        before = g.state
        g.transition_to(target, self.ctx.now)
        self.ctx.event(
            g, "state_change", state_from=str(before), state_to=str(target), reason=reason, **fields
        )

    def _schedule_hb(self, g: ClassicGroup, m: Member, timeout_ms: int) -> None:
        m.hb_deadline = self.ctx.now + timeout_ms
        self.ctx.fx.timer(ScheduleTimer(hb_key(g.group_id, m.member_id), m.hb_deadline))

    def _cancel_hb(self, g: ClassicGroup, member_id: str) -> None:
        self.ctx.fx.timer(CancelTimer(hb_key(g.group_id, member_id)))

    def _schedule_join(self, g: ClassicGroup, delay_ms: int, initial: tuple[int, int] | None) -> None:
        g.join_deadline = self.ctx.now + delay_ms
        g.initial_delay = initial
        self.ctx.fx.timer(ScheduleTimer(join_key(g.group_id), g.join_deadline))

    def _cancel_join(self, g: ClassicGroup) -> None:
        if g.join_deadline is not None:
            g.join_deadline = None
            g.initial_delay = None
            self.ctx.fx.timer(CancelTimer(join_key(g.group_id)))

    def _cancel_sync(self, g: ClassicGroup) -> None:
        if g.sync_generation is not None:
            self.ctx.fx.timer(CancelTimer(sync_key(g.group_id, g.sync_generation)))
            g.sync_generation = None
            g.sync_deadline = None

    def _group_record(self, g: ClassicGroup) -> None:
        self.ctx.fx.record(GroupRecord(g.group_id, g.to_record_value()))

    def _reply_join(self, token: Hashable, result: JoinGroupResult) -> None:
        self.ctx.fx.reply(token, result)

    def _answer_parked(
        self, m: Member, join_error: int | None, join_member_id: str, sync_error: int | None
    ) -> None:
        """Answer a removed/fenced member's parked requests (no group bookkeeping: it is already out)."""
        if join_error is not None and m.join_token is not None:
            self.ctx.fx.reply(m.join_token, JoinGroupResult(join_error, member_id=join_member_id))
            m.join_token = None
        if sync_error is not None and m.sync_token is not None:
            self.ctx.fx.reply(m.sync_token, SyncGroupResult(sync_error))
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
        self.ctx.member_event(g, "member_removed", m, reason)

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

    def validate_member(self, g: ClassicGroup, member_id: str, instance_id: str | None) -> int:
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
        self.ctx.member_event(g, "member_joined", m, None)
        self._schedule_hb(g, m, self.ctx.config.new_member_join_timeout_ms)
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
            self.ctx.fx.after_persist = self._on_static_replacement_persisted(
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
        self.ctx.member_event(g, "member_removed", old, "static_replaced", previous_member_id=old_id)
        self.ctx.member_event(g, "member_joined", new, None, previous_member_id=old_id)
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
            fx = self.ctx.begin(now_ms)
            m = g.members.get(new_id)
            if self.groups.get(g.group_id) is not g or m is None or m.join_token != token:
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
                self.ctx.member_event(
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
            delay = self.ctx.config.initial_rebalance_delay_ms
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
                self.ctx.fx.reply(m.sync_token, SyncGroupResult(error))
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
        g.init_next_generation(self.ctx.now)
        if g.state == EMPTY:
            self.ctx.event(
                g, "state_change", state_from=str(before), state_to=str(EMPTY), reason="join_complete"
            )
            self._group_record(g)
            return
        self.ctx.event(
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
        g.sync_deadline = self.ctx.now + g.rebalance_timeout_ms()
        self.ctx.fx.timer(ScheduleTimer(sync_key(g.group_id, g.generation_id), g.sync_deadline))

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

    # ======================================================================================== timers

    def on_timer(self, key: tuple[Any, ...], now_ms: int) -> Effects:
        """A timer fired. Timers of replaced/removed members or past generations do nothing; a timer that
        fires before the deadline the machine recorded for its key (early, or a stale firing racing a re-arm)
        is re-armed for that deadline instead of acting."""
        fx = self.ctx.begin(now_ms)
        kind = key[0]
        g = self.groups.get(key[1])
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
            new_delay = min(self.ctx.config.initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self._schedule_join(g, new_delay, (new_delay, new_remaining))
        else:
            self._complete_join(g)

    def _expire_heartbeat(self, g: ClassicGroup, key: tuple[Any, ...]) -> None:
        member_id = key[2]
        pending_deadline = g.pending_join_members.get(member_id)
        if pending_deadline is not None:
            if self.ctx.now < pending_deadline:
                self.ctx.fx.timer(ScheduleTimer(key, pending_deadline))
                return
            g.remove(member_id)
            if g.state == PREPARING and g.has_all_members_joined():
                self._complete_join(g)
            return
        m = g.members.get(member_id)
        if m is None or m.hb_deadline is None:
            return  # replaced, removed or cancelled: not this member's timer
        if self.ctx.now < m.hb_deadline:
            self.ctx.fx.timer(ScheduleTimer(key, m.hb_deadline))
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

    # ====================================================================== online migration (spec §9)

    def hand_over(self, g: ClassicGroup, reason: str) -> None:
        """Online upgrade (Kafka's `convertToConsumerGroup`, classic half): parked JoinGroup/SyncGroup
        requests answered REBALANCE_IN_PROGRESS (their members rejoin the consumer group), every classic timer
        cancelled, the group tombstoned and dropped (its offsets stay: the consumer group takes them over)."""
        rebalancing = int(E.REBALANCE_IN_PROGRESS)
        for m in g.members.values():
            self._answer_parked(m, rebalancing, m.member_id, rebalancing)
            self._cancel_hb(g, m.member_id)
        for mid in g.pending_join_members:
            self._cancel_hb(g, mid)
        self._cancel_join(g)
        self._cancel_sync(g)
        self.ctx.fx.record(GroupRecord(g.group_id, None))
        self._transition(g, DEAD, reason)
        del self.groups[g.group_id]

    def take_over(self, g: ClassicGroup, reason: str, rebalance: bool = True) -> None:
        """Online downgrade (Kafka's `convertToClassicGroup`, classic half): the group built from a consumer
        group is written and added, its members' session timers armed, and (`rebalance`) a rebalance
        prepared."""
        self.groups[g.group_id] = g
        self._group_record(g)
        self.ctx.event(g, "state_change", state_from=None, state_to=str(g.state), reason=reason)
        for m in g.members.values():
            self._schedule_hb(g, m, m.session_timeout_ms)
        if rebalance:
            self._prepare_rebalance(g, reason)
