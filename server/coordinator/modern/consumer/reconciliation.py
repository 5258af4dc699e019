"""Member reconciliation (Kafka's `CurrentAssignmentBuilder`, spec §3): moves one member towards its target.

Revocation always comes first: while the member still owns partitions it must give up, it gets nothing new
(state UNREVOKED_PARTITIONS, epoch unchanged). Once it reports them released it jumps to the target epoch,
taking every target partition that no other member still owns; those still owned elsewhere are withheld
(UNRELEASED_PARTITIONS) and picked up on a later heartbeat once freed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection

from groupcoord.server.coordinator.modern.consumer.member import (
    STABLE,
    UNKNOWN,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    Assignment,
    ConsumerGroupMember,
    Partitions,
)


class FencedMemberEpochError(Exception):
    """The member is in an unknown state and must abandon its partitions (FENCED_MEMBER_EPOCH)."""


def _owns_any(owned: Partitions | None, revoking: Assignment) -> bool:
    """Kafka's `ownsRevokedPartitions`: unknown ownership (null) counts as owning."""
    if owned is None:
        return True
    return any(p in revoking.get(t, {}) for t, ps in owned.items() for p in ps)


class CurrentAssignmentBuilder:
    def __init__(
        self,
        member: ConsumerGroupMember,
        target_epoch: int,
        target: Partitions,
        subscribed_topic_ids: Collection[uuid.UUID],
        partition_epoch: Callable[[uuid.UUID, int], int],
        owned: Partitions | None,
        subscription_changed: bool,
    ) -> None:
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.subscribed = subscribed_topic_ids
        self.partition_epoch = partition_epoch
        self.owned = owned
        self.subscription_changed = subscription_changed

    def build(self) -> ConsumerGroupMember:
        m = self.member
        if m.state == STABLE:
            if m.member_epoch != self.target_epoch:
                return self._next(m.member_epoch)
            if self.subscription_changed:
                return self._update_current(m.member_epoch)
            return m
        if m.state == UNREVOKED_PARTITIONS:
            if _owns_any(self.owned, m.pending_revocation):
                return self._update_current(m.member_epoch) if self.subscription_changed else m
            return self._next(m.member_epoch)
        if m.state == UNRELEASED_PARTITIONS:
            return self._next(m.member_epoch)
        if m.state == UNKNOWN:
            if self.owned is None or any(self.owned.values()):
                raise FencedMemberEpochError(
                    "The consumer group member is in a unknown state. "
                    "The member must abandon all its partitions and rejoin."
                )
            return self._next(self.target_epoch)
        return m

    def _update_current(self, epoch: int) -> ConsumerGroupMember:
        """The subscription changed but not the epoch: topics no longer subscribed go to pending revocation."""
        m = self.member
        if not self.subscribed and not m.pending_revocation:
            assigned: Assignment = {}
            pending: Assignment = m.assigned
        else:
            dropped = [t for t in m.assigned if t not in self.subscribed]
            if not dropped:
                return m
            assigned = {t: ps for t, ps in m.assigned.items() if t in self.subscribed}
            merged = {t: dict(ps) for t, ps in m.pending_revocation.items()}
            for t in dropped:
                merged.setdefault(t, {}).update(m.assigned[t])
            pending = merged
        if assigned == m.assigned:
            return m
        if pending and _owns_any(self.owned, pending):
            return m.replace(
                state=UNREVOKED_PARTITIONS, assigned=assigned, pending_revocation=pending
            ).with_epoch(epoch)
        return m.replace(assigned=assigned).with_epoch(epoch)

    def _next(self, epoch: int) -> ConsumerGroupMember:
        """Kafka's `computeNextAssignment`."""
        m = self.member
        unreleased = False
        assigned: dict[uuid.UUID, dict[int, int]] = {}
        revoking: dict[uuid.UUID, dict[int, int]] = {}
        adding: dict[uuid.UUID, set[int]] = {}
        for t in set(self.target) | set(m.assigned):
            target = self.target.get(t, frozenset()) if t in self.subscribed else frozenset()
            current = m.assigned.get(t, {})
            keep = {p: e for p, e in current.items() if p in target}
            revoke = {p: e for p, e in current.items() if p not in keep}
            own_pending = m.pending_revocation.get(t, {})
            add = set()
            for p in target:
                if p in keep:
                    continue
                if self.partition_epoch(t, p) != -1 and p not in own_pending:
                    unreleased = True
                else:
                    add.add(p)
            if keep:
                assigned[t] = keep
            if revoke:
                revoking[t] = revoke
            if add:
                adding[t] = add
        if revoking and _owns_any(self.owned, revoking):
            return m.replace(
                state=UNREVOKED_PARTITIONS, assigned=assigned, pending_revocation=revoking
            ).with_epoch(epoch)
        for t, ps in adding.items():
            topic = assigned.setdefault(t, {})
            for p in ps:
                topic[p] = self.target_epoch
        state = UNRELEASED_PARTITIONS if unreleased else STABLE
        return m.replace(state=state, assigned=assigned, pending_revocation={}).with_epoch(self.target_epoch)
