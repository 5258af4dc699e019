"""Worked examples: Kafka's documentation and unit tests for range/roundrobin, and hand-checked cases
for the other strategies and for the error paths."""

from __future__ import annotations

import pytest
from assignor_helpers import as_strings, check_valid, group, tps

from groupcoord.assignors import (
    AssignmentError,
    CopartitionMismatchError,
    CopartitionStrategy,
    GroupInput,
    InvalidInputError,
    Member,
    NotEnoughMembersError,
    RackAwareStrategy,
    RangeStrategy,
    ReplicatedStrategy,
    RoundRobinStrategy,
    StickyStrategy,
    TopicMetadata,
    TopicPartition,
)

# --- range / roundrobin: the examples in Kafka's Javadoc ---------------------------------------------


def test_range_javadoc_example() -> None:
    g = group({"t0": 3, "t1": 3}, {"C0": ["t0", "t1"], "C1": ["t0", "t1"]})
    assert as_strings(RangeStrategy().assign(g)) == {"C0": "t0-0, t0-1, t1-0, t1-1", "C1": "t0-2, t1-2"}


def test_roundrobin_javadoc_example_identical_subscriptions() -> None:
    g = group({"t0": 3, "t1": 3}, {"C0": ["t0", "t1"], "C1": ["t0", "t1"]})
    assert as_strings(RoundRobinStrategy().assign(g)) == {"C0": "t0-0, t0-2, t1-1", "C1": "t0-1, t1-0, t1-2"}


def test_roundrobin_javadoc_example_different_subscriptions() -> None:
    g = group({"t0": 1, "t1": 2, "t2": 3}, {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]})
    assert as_strings(RoundRobinStrategy().assign(g)) == {
        "C0": "t0-0",
        "C1": "t1-0",
        "C2": "t1-1, t2-0, t2-1, t2-2",
    }


def test_range_static_members_sort_before_dynamic_ones() -> None:
    # Java's testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions: the static member "consumer2"
    # (instance "instance1") sorts first although its member id sorts last.
    g = group(
        {"t1": 3, "t2": 3},
        {"consumer1": ["t1", "t2"], "consumer2": ["t1", "t2"]},
        consumer2={"instance_id": "instance1"},
    )
    assert as_strings(RangeStrategy().assign(g)) == {
        "consumer2": "t1-0, t1-1, t2-0, t2-1",
        "consumer1": "t1-2, t2-2",
    }


def test_roundrobin_orders_static_members_by_instance_id() -> None:
    # Java's RoundRobinAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions: instance ids decide.
    g = group(
        {"t1": 3, "t2": 3},
        {"consumer-b": ["t1", "t2"], "consumer-a": ["t1", "t2"]},
        **{"consumer-b": {"instance_id": "instance1"}, "consumer-a": {"instance_id": "instance2"}},
    )
    assert as_strings(RoundRobinStrategy().assign(g)) == {
        "consumer-b": "t1-0, t1-2, t2-1",
        "consumer-a": "t1-1, t2-0, t2-2",
    }


def test_member_order_is_java_utf16_order() -> None:
    # U+FF5E sorts after U+1F600 in Python (code points) but before it in Java (UTF-16 surrogates).
    g = group({"t": 2}, {"\U0001f600": ["t"], "\uff5e": ["t"]})
    assert as_strings(RangeStrategy().assign(g)) == {"\U0001f600": "t-0", "\uff5e": "t-1"}


# --- range: KIP-881 rack-aware cases from Kafka's RangeAssignorTest -----------------------------------

ALL_RACKS = ("a", "b", "c", "d", "e", "f")


def _java_rack_group(
    topics: dict[str, int],
    replication: int,
    broker_racks: list[str],
    consumer_racks: list[str | None],
    consumer_topics: list[list[str]],
) -> GroupInput:
    """Rebuilds AbstractPartitionAssignorTest.partitionsPerTopic: broker i is on broker_racks[i];
    partition i of the k-th topic (topics laid out in order) has replicas (i + j + offset) % brokers."""
    metas, offset = [], 0
    n_brokers = len(broker_racks)
    for name, n in topics.items():
        racks = [{broker_racks[(i + j + offset) % n_brokers] for j in range(replication)} for i in range(n)]
        metas.append(TopicMetadata.of(name, n, racks))
        offset += n
    members = [
        Member(f"consumer{i}", frozenset(ts), rack=r)
        for i, (ts, r) in enumerate(zip(consumer_topics, consumer_racks, strict=True))
    ]
    return GroupInput.build(metas, members)


