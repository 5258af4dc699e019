"""Shared builders, hypothesis strategies and checks for the assignor tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from hypothesis import strategies as st

from groupcoord.assignors import GroupAssignment, GroupInput, Member, TopicMetadata, TopicPartition

TOPIC_NAMES = ("t0", "t1", "t2", "t3")
RACKS = ("a", "b", "c")


def tp(text: str) -> TopicPartition:
    """'t1-3' -> TopicPartition('t1', 3) (Kafka's TopicPartition.toString format)."""
    topic, _, p = text.rpartition("-")
    return TopicPartition(topic, int(p))


def tps(text: str) -> list[TopicPartition]:
    return sorted(tp(x.strip()) for x in text.split(",") if x.strip())


def as_strings(result: GroupAssignment) -> dict[str, str]:
    return {m: ", ".join(f"{t}-{p}" for t, p in sorted(a.partitions)) for m, a in result.items()}


def group(topics: dict[str, int], members: dict[str, Iterable[str]], **extra: dict) -> GroupInput:
    """Small literal groups: ``group({"t0": 3}, {"C0": ["t0"]})``; extra per-member Member kwargs."""
    return GroupInput.build(
        [TopicMetadata.of(t, n) for t, n in topics.items()],
        [Member(m, frozenset(ts), **extra.get(m, {})) for m, ts in members.items()],
    )


def subscribed_partitions(g: GroupInput) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t in g.subscribed_topics() for p in g.topics[t].partitions}


def check_valid(g: GroupInput, result: GroupAssignment, copies: int = 1) -> None:
    """Each subscribed partition is assigned exactly ``copies`` times, only to subscribers, never twice
    to one member; every member has an entry."""
    assert set(result) == set(g.members)
    counts: Counter[TopicPartition] = Counter()
    for m, a in result.items():
        assert len(set(a.partitions)) == len(a.partitions), f"{m} got a partition twice"
        for x in a.partitions:
            assert x.topic in g.members[m].topics, f"{m} got {x} without subscribing"
            counts[x] += 1
    expected = subscribed_partitions(g)
    assert set(counts) == expected
    assert all(c == copies for c in counts.values()), {k: c for k, c in counts.items() if c != copies}


def spread(result: GroupAssignment) -> int:
    sizes = [len(a.partitions) for a in result.values()]
    return max(sizes) - min(sizes) if sizes else 0


def balanced_in_kafka_sense(g: GroupInput, result: GroupAssignment) -> bool:
    """No partition could move to another subscriber that has at least two fewer partitions."""
    size = {m: len(a.partitions) for m, a in result.items()}
    for m, a in result.items():
        for x in a.partitions:
            for other, om in g.members.items():
                if x.topic in om.topics and size[other] <= size[m] - 2:
                    return False
    return True


def moves(before: GroupAssignment, after: GroupAssignment) -> int:
    """Partitions whose owner before is still a member and now owns it no longer."""
    owner_after = {x: m for m, a in after.items() for x in a.partitions}
    return sum(1 for m, a in before.items() if m in after for x in a.partitions if owner_after.get(x) != m)


def min_moves_equal(owned_counts: Sequence[int], total: int) -> int:
    """Fewest moves of owned partitions any balanced assignment needs (equal subscriptions)."""
    n = len(owned_counts)
    floor, extra = divmod(total, n)
    ranked = sorted(owned_counts, reverse=True)
    return sum(max(0, c - (floor + (1 if i < extra else 0))) for i, c in enumerate(ranked))


member_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789-_", min_size=1, max_size=8)


@st.composite
def topic_maps(draw: st.DrawFn, max_partitions: int = 12, racks: bool = False) -> list[TopicMetadata]:
    names = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=4, unique=True))
    out = []
    for name in names:
        n = draw(st.integers(0, max_partitions))
        rack_sets = None
        if racks:
            rack_sets = [draw(st.frozensets(st.sampled_from(RACKS), max_size=2)) for _ in range(n)]
        out.append(TopicMetadata.of(name, n, rack_sets))
    return out


@st.composite
def groups(
    draw: st.DrawFn,
    equal: bool = False,
    racks: bool = False,
    owned: bool = False,
    static: bool = False,
    max_members: int = 8,
) -> GroupInput:
    """Random groups. ``equal``: all members subscribe to the same topics; subscriptions may name a topic
    without metadata ('ghost'), which assignors must skip."""
    topics = draw(topic_maps(racks=racks))
    names = [t.name for t in topics] + ["ghost"]
    ids = draw(st.lists(member_ids, min_size=1, max_size=max_members, unique=True))
    common = draw(st.frozensets(st.sampled_from(names), min_size=1))
    universe = [TopicPartition(t.name, p) for t in topics for p in t.partitions]
    members = []
    for i, mid in enumerate(ids):
        subs = common if equal else draw(st.frozensets(st.sampled_from(names), min_size=1))
        kwargs: dict = {}
        if owned and universe:
            kwargs["owned"] = tuple(draw(st.lists(st.sampled_from(universe), max_size=6, unique=True)))
            kwargs["generation"] = draw(st.integers(-1, 3))
        if racks:
            kwargs["rack"] = draw(st.sampled_from((None, *RACKS)))
        if static and draw(st.booleans()):
            kwargs["instance_id"] = f"inst-{i}"
        members.append(Member(mid, subs, **kwargs))
    return GroupInput.build(topics, members)
