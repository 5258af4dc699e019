"""ShareGroupHeartbeat and ShareGroupDescribe for KIP-932 share groups (Kafka's `GroupMetadataManager`
share-group paths: `shareGroupHeartbeat`, `shareGroupLeave`, the session timer, `shareGroupDescribe`).

Pure: every call takes `now_ms` and returns `Effects` (the reply, the session timer, the group record to
persist). Heartbeats are not written: a record is emitted only when the group's durable state changed (a
member joined, left or changed its subscription, an epoch moved, an assignment changed), and then the reply
waits for the write. The member's session is a timer only.

Epochs (Kafka's): the group epoch bumps on any membership, subscription or subscribed-topic metadata change;
the `simple` assignor then computes the target assignment at assignment epoch = group epoch; a member jumps
straight to the target on its next heartbeat (no revocation phase in share groups), its epoch becoming the
assignment epoch. Share partitions are initialized synchronously when first assigned (Kafka initializes
them asynchronously, so its first heartbeat usually returns an empty assignment; clients cope with both).
"""

from __future__ import annotations

import zlib
from collections.abc import Hashable, Iterable, Mapping

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.modern.share import journal
from groupcoord.server.coordinator.modern.share.assignor import assign
from groupcoord.server.coordinator.modern.share.config import ShareGroupConfig
from groupcoord.server.coordinator.modern.share.group import (
    DescribedShareGroup,
    DescribedShareMember,
    ShareGroup,
    ShareGroupMember,
    ShareHeartbeatRequest,
    ShareHeartbeatResult,
    frozen_assignment,
)
from groupcoord.server.coordinator.records import ShareGroupRecord
from groupcoord.server.coordinator.registry import SHARE, GroupRegistry
from groupcoord.server.coordinator.types import CancelTimer, Effects, ScheduleTimer

E = ErrorCode
SESSION_TIMER = "share-session"


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """The session timer of one member (the runtime routes a timer by its key's second element, the group)."""
    return (SESSION_TIMER, group_id, member_id)


def _metadata_hash(topics: Mapping[str, tuple[str, int]]) -> int:
    """Stable across restarts (Python's `hash` of a str is not), so a reload does not bump the epoch."""
    text = repr(sorted(topics.items()))
    return zlib.crc32(text.encode())


