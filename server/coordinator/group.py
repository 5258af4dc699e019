"""Classic group and member data, the legal state transitions and the protocol vote (spec §1, §2.7.1, §2.8.6).

This module holds data and the invariants that belong to one group (protocol counts, the instance-id map,
the count of parked JoinGroups, leader re-election on removal). It knows nothing about timers, replies or
the journal: `machine.GroupStateMachine` drives it and turns its changes into effects.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from enum import StrEnum

from groupcoord.server.coordinator.consumer import CONSUMER, subscription_topics
from groupcoord.server.coordinator.records import GroupMetadataValue, MemberMetadataValue


class GroupState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

#: Valid predecessor states of each target state (spec §1.5). Anything else is a programming error.
VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    EMPTY: frozenset({PREPARING}),
    PREPARING: frozenset({STABLE, COMPLETING, EMPTY}),
    COMPLETING: frozenset({PREPARING}),
    STABLE: frozenset({COMPLETING}),
    DEAD: frozenset({STABLE, PREPARING, COMPLETING, EMPTY, DEAD}),
}


class IllegalStateTransition(RuntimeError):
    """A transition that §1.5 forbids: a bug in the state machine, never a client error."""


class Member:
    """One member of a classic group (spec §1.2). Mutable: the group updates it in place."""

    __slots__ = (
        "assignment",
        "client_host",
        "client_id",
        "group_instance_id",
        "hb_deadline",
        "is_new",
        "join_token",
        "member_id",
        "protocol_type",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "sync_token",
    )

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str | None,
        protocols: tuple[tuple[str, bytes], ...],
        assignment: bytes = b"",
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self.join_token: Hashable | None = None  # the parked JoinGroup, if any
        self.sync_token: Hashable | None = None  # the parked SyncGroup, if any
        self.is_new = False
        self.hb_deadline: int | None = None  # deadline of the armed heartbeat timer; None: not armed

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_token is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_token is not None

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """Ordered, element-wise equality of (name, metadata): a reorder counts as a change."""
        return self.protocols == tuple(protocols)

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """Whether a firing session timer spares the member: new members never, else a parked Join/Sync does."""
        if self.is_new:
            return False
        return self.join_token is not None or self.sync_token is not None


class ClassicGroup:
    """A classic-protocol group (spec §1.1). Timer bookkeeping lives here too so stale timers can be told apart."""

    __slots__ = (
        "current_state_timestamp",
        "generation_id",
        "group_id",
        "initial_delay",
        "join_deadline",
        "leader_id",
        "members",
        "new_member_added",
        "num_awaiting_join",
        "pending_join_members",
        "pending_sync_members",
        "previous_state",
        "protocol_name",
        "protocol_type",
        "state",
        "static_members",
        "subscribed_topics",
        "supported_protocols",
        "sync_deadline",
        "sync_generation",
    )

    def __init__(self, group_id: str, now_ms: int, protocol_type: str | None = None) -> None:
        self.group_id = group_id
        self.state: GroupState = EMPTY
        self.previous_state: GroupState = DEAD
        self.current_state_timestamp: int | None = now_ms
        self.protocol_type = protocol_type
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_join_members: dict[str, int] = {}  # KIP-394 id -> deadline of its expiry timer
        self.num_awaiting_join = 0
        self.supported_protocols: Counter[str] = Counter()
        self.pending_sync_members: set[str] = set()
        self.subscribed_topics: set[str] | None = None
        self.new_member_added = False
        # join timer: deadline, and (delay, remaining) while it is the initial-delay timer (§2.8.3)
        self.join_deadline: int | None = None
        self.initial_delay: tuple[int, int] | None = None
        # sync timer: the generation it was armed for and its deadline
        self.sync_generation: int | None = None
        self.sync_deadline: int | None = None

    # ------------------------------------------------------------------------------------------ state

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return self.state in (STABLE, COMPLETING, EMPTY)

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise IllegalStateTransition(f"group {self.group_id}: {self.state} -> {target} is not allowed")
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now_ms

    # -------------------------------------------------------------------------------------- membership

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def add(self, member: Member, join_token: Hashable | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.supported_protocols.update(name for name, _ in member.protocols)
        self.set_join_token(member, join_token)
        self.pending_join_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Remove a member or pending id; returns the removed member (tokens untouched: the caller answers them)."""
        self.pending_join_members.pop(member_id, None)
        self.pending_sync_members.discard(member_id)
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self.supported_protocols.subtract(name for name, _ in member.protocols)
        self.supported_protocols += Counter()  # drop zero counts
        if member.join_token is not None:
            self.num_awaiting_join -= 1
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def set_join_token(self, member: Member, token: Hashable | None) -> Hashable | None:
        """Park (or clear, with None) the member's JoinGroup; returns the superseded token."""
        old = member.join_token
        if old is None and token is not None:
            self.num_awaiting_join += 1
        elif old is not None and token is None:
            self.num_awaiting_join -= 1
        member.join_token = token
        return old

    def update_member(
        self,
        member: Member,
        protocols: tuple[tuple[str, bytes], ...],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        join_token: Hashable | None,
    ) -> Hashable | None:
        """Replace protocols and timeouts and park (or clear) the JoinGroup; returns a superseded token."""
        self.supported_protocols.subtract(name for name, _ in member.protocols)
        member.protocols = tuple(protocols)
        self.supported_protocols.update(name for name, _ in member.protocols)
        self.supported_protocols += Counter()
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        return self.set_join_token(member, join_token)

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> tuple[Member, Member]:
        """Move a static member to a new member id (spec §2.6.1 step 2). Returns (old, new).

        The old member's parked tokens stay on the returned old object for the caller to fence. The
        pending-sync obligation moves to the new id (so a replacement in Stable does not cost a sync timeout).
        """
        old = self.members.pop(old_id)
        if old.join_token is not None:
            self.num_awaiting_join -= 1
        new = Member(
            new_id,
            old.group_instance_id,
            old.client_id,
            old.client_host,
            old.rebalance_timeout_ms,
            old.session_timeout_ms,
            old.protocol_type,
            old.protocols,
            old.assignment,
        )
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return old, new

    # --------------------------------------------------------------------------------------- protocols

    def supports_protocols(self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """Spec §2.7.1: an Empty group takes any non-empty type and list; otherwise the type must match and
        one of the member's protocols must be supported by every current member."""
        if self.state == EMPTY:
            return bool(protocol_type) and bool(protocols)
        if self.protocol_type != protocol_type:
            return False
        n = len(self.members)
        return any(self.supported_protocols.get(name, 0) == n for name, _ in protocols)

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """Vote (spec §2.8.6): each member picks its first candidate; most votes wins, ties by first vote."""
        if not self.members:
            raise ValueError(f"cannot select a protocol for empty group {self.group_id}")
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        return votes.most_common(1)[0][0]

    def compute_subscribed_topics(self) -> None:
        """Spec §6.7: union of the members' subscribed topics, consumer groups only; None when unknown."""
        if self.protocol_type != CONSUMER:
            self.subscribed_topics = None
            return
        topics: set[str] = set()
        for m in self.members.values():
            t = subscription_topics(m.metadata(self.protocol_name))
            if t is None:
                self.subscribed_topics = None
                return
            topics |= t
        self.subscribed_topics = topics

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.compute_subscribed_topics()
            self.transition_to(COMPLETING, now_ms)
        else:
            self.protocol_name = None
            self.compute_subscribed_topics()
            self.transition_to(EMPTY, now_ms)
        self.pending_sync_members.clear()

    # ---------------------------------------------------------------------------------------- records

    def to_record_value(self) -> GroupMetadataValue:
        return GroupMetadataValue(
            protocol_type=self.protocol_type,
            generation=self.generation_id,
            protocol=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp=self.current_state_timestamp
            if self.current_state_timestamp is not None
            else -1,
            members=tuple(
                MemberMetadataValue(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=m.session_timeout_ms,
                    subscription=m.metadata(self.protocol_name),
                    assignment=m.assignment,
                )
                for m in self.members.values()
            ),
        )

    @classmethod
    def from_record_value(cls, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        """Rebuild a loaded group: Stable at its generation with members, Empty without (see state-machine.md)."""
        g = cls(group_id, value.current_state_timestamp, value.protocol_type)
        g.current_state_timestamp = (
            value.current_state_timestamp if value.current_state_timestamp >= 0 else None
        )
        g.generation_id = value.generation
        g.protocol_name = value.protocol
        for mv in value.members:
            protocols = ((value.protocol, mv.subscription),) if value.protocol is not None else ()
            m = Member(
                mv.member_id,
                mv.group_instance_id,
                mv.client_id,
                mv.client_host,
                mv.rebalance_timeout_ms,
                mv.session_timeout_ms,
                value.protocol_type,
                protocols,
                mv.assignment,
            )
            g.members[m.member_id] = m
            if m.group_instance_id is not None:
                g.static_members[m.group_instance_id] = m.member_id
            g.supported_protocols.update(name for name, _ in protocols)
        if g.members:
            g.leader_id = value.leader if value.leader in g.members else next(iter(g.members))
            g.state = STABLE
            g.previous_state = COMPLETING
        g.compute_subscribed_topics()
        return g
