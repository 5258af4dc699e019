"""Assignment time per strategy for 1000 members x 10k partitions (run: python bench/assignors.py).

Goals from the issue: range/roundrobin <= 100 ms, sticky <= 1 s. Measures the pure core (what the group
leader spends inside ``assign``), best of a few runs. Scenarios: a fresh group (no owned partitions), and
for sticky-style strategies also a rebalance after one member left (everyone else owns a balanced share).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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

RACKS = ("a", "b", "c")


def build(members: int, partitions: int, topics: int) -> GroupInput:
    per_topic = partitions // topics
    names = [f"topic-{i:02d}" for i in range(topics)]
    metas = [
        TopicMetadata.of(t, per_topic, [{RACKS[p % 3], RACKS[(p + 1) % 3]} for p in range(per_topic)])
        for t in names
    ]
    ms = [
        Member(f"consumer-{i:04d}-{i * 7919 % 10007:05d}", frozenset(names), rack=RACKS[i % 3])
        for i in range(members)
    ]
    return GroupInput.build(metas, ms)


def without_racks(group: GroupInput) -> GroupInput:
    return GroupInput(
        {t: TopicMetadata(t, m.partitions) for t, m in group.topics.items()},
        {k: replace(m, rack=None) for k, m in group.members.items()},
    )


def mixed_subscriptions(group: GroupInput) -> GroupInput:
    """Every other member subscribes to only the first half of the topics (the general sticky path)."""
    names = sorted(group.topics)
    half = frozenset(names[: len(names) // 2])
    members = {k: replace(m, topics=half) if i % 2 else m for i, (k, m) in enumerate(group.members.items())}
    return GroupInput(group.topics, members)


def after_leave(group: GroupInput, strategy) -> GroupInput:
    """Everyone owns what ``strategy`` gave them at generation 1, then the first member leaves."""
    first = strategy.assign(group)
    members = {m: replace(x, owned=first[m].partitions, generation=1) for m, x in group.members.items()}
    members.pop(next(iter(members)))
    return GroupInput(group.topics, members)


def adapter_leader(group: GroupInput, adapter_cls: type) -> Callable[[], object]:
    """The whole aiokafka leader step: decode 1000 v3 subscriptions (each owning its current share),
    build topic metadata from a real ClusterMetadata, assign, encode 1000 assignments."""
    from aiokafka.cluster import ClusterMetadata
    from aiokafka.coordinator.protocol import ConsumerProtocol
    from aiokafka.protocol.metadata import MetadataResponse_v1

    rows = [(0, t, False, [(0, p, 0, [0], [0]) for p in m.partitions]) for t, m in group.topics.items()]
    cluster = ClusterMetadata()
    cluster.update_metadata(MetadataResponse_v1([(0, "127.0.0.1", 9092, None)], 0, rows))
    previous = RoundRobinStrategy().assign(group)
    members = {}
    for member_id, member in group.members.items():
        a = adapter_cls(full_subscriptions=True)
        a.owned, a.generation = previous[member_id].partitions, 1
        members[member_id] = ConsumerProtocol.METADATA.decode(a.metadata(member.topics))
    leader = adapter_cls()
    return lambda: leader.assign(cluster, members)


def timed(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    group = build(args.members, args.partitions, args.topics)
    names = sorted(group.topics)
    sets = [names[i : i + 2] for i in range(0, len(names) - 1, 2)]  # co-partition topics pairwise
    plain = without_racks(group)
    mixed = mixed_subscriptions(group)
    cases = [
        ("range", RangeStrategy(), "fresh", plain, 100),
        ("range", RangeStrategy(), "fresh, racks", group, 100),
        ("roundrobin", RoundRobinStrategy(), "fresh", plain, 100),
        ("roundrobin", RoundRobinStrategy(), "fresh, mixed", mixed, 100),
        ("sticky", StickyStrategy(), "fresh", plain, 1000),
        ("sticky", StickyStrategy(), "member left", plain, 1000),
        ("sticky", StickyStrategy(), "fresh, mixed", mixed, 1000),
        ("sticky", StickyStrategy(), "left, mixed", mixed, 1000),
        ("copartition", CopartitionStrategy(sets), "fresh", plain, None),
        ("copartition", CopartitionStrategy(sets), "member left", plain, None),
        ("replicated (k=3)", ReplicatedStrategy(3), "fresh", plain, None),
        ("rack-aware", RackAwareStrategy(), "fresh, racks", group, None),
        ("rack-aware", RackAwareStrategy(), "left, racks", group, None),
    ]
    print(
        f"{args.members} members x {args.partitions} partitions ({args.topics} topics), best of {args.repeat}"
    )
    print(f"{'strategy':<18} {'scenario':<14} {'ms':>9}  goal")
    failed = False
    for name, strategy, scenario, base, goal in cases:
        g = after_leave(base, strategy) if "left" in scenario else base
        ms = timed(lambda s=strategy, g=g: s.assign(g), args.repeat)
        verdict = "" if goal is None else (f"<= {goal} ms ok" if ms <= goal else f"<= {goal} ms MISSED")
        failed |= goal is not None and ms > goal
        print(f"{name:<18} {scenario:<14} {ms:9.1f}  {verdict}")
    from groupcoord.assignors.adapters import RangeAssignor, RoundRobinAssignor, StickyAssignor

    print("\nwhole aiokafka leader step (decode subscriptions + assign + encode assignments), no goal:")
    for adapter in (RangeAssignor, RoundRobinAssignor, StickyAssignor):
        ms = timed(adapter_leader(plain, adapter), args.repeat)
        print(f"{adapter.name:<18} {'adapter':<14} {ms:9.1f}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