def _mismatches(g: GroupInput, result: dict) -> int:
    n = 0
    for m, a in result.items():
        rack = g.members[m].rack
        if rack is not None:
            n += sum(1 for t, p in a.partitions if rack not in g.topics[t].racks_of(p))
    return n


ALL3 = ["t1", "t2", "t3"]
RACK_CASES = [
    # (topics, consumer topics, replication, broker racks, consumer racks, expected, mismatches)
    (
        {"t1": 6, "t2": 7, "t3": 2},
        [ALL3, ALL3, ALL3],
        1,
        3,
        3,
        ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"],
        0,
    ),
    (
        {"t1": 6, "t2": 7, "t3": 2},
        [ALL3, ALL3, ALL3],
        2,
        3,
        3,
        ["t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0", "t1-4, t1-5, t2-5, t2-6"],
        1,
    ),
    (
        {"t1": 6, "t2": 7, "t3": 2},
        [ALL3, ALL3, ALL3],
        3,
        2,
        3,
        ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"],
        4,
    ),
    (
        {"t1": 6, "t2": 7, "t3": 2},
        [ALL3, ALL3, ["t1", "t3"]],
        1,
        3,
        3,
        ["t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0", "t1-2, t1-5, t3-1"],
        2,
    ),
    (
        {"t1": 6, "t2": 7, "t3": 2},
        [ALL3, ALL3, ["t1", "t3"]],
        2,
        3,
        3,
        ["t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0", "t1-4, t1-5"],
        0,
    ),
    (
        {"t1": 5, "t2": 5, "t3": 5},
        [ALL3, ALL3, ALL3],
        1,
        3,
        3,
        ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"],
        10,
    ),
    (
        {"t1": 5, "t2": 5, "t3": 5},
        [ALL3, ALL3, ["t1", "t3"]],
        1,
        3,
        3,
        ["t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t3-4"],
        9,
    ),
    (
        {"t1": 5, "t2": 5, "t3": 5},
        [ALL3, ALL3, ["t1", "t3"]],
        2,
        3,
        3,
        ["t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3", "t1-1, t1-4, t3-1, t3-4"],
        0,
    ),
]


@pytest.mark.parametrize(
    ("topics", "consumer_topics", "rf", "n_broker_racks", "n_consumer_racks", "expected", "mismatch"),
    RACK_CASES,
)
def test_range_rack_aware_matches_kafka(
    topics: dict[str, int],
    consumer_topics: list[list[str]],
    rf: int,
    n_broker_racks: int,
    n_consumer_racks: int,
    expected: list[str],
    mismatch: int,
) -> None:
    broker_racks = [ALL_RACKS[i % 6] for i in range(n_broker_racks)]
    consumer_racks: list[str | None] = [ALL_RACKS[i % 6] for i in range(n_consumer_racks)]
    g = _java_rack_group(topics, rf, broker_racks, consumer_racks, consumer_topics)
    result = RangeStrategy().assign(g)
    assert as_strings(result) == {f"consumer{i}": e for i, e in enumerate(expected)}
    assert _mismatches(g, result) == mismatch


def test_range_rack_aware_keeps_copartitioned_topics_aligned() -> None:
    # RangeAssignorTest.testRackAwareAssignmentWithCoPartitioning, replication factor 1, 2 and 3 racks.
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    racks = ["a", "b", "b", "a"]
    subs = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    g = _java_rack_group(topics, 1, ["a", "b"], racks, subs)
    assert as_strings(RangeStrategy().assign(g)) == {
        "consumer0": "t1-0, t1-2, t1-4, t2-0, t2-2, t2-4",
        "consumer1": "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5",
        "consumer2": "t3-1, t4-1",
        "consumer3": "t3-0, t4-0",
    }
    everything = [["t1", "t2", "t3", "t4"]] * 4
    g = _java_rack_group(topics, 1, ["a", "b", "c"], racks, everything)
    result = RangeStrategy().assign(g)
    assert as_strings(result) == {
        "consumer0": "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0",
        "consumer1": "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
        "consumer2": "t1-2, t2-2",
        "consumer3": "t1-5, t2-5",
    }
    assert _mismatches(g, result) == 6