class ShareGroupManager:
    """Every share group of this coordinator."""

    group_type = SHARE
    holds_offsets = False  # a share group's progress is its share partitions' start offsets (server/share)

    def __init__(self, config: ShareGroupConfig, registry: GroupRegistry) -> None:
        self.config = config
        self.groups: dict[str, ShareGroup] = {}
        #: groups with `share.*` group configs: their effective config (set through `set_group_config`)
        self.group_configs: dict[str, ShareGroupConfig] = {}
        #: every group type's manager: one id has exactly one type
        self._registry = registry
        registry.register(self)

    def set_group_config(self, group_id: str, group_configs: Mapping[str, str]) -> None:
        """A group's configs changed (IncrementalAlterConfigs on its GROUP resource): its session timeout and
        heartbeat interval apply from each member's next heartbeat, as in Kafka."""
        cfg = self.config.for_group(group_configs)
        if cfg == self.config:
            self.group_configs.pop(group_id, None)
        else:
            self.group_configs[group_id] = cfg

    def config_for(self, group_id: str) -> ShareGroupConfig:
        return self.group_configs.get(group_id, self.config)

    # ------------------------------------------------------------------------------------- heartbeat

    def heartbeat(self, req: ShareHeartbeatRequest, token: Hashable, now_ms: int) -> Effects:
        fx = Effects()
        result, changed = self._heartbeat(req, fx, now_ms)
        self._answer(fx, token, result, req.group_id if changed else None)
        return fx

    def _answer(
        self, fx: Effects, token: Hashable, result: ShareHeartbeatResult, persist: str | None
    ) -> None:
        """Reply now, or once the group's record is durable (a failed write: COORDINATOR_NOT_AVAILABLE)."""
        if persist is None:
            fx.reply(token, result)
            return
        g = self.groups.get(persist)
        fx.record(ShareGroupRecord(persist, g.value() if g is not None else None))

        def after(ok: bool, now: int) -> Effects:
            more = Effects()
            more.reply(token, result if ok else ShareHeartbeatResult(int(E.COORDINATOR_NOT_AVAILABLE)))
            return more

        fx.after_persist = after

    def _error(self, code: ErrorCode, message: str | None = None) -> ShareHeartbeatResult:
        return ShareHeartbeatResult(int(code), message)

    def _heartbeat(
        self, req: ShareHeartbeatRequest, fx: Effects, now_ms: int
    ) -> tuple[ShareHeartbeatResult, bool]:
        # request validation (Kafka's throwIfShareGroupHeartbeatRequestIsInvalid)
        if not req.group_id:
            return self._error(E.INVALID_REQUEST, "GroupId can't be empty."), False
        if not req.member_id:
            return self._error(E.INVALID_REQUEST, "MemberId can't be empty."), False
        if req.member_epoch < -1:
            return self._error(E.INVALID_REQUEST, "MemberEpoch is invalid."), False
        if req.member_epoch == 0 and not req.subscribed_topic_names:
            return self._error(E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."), False
        if req.rack_id is not None and req.rack_id == "":
            return self._error(E.INVALID_REQUEST, "RackId can't be empty."), False
        if self.is_other_group(req.group_id):
            return self._error(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group."), False
        g = self.groups.get(req.group_id)
        if req.member_epoch == -1:
            return self._leave(g, req, fx, now_ms)
        created = g is None
        if g is None:
            if req.member_epoch != 0:
                return self._error(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found."), False
            g = self.groups[req.group_id] = ShareGroup(req.group_id)
        member = g.members.get(req.member_id)
        if member is None:
            if req.member_epoch != 0:
                return self._error(E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member."), False
            if len(g.members) >= self.config.max_size:
                if not g.members and g.group_epoch == 0:
                    del self.groups[req.group_id]
                return self._error(
                    E.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum size."
                ), False
        elif (
            req.member_epoch not in (0, member.member_epoch)
            # a lower epoch is the member's previous one only when our last response was lost
            and (req.member_epoch > member.member_epoch or req.member_epoch != member.previous_member_epoch)
        ):
            return self._error(
                E.FENCED_MEMBER_EPOCH,
                f"The share group member has epoch {req.member_epoch}, the group coordinator knows "
                f"{member.member_epoch}.",
            ), False
        changed = False
        state_before = g.state
        joined = member is None
        if member is None:
            member = g.members[req.member_id] = ShareGroupMember(req.member_id)
            changed = True
        bump = False
        cause = "new_member" if joined else None
        if req.subscribed_topic_names is not None:
            names = tuple(sorted(set(req.subscribed_topic_names)))
            if names != member.subscribed_topic_names:
                member.subscribed_topic_names = names
                bump = True
                cause = cause or "subscription_change"
        if req.rack_id is not None and req.rack_id != member.rack_id:
            member.rack_id = req.rack_id
            changed = True
        if (req.client_id, req.client_host) != (member.client_id, member.client_host):
            member.client_id, member.client_host = req.client_id, req.client_host
            changed = True
        subscribed = g.subscribed_names()
        topics = {n: req.topics[n] for n in subscribed if n in req.topics}
        new_hash = _metadata_hash(topics)
        g.topics = topics
        if new_hash != g.metadata_hash:
            g.metadata_hash = new_hash
            bump = True
            cause = cause or "metadata_change"
        if bump:
            g.group_epoch += 1
            changed = True
        if created:
            journal.event(fx, g, now_ms, "group_created")
        if joined:
            journal.member(fx, g, now_ms, "member_joined", member, "new_member")
        if g.group_epoch > g.assignment_epoch:
            self._compute_target(g)
            journal.target(fx, g, now_ms, cause)
            changed = True
        journal.state(fx, g, now_ms, state_before, cause)
        full = req.member_epoch == 0 or req.subscribed_topic_names is not None
        moved, assignment_changed = self._reconcile(g, member)
        changed = changed or moved
        cfg = self.config_for(g.group_id)
        fx.timer(ScheduleTimer(session_key(g.group_id, member.member_id), now_ms + cfg.session_timeout_ms))
        return (
            ShareHeartbeatResult(
                NONE,
                None,
                member.member_id,
                member.member_epoch,
                cfg.heartbeat_interval_ms,
                frozen_assignment(member.assignment) if (full or assignment_changed) else None,
            ),
            changed,
        )

    def _compute_target(self, g: ShareGroup) -> None:
        """Run the assignor (Kafka's updateTargetAssignment) and move the assignment epoch to the group's."""
        subs = {mid: m.subscribed_topic_names for mid, m in g.members.items()}
        g.target = assign(subs, g.topics, g.target)
        g.assignment_epoch = g.group_epoch
        for parts in g.target.values():
            for tid, ps in parts.items():
                g.initialized.setdefault(tid, set()).update(ps)

    def _reconcile(self, g: ShareGroup, m: ShareGroupMember) -> tuple[bool, bool]:
        """Kafka's ShareGroupAssignmentBuilder: no revocation, the member jumps to the target epoch with the
        target assignment restricted to its subscribed topics. (epoch moved, assignment changed)."""
        if m.member_epoch == g.assignment_epoch:
            return False, False
        ids = {g.topics[n][0] for n in m.subscribed_topic_names if n in g.topics}
        target = {t: set(ps) for t, ps in g.target.get(m.member_id, {}).items() if t in ids and ps}
        before = frozen_assignment(m.assignment)
        m.previous_member_epoch, m.member_epoch = m.member_epoch, g.assignment_epoch
        m.assignment = target
        return True, frozen_assignment(target) != before

    def _leave(
        self, g: ShareGroup | None, req: ShareHeartbeatRequest, fx: Effects, now_ms: int
    ) -> tuple[ShareHeartbeatResult, bool]:
        if g is None:
            return self._error(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found."), False
        if req.member_id not in g.members:
            return self._error(E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member."), False
        self._remove_member(g, req.member_id, fx, now_ms, "left")
        return ShareHeartbeatResult(NONE, None, req.member_id, -1, 0, None), True

    def _remove_member(self, g: ShareGroup, member_id: str, fx: Effects, now_ms: int, reason: str) -> None:
        """`reason` (journal): `left` or `session_timeout`."""
        state_before = g.state
        gone = g.members.pop(member_id)
        g.target.pop(member_id, None)
        fx.timer(CancelTimer(session_key(g.group_id, member_id)))
        g.group_epoch += 1
        journal.member(fx, g, now_ms, "member_removed", gone, reason)
        self._compute_target(g)
        journal.target(fx, g, now_ms, reason)
        journal.state(fx, g, now_ms, state_before, reason)

    # ---------------------------------------------------------------------------------------- timers

    def on_timer(self, key: tuple[str, ...], now_ms: int) -> Effects:
        """A member's session expired: remove it as a leave would (its acquired records stay locked until
        their locks expire, as in Kafka)."""
        fx = Effects()
        _, group_id, member_id = key
        g = self.groups.get(group_id)
        if g is not None and member_id in g.members:
            self._remove_member(g, member_id, fx, now_ms, "session_timeout")
            fx.record(ShareGroupRecord(group_id, g.value()))
        return fx

    # ----------------------------------------------------------------------------------- inspection

    def has(self, group_id: str) -> bool:
        return group_id in self.groups

    def is_other_group(self, group_id: str) -> bool:
        """Whether a group of another type (classic, consumer) owns this id (then it is no share group's)."""
        return self._registry.held_by_other_than(group_id, SHARE)

    def initialized(self, group_id: str) -> dict[str, tuple[int, ...]]:
        """The group's initialized share partitions (topic id hex -> partitions); empty for an unknown group
        (Kafka's initializedShareGroupPartitions, read by DescribeShareGroupOffsets with null Topics)."""
        g = self.groups.get(group_id)
        return {} if g is None else {t: tuple(sorted(ps)) for t, ps in g.initialized.items() if ps}

    def group(self, group_id: str) -> ShareGroup | None:
        return self.groups.get(group_id)

    def is_member(self, group_id: str, member_id: str) -> bool:
        g = self.groups.get(group_id)
        return g is not None and member_id in g.members

    def subscribed_names(self, group_id: str) -> set[str]:
        g = self.groups.get(group_id)
        return g.subscribed_names() if g is not None else set()

    def describe(self, ids: Iterable[str]) -> list[DescribedShareGroup]:
        out = []
        for gid in ids:
            g = self.groups.get(gid)
            if g is None:
                out.append(DescribedShareGroup(gid, int(E.GROUP_ID_NOT_FOUND), f"Group {gid} not found."))
                continue
            members = tuple(
                DescribedShareMember(
                    m.member_id,
                    m.rack_id,
                    m.member_epoch,
                    m.client_id,
                    m.client_host,
                    m.subscribed_topic_names,
                    frozen_assignment(m.assignment),
                )
                for m in g.members.values()
            )
            out.append(
                DescribedShareGroup(
                    gid, NONE, None, g.state, g.group_epoch, g.assignment_epoch, "simple", members
                )
            )
        return out

    # ------------------------------------------------------------------------------ delete, load

    def delete(self, group_id: str, fx: Effects, now_ms: int = 0) -> int:
        """DeleteGroups on a share group: NON_EMPTY_GROUP while it has members, else a tombstone (journal:
        `state_change` to Dead and `group_deleted`, reason `deleted`)."""
        g = self.groups.get(group_id)
        if g is None:
            return int(E.GROUP_ID_NOT_FOUND)
        if g.members:
            return int(E.NON_EMPTY_GROUP)
        del self.groups[group_id]
        fx.record(ShareGroupRecord(group_id, None))
        journal.event(fx, g, now_ms, "state_change", state_from=g.state, state_to="Dead", reason="deleted")
        journal.event(fx, g, now_ms, "group_deleted", reason="deleted")
        return NONE

    def replay(self, rec: ShareGroupRecord) -> None:
        if rec.value is None:
            self.groups.pop(rec.group_id, None)
        else:
            self.groups[rec.group_id] = ShareGroup.of(rec.group_id, rec.value)

    def on_loaded(self, fx: Effects, now_ms: int, group_ids: Iterable[str] | None = None) -> None:
        """Session timers are not stored: every loaded member gets a fresh session."""
        wanted = None if group_ids is None else set(group_ids)
        for g in self.groups.values():
            if wanted is not None and g.group_id not in wanted:
                continue
            for mid in g.members:
                timeout = self.config_for(g.group_id).session_timeout_ms
                fx.timer(ScheduleTimer(session_key(g.group_id, mid), now_ms + timeout))

    def unload(self, fx: Effects, group_ids: Iterable[str] | None = None) -> None:
        ids = list(self.groups) if group_ids is None else [i for i in group_ids if i in self.groups]
        for gid in ids:
            for mid in self.groups[gid].members:
                fx.timer(CancelTimer(session_key(gid, mid)))
            del self.groups[gid]


NONE = int(E.NONE)
