"""The pure KIP-429 step: partitions that change owner are withheld in the first rebalance."""

from __future__ import annotations

from groupcoord.assignors import CooperativeStickyStrategy, GroupInput, Member, TopicMetadata
from groupcoord.assignors.cooperative import withhold_moving
from groupcoord.assignors.sticky import StickyStrategy


def group_of(owned: dict[str, list[int]], generation: int = 5, partitions: int = 12) -> GroupInput:
    members = [
        Member(m, {"t"}, owned=[("t", p) for p in ps], generation=generation if ps else -1)
        for m, ps in owned.items()
    ]
    return GroupInput.build([TopicMetadata.of("t", partitions)], members)


def test_a_joining_member_gets_nothing_until_the_old_owners_have_revoked() -> None:
    group = group_of({"a": [0, 1, 2, 3, 4, 5], "b": [6, 7, 8, 9, 10, 11], "c": []})
    first = CooperativeStickyStrategy().assign(group)
    assert first["c"].partitions == ()
    kept_a, kept_b = set(first["a"].partitions), set(first["b"].partitions)
    assert len(kept_a) == len(kept_b) == 4  # each old member revokes exactly what must move
    # follow-up rebalance: the members now claim only what they kept; the withheld four go to c
    second = CooperativeStickyStrategy().assign(
        group_of({"a": [p for _, p in kept_a], "b": [p for _, p in kept_b], "c": []})
    )
    assert set(second["a"].partitions) == kept_a and set(second["b"].partitions) == kept_b
    assert len(second["c"].partitions) == 4


def test_unclaimed_partitions_are_handed_out_at_once() -> None:
    first = CooperativeStickyStrategy().assign(group_of({"a": [], "b": []}))
    assert len(first["a"].partitions) == len(first["b"].partitions) == 6


def test_a_stale_claim_also_holds_a_partition_back() -> None:
    # "b" missed a generation but may still be fetching partition 0: it is withheld from its new owner too
    group = GroupInput.build(
        [TopicMetadata.of("t", 2)],
        [
            Member("a", {"t"}, owned=[("t", 0)], generation=7),
            Member("b", {"t"}, owned=[("t", 0)], generation=6),
        ],
    )
    first, moving = withhold_moving(group, StickyStrategy().assign(group))
    assert ("t", 0) in moving
    assert all(("t", 0) not in a.partitions for a in first.values())


def test_a_consumer_is_cooperative_only_if_all_its_assignors_are() -> None:
    from groupcoord.assignors.adapters import RangeAssignor
    from groupcoord.assignors.adapters.cooperative import CooperativeStickyAssignor, is_cooperative

    assert is_cooperative([CooperativeStickyAssignor()])
    assert not is_cooperative([CooperativeStickyAssignor(), RangeAssignor()])  # Java's rule
    assert not is_cooperative([])


def test_cooperative_subscription_carries_owned_partitions_and_generation_like_java() -> None:
    import struct

    from groupcoord.assignors.adapters.cooperative import CooperativeStickyAssignor
    from groupcoord.assignors.model import TopicPartition
    from groupcoord.protocol.consumer import decode_subscription

    a = CooperativeStickyAssignor()
    a.owned, a.generation = (TopicPartition("t", 1), TopicPartition("t", 3)), 7
    sub = decode_subscription(a.metadata(["t"]))
    assert sub.version == 3 and sub.generation_id == 7
    assert [(tp.topic, tuple(tp.partitions)) for tp in sub.owned_partitions] == [("t", (1, 3))]
    assert sub.user_data == struct.pack(">i", 7)  # Java's CooperativeStickyAssignor user data
