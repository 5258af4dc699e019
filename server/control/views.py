"""Plain data a test asserts on: a group as the coordinator holds it, read through the machine's public
methods (what DescribeGroups answers, plus generation and leader; for a KIP-848 consumer group or a KIP-932
share group, what ConsumerGroupDescribe / ShareGroupDescribe answer: member epochs and assignments)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

#: topic name -> sorted partitions
Partitions = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: bytes  # classic: the SyncGroup bytes; b"" for consumer and share groups (see `assigned`)
    #: consumer and share groups: the member's epoch, and its partitions by topic name (current, including
    #: partitions still being revoked, as ConsumerGroupDescribe shows them); None / {} for classic members
    member_epoch: int | None = None
    assigned: Partitions = field(default_factory=dict)
    #: consumer groups: the target assignment the member is reconciling towards
    target: Partitions = field(default_factory=dict)
    subscribed_topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupView:
    group_id: str
    # Kafka's names: classic Empty, PreparingRebalance, CompletingRebalance, Stable, Dead; consumer and share
    # groups Empty, Assigning, Reconciling, Stable, Dead
    state: str
    generation: int  # classic: the generation; consumer and share groups: the group epoch
    protocol_type: str  # "consumer" for KIP-848 consumer groups, "share" for share groups
    protocol: str  # classic: the chosen protocol; consumer and share groups: the assignor's name
    leader: str | None
    members: tuple[MemberView, ...]
    group_type: str = "classic"  # ListGroups' GroupType: classic, consumer, share
    assignment_epoch: int | None = None  # consumer and share groups

    def as_json(self) -> dict:
        out = asdict(self)
        out["members"] = [dict(asdict(m), assignment=m.assignment.hex()) for m in self.members]
        return out

    def matches(self, state: str | None, members: int | None, generation: int | None) -> bool:
        if state is not None and self.state.lower() != state.lower():
            return False
        if members is not None and len(self.members) != members:
            return False
        return generation is None or self.generation >= generation


def member_from_json(m: dict) -> MemberView:
    """The inverse of `GroupView.as_json` for one member (the HTTP facade's client side)."""

    def parts(d: dict | None) -> Partitions:
        return {t: tuple(ps) for t, ps in (d or {}).items()}

    return MemberView(
        m["member_id"],
        m["group_instance_id"],
        m["client_id"],
        m["client_host"],
        bytes.fromhex(m["assignment"]),
        m.get("member_epoch"),
        parts(m.get("assigned")),
        parts(m.get("target")),
        tuple(m.get("subscribed_topics") or ()),
    )
