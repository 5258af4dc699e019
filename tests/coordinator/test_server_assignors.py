"""The server-side assignors `uniform` and `range` (Kafka's UniformAssignor, RangeAssignor), pinned with
tables worked out from Kafka's algorithms (spec §4.3-§4.4) and checked for their invariants."""

from __future__ import annotations

import base64
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.server.coordinator.assignors import (
    BUILTIN,
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    RangeAssignor,
    UniformAssignor,
)

FOO = uuid.UUID(int=1)
BAR = uuid.UUID(int=2)


def spec(
    members: dict[str, tuple[set[uuid.UUID], dict[uuid.UUID, set[int]]]], counts: dict, inst=None
) -> GroupSpec:
    inst = inst or {}
    ms = tuple(
        MemberSpec(mid, inst.get(mid), None, frozenset(sub), {t: frozenset(p) for t, p in cur.items()})
        for mid, (sub, cur) in members.items()
    )
    homogeneous = len({m.subscribed for m in ms}) <= 1
    return GroupSpec(ms, homogeneous, counts)


def flat(a: dict[uuid.UUID, frozenset[int]]) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in a.items() for p in ps}


def test_builtin_names() -> None:
    assert list(BUILTIN) == ["uniform", "range"]


def test_range_example_from_the_spec() -> None:
    g = spec({m: ({FOO, BAR}, {}) for m in "cab"}, {FOO: 7, BAR: 7})
    out = RangeAssignor().assign(g)
    assert out["a"] == {FOO: frozenset({0, 1, 2}), BAR: frozenset({0, 1, 2})}
    assert out["b"] == {FOO: frozenset({3, 4}), BAR: frozenset({3, 4})}
    assert out["c"] == {FOO: frozenset({5, 6}), BAR: frozenset({5, 6})}


def test_range_sorts_static_members_first_by_instance_id() -> None:
    g = spec({m: ({FOO}, {}) for m in ("a", "b", "z")}, {FOO: 3}, inst={"z": "i0", "b": "i1"})
    out = RangeAssignor().assign(g)
    assert out == {"z": {FOO: frozenset({0})}, "b": {FOO: frozenset({1})}, "a": {FOO: frozenset({2})}}


def test_range_heterogeneous_only_subscribers_and_no_empty_entries() -> None:
    g = spec({"a": ({FOO}, {}), "b": ({FOO, BAR}, {}), "c": ({BAR}, {})}, {FOO: 1, BAR: 4})
    out = RangeAssignor().assign(g)
    assert out == {"a": {FOO: frozenset({0})}, "b": {BAR: frozenset({0, 1})}, "c": {BAR: frozenset({2, 3})}}


def test_missing_topic_is_an_assignor_error() -> None:
    for assignor in BUILTIN.values():
        with pytest.raises(PartitionAssignorError):
            assignor.assign(spec({"a": ({FOO}, {})}, {}))


def test_uniform_from_scratch_then_a_fourth_member() -> None:
    u = UniformAssignor()
    first = u.assign(spec({m: ({FOO}, {}) for m in "abc"}, {FOO: 6}))
    assert first == {
        "a": {FOO: frozenset({0, 1})},
        "b": {FOO: frozenset({2, 3})},
        "c": {FOO: frozenset({4, 5})},
    }
    cur = {m: ({FOO}, {t: set(p) for t, p in first[m].items()}) for m in "abc"}
    cur["d"] = ({FOO}, {})
    second = u.assign(spec(cur, {FOO: 6}))
    # the extra partitions stay with the first members who hold them; c gives its last partition to d
    assert second == {
        "a": {FOO: frozenset({0, 1})},
        "b": {FOO: frozenset({2, 3})},
        "c": {FOO: frozenset({4})},
        "d": {FOO: frozenset({5})},
    }


def test_uniform_drops_an_unsubscribed_topic_and_moves_the_extra_to_the_last_member() -> None:
    # a held 3 of 4 partitions of foo; after b joins, quotas are 2/2: a keeps 0,1; b takes 2 and 3
    g = spec({"a": ({FOO}, {FOO: {0, 1, 2}, BAR: {0}}), "b": ({FOO}, {})}, {FOO: 4, BAR: 1})
    assert UniformAssignor().assign(g) == {"a": {FOO: frozenset({0, 1})}, "b": {FOO: frozenset({2, 3})}}


