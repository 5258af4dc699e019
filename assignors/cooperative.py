"""KIP-429 incremental cooperative rebalancing: the leader withholds partitions that change owner.

In the cooperative protocol a member keeps consuming what it owns while the group rebalances. So the
leader may not hand a partition to a new owner in the same rebalance in which its old owner still holds
it: the first rebalance only *revokes* (the partition is left out of both members' assignments), the old
owner stops consuming it and rejoins, and the follow-up rebalance, in which nobody claims it any more,
gives it to its new owner. Java's ``CooperativeStickyAssignor`` (``adjustAssignment``) does the same.

Pure: works on the core's :class:`GroupInput` / :class:`GroupAssignment`, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.assignors.model import GroupAssignment, GroupInput, MemberAssignment, TopicPartition
from groupcoord.assignors.sticky import StickyStrategy


def claimed_by(group: GroupInput) -> dict[TopicPartition, set[str]]:
    """Every member that says it owns each partition, stale claims included.

    A stale claimer (older generation) may still be fetching the partition until it learns otherwise, so
    for withholding purposes every claim counts; only the sticky balance itself trusts the newest ones.
    """
    out: dict[TopicPartition, set[str]] = {}
    for member in group.members.values():
        for tp in member.owned:
            out.setdefault(tp, set()).add(member.member_id)
    return out


def withhold_moving(
    group: GroupInput, target: GroupAssignment
) -> tuple[GroupAssignment, set[TopicPartition]]:
    """``target`` minus every partition whose new owner is not (the only) one claiming it.

    Returns the first-round assignment and the set of withheld (moving) partitions. A partition that no
    member claims is handed out at once; one that its new owner already claims alone stays where it is.
    """
    claims = claimed_by(group)
    withheld: set[TopicPartition] = set()
    out: GroupAssignment = {}
    for member_id, assignment in target.items():
        keep: list[TopicPartition] = []
        for tp in assignment.partitions:
            owners = claims.get(tp, set())
            if owners and owners != {member_id}:
                withheld.add(tp)
            else:
                keep.append(tp)
        out[member_id] = MemberAssignment(tuple(keep), assignment.user_data)
    return out, withheld


@dataclass(frozen=True, slots=True)
class CooperativeStickyStrategy:
    """``cooperative-sticky``: the sticky target, minus partitions still owned elsewhere (first round)."""

    name = "cooperative-sticky"

    def assign(self, group: GroupInput) -> GroupAssignment:
        first_round, _moving = withhold_moving(group, StickyStrategy().assign(group))
        return first_round
