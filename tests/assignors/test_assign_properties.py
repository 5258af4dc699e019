"""Hypothesis properties for every strategy: validity, balance, determinism, stickiness."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from assignor_helpers import (
    balanced_in_kafka_sense,
    check_valid,
    groups,
    min_moves_equal,
    moves,
    spread,
    subscribed_partitions,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.assignors import (
    CopartitionStrategy,
    GroupInput,
    Member,
    RackAwareStrategy,
    RangeStrategy,
    ReplicatedStrategy,
    RoundRobinStrategy,
    StickyStrategy,
    TopicMetadata,
)

settings.register_profile("assignors", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("assignors")

SIMPLE = [RangeStrategy(), RoundRobinStrategy(), StickyStrategy(), RackAwareStrategy()]


def strategy_for(name: str, g: GroupInput):
    if name == "copartition":
        # Co-partition every pair of equally sized topics that exist (others stay ungrouped).
        by_size: dict[int, list[str]] = {}
        for t in g.subscribed_topics():
            by_size.setdefault(len(g.topics[t].partitions), []).append(t)
        return CopartitionStrategy([ts for ts in by_size.values() if len(ts) > 1])
    return {s.name: s for s in SIMPLE}[name]


ALL_NAMES = [s.name for s in SIMPLE] + ["copartition"]


@given(g=groups(racks=True, owned=True, static=True), name=st.sampled_from(ALL_NAMES))
def test_every_subscribed_partition_assigned_once_to_a_subscriber(g: GroupInput, name: str) -> None:
    strategy = strategy_for(name, g)
    try:
        result = strategy.assign(g)
    except Exception as exc:  # only copartition may refuse, and only for a member-less set
        assert name == "copartition" and "no member subscribes" in str(exc)
        return
    check_valid(g, result)


@given(
    g=groups(equal=True, racks=True, owned=True), name=st.sampled_from(["roundrobin", "sticky", "rack-aware"])
)
def test_equal_subscriptions_are_balanced(g: GroupInput, name: str) -> None:
    result = strategy_for(name, g).assign(g)
    assert spread(result) <= 1


@given(g=groups(equal=True))
def test_range_balances_each_topic(g: GroupInput) -> None:
    result = RangeStrategy().assign(g)
    for t in g.subscribed_topics():
        sizes = [len(a.by_topic().get(t, [])) for a in result.values()]
        assert max(sizes) - min(sizes) <= 1


@given(g=groups(equal=True, owned=True))
def test_copartition_is_balanced_in_units_and_aligned(g: GroupInput) -> None:
    strategy = strategy_for("copartition", g)
    result = strategy.assign(g)
    check_valid(g, result)
    units = []
    for a in result.values():
        by = a.by_topic()
        n = 0
        for s in strategy.sets:
            live = [t for t in s if t in g.subscribed_topics()]
            assert len({tuple(by.get(t, [])) for t in live}) <= 1, "set not aligned"
            n += len(by.get(live[0], [])) if live else 0
        grouped = {t for s in strategy.sets for t in s}
        n += sum(len(ps) for t, ps in by.items() if t not in grouped)
        units.append(n)
    assert max(units) - min(units) <= 1


@given(g=groups(owned=True), name=st.sampled_from(["sticky", "rack-aware", "copartition"]))
def test_unequal_subscriptions_are_balanced_in_kafka_sense(g: GroupInput, name: str) -> None:
    strategy = strategy_for(name, g)
    if name == "copartition" and strategy.sets:
        return  # units of different sizes: balance is per unit, covered above
    result = strategy.assign(g)
    assert balanced_in_kafka_sense(g, result)


@given(g=groups(equal=True), k=st.integers(1, 4))
def test_replicated_k_copies_balanced(g: GroupInput, k: int) -> None:
    k = min(k, len(g.members))
    result = ReplicatedStrategy(k).assign(g)
    check_valid(g, result, copies=k)
    assert spread(result) <= 1


@given(g=groups(), k=st.integers(1, 3))
def test_replicated_unequal_subscriptions(g: GroupInput, k: int) -> None:
    subscribers = [sum(1 for m in g.members.values() if t in m.topics) for t in g.subscribed_topics()]
    if subscribers and min(subscribers) < k:
        try:
            ReplicatedStrategy(k).assign(g)
        except Exception as exc:
            assert "needs" in str(exc)
        else:
            raise AssertionError("expected NotEnoughMembersError")
        return
    check_valid(g, ReplicatedStrategy(k).assign(g), copies=k)


@given(g=groups(racks=True, owned=True, static=True), name=st.sampled_from([*ALL_NAMES, "replicated"]))
def test_same_input_same_output_whatever_the_order(g: GroupInput, name: str) -> None:
    strategy = strategy_for(name, g) if name != "replicated" else ReplicatedStrategy(1)
    shuffled = GroupInput(dict(reversed(list(g.topics.items()))), dict(reversed(list(g.members.items()))))
    try:
        first = strategy.assign(g)
    except Exception:
        return
    assert strategy.assign(g) == first
    assert strategy.assign(shuffled) == first


def _rejoin(g: GroupInput, previous: dict, generation: int) -> dict[str, Member]:
    return {
        m: replace(member, owned=previous[m].partitions, generation=generation) if m in previous else member
        for m, member in g.members.items()
    }


@given(g=groups(equal=True, max_members=7), newcomer=st.text(alphabet="xyz", min_size=9, max_size=9))
def test_sticky_moves_the_minimum_on_join(g: GroupInput, newcomer: str) -> None:
    sticky = StickyStrategy()
    before = sticky.assign(g)
    topics = next(iter(g.members.values())).topics
    members = _rejoin(g, before, 1)
    members[newcomer] = Member(newcomer, topics)
    after = sticky.assign(GroupInput(g.topics, members))
    total = len(subscribed_partitions(g))
    assert spread(after) <= 1
    assert moves(before, after) == min_moves_equal([len(a.partitions) for a in before.values()] + [0], total)


@given(g=groups(equal=True), data=st.data())
def test_sticky_moves_the_minimum_on_leave(g: GroupInput, data: st.DataObject) -> None:
    if len(g.members) < 2:
        return
    sticky = StickyStrategy()
    before = sticky.assign(g)
    leaver = data.draw(st.sampled_from(sorted(g.members)))
    members = _rejoin(g, before, 4)
    del members[leaver]
    after = sticky.assign(GroupInput(g.topics, members))
    total = len(subscribed_partitions(g))
    remaining = [len(a.partitions) for m, a in before.items() if m != leaver]
    assert moves(before, after) == min_moves_equal(remaining, total)
    # The leaver's partitions went to members below their share, nobody else's moved.
    assert moves(before, after) == 0


@given(g=groups(owned=True))
def test_sticky_is_stable_when_nothing_changes(g: GroupInput) -> None:
    sticky = StickyStrategy()
    first = sticky.assign(g)
    second = sticky.assign(GroupInput(g.topics, _rejoin(g, first, 9)))
    assert moves(first, second) == 0


# --- differential: aiokafka's range/roundrobin are ports of Java's, without static members or racks ----


class _FakeCluster:
    def __init__(self, topics: dict[str, TopicMetadata]) -> None:
        self.topics = topics

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        t = self.topics.get(topic)
        return set(t.partitions) if t is not None else None


@given(g=groups(max_members=10))
def test_range_and_roundrobin_agree_with_aiokafkas_ports_of_java(g: GroupInput) -> None:
    cluster = _FakeCluster(dict(g.topics))
    members = {m: ConsumerProtocolMemberMetadata(0, sorted(x.topics), b"") for m, x in g.members.items()}
    for ours, theirs in (
        (RangeStrategy(), RangePartitionAssignor),
        (RoundRobinStrategy(), RoundRobinPartitionAssignor),
    ):
        expected = {
            m: sorted((t, p) for t, ps in a.assignment for p in ps)
            for m, a in theirs.assign(cluster, members).items()
        }
        got = {m: [tuple(x) for x in a.partitions] for m, a in ours.assign(g).items()}
        assert got == expected, ours.name


def test_core_does_not_import_aiokafka() -> None:
    code = "import sys, assignors; assert 'aiokafka' not in sys.modules, 'aiokafka imported'"
    subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib").Path(__file__).parents[2])
    )


@given(g=groups(equal=True, max_members=7), data=st.data())
def test_sticky_moves_the_minimum_from_any_ownership(g: GroupInput, data: st.DataObject) -> None:
    """Arbitrary previous ownership (unbalanced, partly unowned, as after several joins and leaves): the
    result is balanced and moves exactly the fewest owned partitions any balanced assignment must."""
    ids = sorted(g.members)
    parts = sorted(subscribed_partitions(g))
    owners = data.draw(st.lists(st.integers(-1, len(ids) - 1), min_size=len(parts), max_size=len(parts)))
    owned: dict[str, list] = {m: [] for m in ids}
    for x, o in zip(parts, owners, strict=True):
        if o >= 0:
            owned[ids[o]].append(x)
    members = {m: replace(g.members[m], owned=tuple(owned[m]), generation=2) for m in ids}
    result = StickyStrategy().assign(GroupInput(g.topics, members))
    before = {m: replace(result[m], partitions=tuple(owned[m])) for m in ids}
    assert spread(result) <= 1
    assert moves(before, result) == min_moves_equal([len(owned[m]) for m in ids], len(parts))


def _without_untrusted_claims(g: GroupInput) -> GroupInput:
    """Independent statement of the KIP-792 rule: ignore claims on partitions that do not exist or that
    the claimant does not subscribe to; drop every claim of a member older than the newest generation,
    and every partition claimed twice among the newest."""
    existing = subscribed_partitions(g)
    g = GroupInput(
        g.topics,
        {
            k: replace(m, owned=tuple(x for x in m.owned if x in existing and x.topic in m.topics))
            for k, m in g.members.items()
        },
    )
    newest = max(m.generation for m in g.members.values())
    fresh = {k: m for k, m in g.members.items() if m.generation == newest}
    claims = [x for m in fresh.values() for x in set(m.owned)]
    doubled = {x for x in claims if claims.count(x) > 1}
    members = {
        k: replace(m, owned=tuple(x for x in m.owned if x not in doubled) if k in fresh else ())
        for k, m in g.members.items()
    }
    return GroupInput(g.topics, members)


@given(g=groups(owned=True), name=st.sampled_from(["sticky", "rack-aware"]))
def test_stale_and_conflicting_claims_have_no_influence(g: GroupInput, name: str) -> None:
    strategy = strategy_for(name, g)
    assert strategy.assign(g) == strategy.assign(_without_untrusted_claims(g))
