"""A consumer group (Kafka's `ConsumerGroup`, spec §1): epochs, members, the target assignment and the
indexes kept in step with the members (partition epochs, static members, subscribed names).

Pure data plus the rules that only read it (state, preferred assignor, commit and fetch validation).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.modern.consumer.member import (
    STABLE,
    ConsumerGroupMember,
    Partitions,
)

E = ErrorCode

EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE_STATE = "Stable"
DEAD = "Dead"

#: ConsumerGroupDescribe v1 MemberType of a member of this group (KIP-1099): 1 = consumer protocol
MEMBER_TYPE_CONSUMER = 1
#: ... and 0 = a classic-protocol member inside the consumer group (online migration)
MEMBER_TYPE_CLASSIC = 0


def _indexed(m: ConsumerGroupMember) -> tuple[object, ...]:
    """What the group's indexes are built from (`_index`): equal for two versions of a member, the second
    replaces the first without re-indexing."""
    return (
        m.subscribed_topic_names, m.subscribed_topic_regex, m.server_assignor, m.instance_id, m.member_epoch, m.assigned,
        m.pending_revocation,
    )  # fmt: skip


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.assignment_timestamp = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, Partitions] = {}  # member id -> target partitions
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self._partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        self._names: Counter[str] = Counter()  # subscribed topic name -> members subscribing
        self._assignors: Counter[str] = Counter()
        self._regexes: Counter[str] = Counter()  # non-empty subscribed regex -> members subscribing
        #: regex -> the topic names it resolved to (Kafka's `resolvedRegularExpressions`); None: not resolved
        #: since the group was created or loaded (resolutions are recomputed, not stored)
        self.resolved: dict[str, frozenset[str]] | None = None
        #: the state the journal last reported (its next state_change starts there; set again on load)
        self.journaled_state = EMPTY
        #: bumped by every (un)indexing of a member: a steady-state heartbeat re-indexes nothing (issue 28)
        self.index_changes = 0
        #: what `metadata_hash` was last computed from (the manager's `hash_basis`): while it still holds, the
        #: hash is known without recomputing it; None: unknown
        self.hash_basis: tuple[object, ...] | None = None

    # ------------------------------------------------------------------------------------------ state

    @property
    def state(self) -> str:
        """Kafka's `maybeUpdateGroupState`; the order of the checks matters."""
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        for m in self.members.values():
            if not (m.state == STABLE and m.member_epoch == self.assignment_epoch):
                return RECONCILING
        return STABLE_STATE

    def subscribed_names(self) -> set[str]:
        """Names subscribed by name, and the topics the group's regexes resolved to (Kafka's
        `subscribedTopicNames`)."""
        out = set(self._names)
        for regex in self._regexes:
            out |= (self.resolved or {}).get(regex, frozenset())
        return out

    def regexes(self) -> set[str]:
        return set(self._regexes)

    def regexes_with(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None) -> set[str]:
        """The group's regexes if `old` were replaced by `new`."""
        if not self._regexes and (new is None or not new.subscribed_topic_regex):
            return set()  # the usual case, on every heartbeat: no regex anywhere
        regexes = Counter(self._regexes)
        if old is not None and old.subscribed_topic_regex:
            regexes[old.subscribed_topic_regex] -= 1
        if new is not None and new.subscribed_topic_regex:
            regexes[new.subscribed_topic_regex] += 1
        return {r for r, c in regexes.items() if c > 0}

    def names_with(
        self,
        old: ConsumerGroupMember | None,
        new: ConsumerGroupMember | None,
        resolved: Mapping[str, frozenset[str]] | None = None,
    ) -> set[str]:
        """The group's subscribed names if `old` were replaced by `new` (Kafka's `computeSubscribedTopicNames`),
        the topics of `resolved` (the regexes in use then) included."""
        names = Counter(self._names)
        if old is not None:
            names.subtract(old.subscribed_topic_names)
        if new is not None:
            names.update(new.subscribed_topic_names)
        out = {n for n, c in names.items() if c > 0}
        for topics in (resolved or {}).values():
            out |= topics
        return out

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members name, ties to the lowest name; none named: `default`."""
        if not self._assignors:
            return default
        best = max(self._assignors.values())
        return min(n for n, c in self._assignors.items() if c == best)

    def preferred_assignor_with(
        self, old: ConsumerGroupMember | None, new: ConsumerGroupMember, default: str
    ) -> str:
        counts = Counter(self._assignors)
        if old is not None and old.server_assignor:
            counts[old.server_assignor] -= 1
        if new.server_assignor:
            counts[new.server_assignor] += 1
        counts = Counter({n: c for n, c in counts.items() if c > 0})
        if not counts:
            return default
        best = max(counts.values())
        return min(n for n, c in counts.items() if c == best)

    # --------------------------------------------------------------------------------------- members

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """Kafka's `currentPartitionEpoch`: the epoch of the member owning the partition, -1 if free."""
        return self._partition_epochs.get((topic_id, partition), -1)

    def update_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        if old is not None and _indexed(old) == _indexed(new):
            self.members[new.member_id] = new  # a steady-state heartbeat: nothing the indexes hold changed
            return
        self._unindex(old)
        self.members[new.member_id] = new
        self._index(new)

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        old = self.members.pop(member_id, None)
        self._unindex(old)
        regex = old.subscribed_topic_regex if old is not None else None
        if regex and self.resolved is not None and regex not in self._regexes:
            self.resolved = {r: ts for r, ts in self.resolved.items() if r != regex}
        return old

    def _index(self, m: ConsumerGroupMember) -> None:
        self.index_changes += 1
        self._names.update(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            self._regexes[m.subscribed_topic_regex] += 1
        if m.server_assignor:
            self._assignors[m.server_assignor] += 1
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    # two owners would be a bug (Kafka throws IllegalStateException); the later one wins
                    self._partition_epochs[(t, p)] = m.member_epoch

    def _unindex(self, m: ConsumerGroupMember | None) -> None:
        if m is None:
            return
        self.index_changes += 1
        self._names.subtract(m.subscribed_topic_names)
        self._names = +self._names
        if m.subscribed_topic_regex:
            self._regexes[m.subscribed_topic_regex] -= 1
            self._regexes = +self._regexes
        if m.server_assignor:
            self._assignors[m.server_assignor] -= 1
            self._assignors = +self._assignors
        if m.instance_id is not None and self.static_members.get(m.instance_id) == m.member_id:
            del self.static_members[m.instance_id]
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    if self._partition_epochs.get((t, p)) == m.member_epoch:
                        del self._partition_epochs[(t, p)]

    def all_classic_except(self, member_ids: Iterable[str]) -> bool:
        """Kafka's `allMembersUseClassicProtocolExcept`: every member not in `member_ids` is classic."""
        skip = set(member_ids)
        return all(m.uses_classic_protocol for mid, m in self.members.items() if mid not in skip)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        if instance_id is None:
            return None
        mid = self.static_members.get(instance_id)
        return self.members.get(mid) if mid is not None else None

    # ------------------------------------------------------------------------------- offset checks

    def validate_offset_commit(
        self,
        member_id: str,
        instance_id: str | None,
        member_epoch: int,
        transactional: bool,
        api_version: int,
        partitions: Iterable[tuple[uuid.UUID | None, int]],
    ) -> int:
        """Kafka's `ConsumerGroup.validateOffsetCommit` with its per-partition assignment-epoch check
        (spec §8.1): NONE or the error every partition of the request gets."""
        if member_epoch < 0 and not self.members:
            return int(E.NONE)
        if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
            return int(E.NONE)
        m = self.members.get(member_id)
        if m is None:
            return int(E.UNKNOWN_MEMBER_ID)
        classic = m.uses_classic_protocol
        # a classic member commits with its generation (= member epoch) and any version; its errors are
        # ILLEGAL_GENERATION where a consumer-protocol member's are STALE_MEMBER_EPOCH
        stale = int(E.ILLEGAL_GENERATION if classic else E.STALE_MEMBER_EPOCH)
        if not transactional and not classic and api_version < 9:
            return int(E.UNSUPPORTED_VERSION)
        if member_epoch == m.member_epoch:
            return int(E.NONE)
        if member_epoch > m.member_epoch:
            return stale
        for t, p in partitions:
            epoch = None
            if t is not None:
                epoch = m.assigned.get(t, {}).get(p)
                if epoch is None:
                    epoch = m.pending_revocation.get(t, {}).get(p)
            if epoch is None or member_epoch < epoch:
                return stale
        return int(E.NONE)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int:
        """Kafka's `ConsumerGroup.validateOffsetFetch` (spec §8.2)."""
        if member_id is None and member_epoch < 0:
            return int(E.NONE)
        m = self.members.get(member_id or "")
        if m is None:
            return int(E.UNKNOWN_MEMBER_ID)
        if member_epoch != m.member_epoch:
            return int(E.ILLEGAL_GENERATION if m.uses_classic_protocol else E.STALE_MEMBER_EPOCH)
        return int(E.NONE)