def test_range_ignores_racks_when_every_partition_is_on_every_rack() -> None:
    g = _java_rack_group({"t1": 5, "t2": 5, "t3": 5}, 3, ["a", "b", "c"], ["a", "b", "c"], [ALL3] * 3)
    assert as_strings(RangeStrategy().assign(g)) == {
        "consumer0": "t1-0, t1-1, t2-0, t2-1, t3-0, t3-1",
        "consumer1": "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
        "consumer2": "t1-4, t2-4, t3-4",
    }


# --- sticky -----------------------------------------------------------------------------------------


def test_sticky_javadoc_example_keeps_partitions_when_a_member_leaves() -> None:
    # Kafka's StickyAssignor Javadoc: C0 [t0p0, t1p1, t3p0], C1 [t0p1, t2p0, t3p1], C2 [t1p0, t2p1];
    # when C1 leaves, C0 and C2 keep everything and split C1's three partitions.
    topics = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
    before = {"C0": "t0-0, t1-1, t3-0", "C2": "t1-0, t2-1"}
    g = group(
        topics,
        {m: topics for m in before},
        **{m: {"owned": tuple(tps(s)), "generation": 1} for m, s in before.items()},
    )
    result = StickyStrategy().assign(g)
    check_valid(g, result)
    for m, s in before.items():
        assert set(tps(s)) <= set(result[m].partitions)
    assert sorted(len(a.partitions) for a in result.values()) == [4, 4]


def test_sticky_javadoc_example_unequal_subscriptions() -> None:
    g = group({"t0": 1, "t1": 2, "t2": 3}, {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]})
    assert as_strings(StickyStrategy().assign(g)) == {
        "C0": "t0-0",
        "C1": "t1-0, t1-1",
        "C2": "t2-0, t2-1, t2-2",
    }


def test_sticky_ignores_claims_from_an_older_generation() -> None:
    # C0 missed generation 3 and still claims t-0..t-2; C1 got them at generation 3. C1 keeps them.
    g = group(
        {"t": 4},
        {"C0": ["t"], "C1": ["t"]},
        C0={"owned": tuple(tps("t-0, t-1, t-2")), "generation": 2},
        C1={"owned": tuple(tps("t-1, t-2")), "generation": 3},
    )
    result = StickyStrategy().assign(g)
    assert set(tps("t-1, t-2")) == set(result["C1"].partitions)
    assert set(tps("t-0, t-3")) == set(result["C0"].partitions)


def test_sticky_same_generation_overlap_is_treated_as_unowned() -> None:
    g = group(
        {"t": 4},
        {"A": ["t"], "B": ["t"], "C": ["t"], "D": ["t"]},
        A={"owned": tuple(tps("t-0, t-1")), "generation": 5},
        B={"owned": tuple(tps("t-1")), "generation": 5},
    )
    result = StickyStrategy().assign(g)
    check_valid(g, result)
    assert TopicPartition("t", 0) in result["A"].partitions
    assert len(result["A"].partitions) == 1


def test_sticky_drops_claims_on_deleted_or_unsubscribed_topics() -> None:
    g = group(
        {"t": 2, "u": 2},
        {"A": ["t"], "B": ["t", "u"]},
        A={"owned": tuple(tps("u-0, gone-0, t-9")), "generation": 1},
        B={"generation": 1},
    )
    check_valid(g, StickyStrategy().assign(g))


# --- copartition ------------------------------------------------------------------------------------


def test_copartition_aligns_partition_numbers() -> None:
    g = group(
        {"orders": 4, "payments": 4, "audit": 3},
        {m: ["orders", "payments", "audit"] for m in ("A", "B", "C")},
    )
    result = CopartitionStrategy([["orders", "payments"]]).assign(g)
    check_valid(g, result)
    for a in result.values():
        by = a.by_topic()
        assert by.get("orders", []) == by.get("payments", [])


def test_copartition_rejects_different_partition_counts() -> None:
    g = group({"orders": 4, "payments": 6}, {"A": ["orders", "payments"]})
    with pytest.raises(CopartitionMismatchError, match="orders"):
        CopartitionStrategy([["orders", "payments"]]).assign(g)


def test_copartition_needs_a_member_subscribed_to_the_whole_set() -> None:
    g = group({"orders": 2, "payments": 2}, {"A": ["orders"], "B": ["payments"]})
    with pytest.raises(AssignmentError, match="no member subscribes"):
        CopartitionStrategy([["orders", "payments"]]).assign(g)