def test_uniform_no_subscription_gives_nothing() -> None:
    assert UniformAssignor().assign(spec({"a": (set(), {}), "b": (set(), {})}, {})) == {"a": {}, "b": {}}


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 6),
    parts=st.lists(st.integers(0, 9), min_size=1, max_size=3),
    hetero=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_uniform_invariants(n: int, parts: list[int], hetero: bool, seed: int) -> None:
    topics = [uuid.UUID(int=i + 1) for i in range(len(parts))]
    counts = dict(zip(topics, parts, strict=True))
    members: dict[str, tuple[set[uuid.UUID], dict]] = {}
    for i in range(n):
        sub = {t for j, t in enumerate(topics) if not hetero or (seed >> (i + j)) % 2 == 0 or j == 0}
        members[f"m{i}"] = (sub, {})
    u = UniformAssignor()
    out = u.assign(spec(members, counts))
    assert out == u.assign(spec(members, counts))  # deterministic
    seen: list[tuple[uuid.UUID, int]] = [tp for a in out.values() for tp in flat(a)]
    assert len(seen) == len(set(seen))
    wanted = {(t, p) for sub, _ in members.values() for t in sub for p in range(counts[t])}
    assert set(seen) == wanted
    for mid, a in out.items():
        assert set(a) <= members[mid][0]
    loads = [len(flat(a)) for a in out.values()]
    if not hetero:
        assert max(loads) - min(loads) <= 1
        # stickiness: one more member, everyone keeps min(old, new quota) of its partitions
        cur = {m: (members[m][0], {t: set(p) for t, p in out[m].items()}) for m in members}
        cur["zz"] = (members["m0"][0], {})
        again = u.assign(spec(cur, counts))
        quota = sum(counts.values()) // (n + 1)
        for m in members:
            assert len(flat(again[m]) & flat(out[m])) >= min(len(flat(out[m])), quota)


# Kafka's UniformHomogeneousAssignmentBuilderTest (4.3) cases, with its topic ids (T1 sorts before T2 in both
# Kafka's base64 and our hex form) and members A, B, C in TreeMap order, as Kafka's tests build them.
T1 = uuid.UUID(bytes=base64.urlsafe_b64decode("T1-A4s3VTwiI5CTbEp6POw=="))
T2 = uuid.UUID(bytes=base64.urlsafe_b64decode("T2-B4s3VTwiI5YHbPp6YUe=="))


def test_kafka_case_unbalanced_previous_assignment() -> None:
    g = spec({"A": ({T1, T2}, {T1: {0, 1}, T2: {0, 1}}), "B": ({T1, T2}, {T1: {2}, T2: {2}})}, {T1: 3, T2: 3})
    assert UniformAssignor().assign(g) == {
        "A": {T1: frozenset({0, 1}), T2: frozenset({0})},
        "B": {T1: frozenset({2}), T2: frozenset({1, 2})},
    }


def test_kafka_case_one_member_added_after_two_members_two_topics() -> None:
    g = spec(
        {"A": ({T1, T2}, {T1: {0, 2}, T2: {0}}), "B": ({T1, T2}, {T1: {1}, T2: {1, 2}}), "C": ({T1, T2}, {})},
        {T1: 3, T2: 3},
    )
    assert UniformAssignor().assign(g) == {
        "A": {T1: frozenset({0, 2})},
        "B": {T1: frozenset({1}), T2: frozenset({1})},
        "C": {T2: frozenset({0, 2})},
    }


def test_kafka_case_one_subscription_removed() -> None:
    g = spec({"A": ({T2}, {T1: {0}, T2: {0}}), "B": ({T2}, {T1: {1}, T2: {1}})}, {T1: 2, T2: 2})
    assert UniformAssignor().assign(g) == {"A": {T2: frozenset({0})}, "B": {T2: frozenset({1})}}


def test_partitions_added_follow_our_topic_order() -> None:
    """Kafka's testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics hands out the new partitions in
    its HashSet order of topic ids (T2's first); we iterate topic ids in sorted order (T1's first), so the
    same quotas are filled with the other topic's partitions (docs/differences.md)."""
    g = spec({"A": ({T1, T2}, {T1: {0, 2}, T2: {0}}), "B": ({T1, T2}, {T1: {1}, T2: {1, 2}})}, {T1: 6, T2: 5})
    assert UniformAssignor().assign(g) == {
        "A": {T1: frozenset({0, 2, 3, 4}), T2: frozenset({0})},
        "B": {T1: frozenset({1, 5}), T2: frozenset({1, 2, 3, 4})},
    }


# Kafka's RangeAssignorTest (4.3) cases
T3 = uuid.UUID(bytes=base64.urlsafe_b64decode("T3-CU8fVTLCz5YMkLoDQsa=="))


def test_kafka_range_three_members_three_topics_different_subscriptions() -> None:
    g = spec({"A": ({T1, T2}, {}), "B": ({T3}, {}), "C": ({T2, T3}, {})}, {T1: 3, T2: 3, T3: 2})
    assert RangeAssignor().assign(g) == {
        "A": {T1: frozenset({0, 1, 2}), T2: frozenset({0, 1})},
        "B": {T3: frozenset({0})},
        "C": {T2: frozenset({2}), T3: frozenset({1})},
    }


def test_kafka_range_mixed_static_membership_survives_a_new_member_id() -> None:
    inst = {"A": "instanceA", "C": "instanceC"}
    first = RangeAssignor().assign(spec({m: ({T1}, {}) for m in "ACB"}, {T1: 5}, inst=inst))
    again = RangeAssignor().assign(
        spec(
            {m: ({T1}, {}) for m in ("memberA1", "C", "B")},
            {T1: 5},
            inst={"memberA1": "instanceA", "C": "instanceC"},
        )
    )
    assert (again["memberA1"], again["B"], again["C"]) == (first["A"], first["B"], first["C"])
    assert first == {"A": {T1: frozenset({0, 1})}, "C": {T1: frozenset({2, 3})}, "B": {T1: frozenset({4})}}