def test_copartition_rejects_overlapping_sets() -> None:
    with pytest.raises(InvalidInputError):
        CopartitionStrategy([["a", "b"], ["b", "c"]])


def test_copartition_keeps_units_with_their_owner() -> None:
    owned = {"A": "x-0, y-0, x-1, y-1", "B": "x-2, y-2"}
    g = group(
        {"x": 4, "y": 4},
        {"A": ["x", "y"], "B": ["x", "y"], "C": ["x", "y"]},
        **{m: {"owned": tuple(tps(s)), "generation": 7} for m, s in owned.items()},
    )
    result = CopartitionStrategy([["x", "y"]]).assign(g)
    assert set(tps("x-2, y-2")) == set(result["B"].partitions)
    # 4 units over 3 members: the extra unit goes to A, which owned the most, so nothing moves.
    assert set(tps(owned["A"])) == set(result["A"].partitions)
    assert set(tps("x-3, y-3")) == set(result["C"].partitions)


# --- replicated -------------------------------------------------------------------------------------


def test_replicated_gives_each_partition_to_k_members() -> None:
    g = group({"shard": 3}, {"i1": ["shard"], "i2": ["shard"], "i3": ["shard"]})
    result = ReplicatedStrategy(k=2).assign(g)
    check_valid(g, result, copies=2)
    assert sorted(len(a.partitions) for a in result.values()) == [2, 2, 2]


def test_replicated_needs_k_subscribers() -> None:
    g = group({"shard": 3}, {"i1": ["shard"], "i2": ["shard"]})
    with pytest.raises(NotEnoughMembersError, match="needs 3"):
        ReplicatedStrategy(k=3).assign(g)
    result = ReplicatedStrategy(k=3, strict=False).assign(g)
    check_valid(g, result, copies=2)


def test_replicated_rejects_k_below_one() -> None:
    with pytest.raises(InvalidInputError):
        ReplicatedStrategy(k=0)


# --- rack-aware -------------------------------------------------------------------------------------


def _racked(
    n_parts: int, part_racks: list[set[str]], member_racks: dict[str, str | None], **labels
) -> GroupInput:
    return GroupInput.build(
        [TopicMetadata.of("t", n_parts, part_racks)],
        [Member(m, frozenset({"t"}), rack=r, labels=labels.get(m, {})) for m, r in member_racks.items()],
    )


def test_rack_aware_places_every_partition_in_rack_when_possible() -> None:
    g = _racked(6, [{"a"}, {"b"}, {"c"}] * 2, {"m1": "a", "m2": "b", "m3": "c"})
    result = RackAwareStrategy().assign(g)
    assert as_strings(result) == {"m1": "t-0, t-3", "m2": "t-1, t-4", "m3": "t-2, t-5"}


def test_rack_aware_falls_back_to_balance() -> None:
    # Every replica lives in rack a, where only one of three members runs.
    g = _racked(6, [{"a"}] * 6, {"m1": "a", "m2": "b", "m3": None})
    result = RackAwareStrategy().assign(g)
    check_valid(g, result)
    assert sorted(len(a.partitions) for a in result.values()) == [2, 2, 2]


def test_rack_aware_reads_rack_label_from_user_data() -> None:
    g = _racked(4, [{"a"}, {"b"}] * 2, {"m1": None, "m2": None}, m1={"rack": "b"}, m2={"rack": "a"})
    assert as_strings(RackAwareStrategy().assign(g)) == {"m1": "t-1, t-3", "m2": "t-0, t-2"}


# --- model validation ---------------------------------------------------------------------------------


def test_model_rejects_impossible_inputs() -> None:
    with pytest.raises(InvalidInputError):
        TopicMetadata("t", (0, 0))
    with pytest.raises(InvalidInputError):
        TopicMetadata("t", (-1,))
    with pytest.raises(InvalidInputError):
        TopicMetadata.of("t", 2, [{"a"}])
    with pytest.raises(InvalidInputError):
        GroupInput.build([], [Member("a", frozenset()), Member("a", frozenset())])


def test_empty_group_and_unknown_topics() -> None:
    for strategy in (RangeStrategy(), RoundRobinStrategy(), StickyStrategy(), RackAwareStrategy()):
        assert strategy.assign(group({"t": 3}, {})) == {}
        result = strategy.assign(group({"t": 3}, {"A": ["nope"]}))
        assert result["A"].partitions == ()
