"""``range``: Kafka's RangeAssignor, including KIP-881 rack-aware range.

Output matches Java's ``org.apache.kafka.clients.consumer.RangeAssignor`` for the same input so that a
group mixing Java and Python consumers gets the same assignment whichever member is leader. Behaviour
mirrored from Java: members are ordered static-first (``MemberInfo``), each topic is split into contiguous
ranges with the first ``n % c`` members getting one extra partition; when some members have a rack that
some partition replica shares (and racks are not uniform), a rack-matching pass runs first, keeping
co-partitioned topics (same subscribers, same partition count) aligned, and the plain range pass assigns
the rest.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from groupcoord.assignors.model import GroupAssignment, GroupInput, TopicMetadata, TopicPartition, finish
from groupcoord.assignors.ordering import sorted_members


class _TopicState:
    """Per-topic bookkeeping equivalent to Java's ``TopicAssignmentState``."""

    def __init__(self, topic: TopicMetadata, consumers: list[str], consumer_racks: dict[str, str]) -> None:
        self.topic = topic.name
        self.consumers = consumers
        self.consumer_rack = {c: consumer_racks.get(c) for c in consumers}
        self.partitions = list(topic.partitions)
        self.unassigned: dict[TopicPartition, None] = dict.fromkeys(
            TopicPartition(topic.name, p) for p in topic.partitions
        )
        self.assigned_count = dict.fromkeys(consumers, 0)
        n, c = len(self.partitions), len(consumers)
        self.per_consumer = n // c if c else 0
        self.extra_left = n % c if c else 0

        all_consumer_racks = {r for r in self.consumer_rack.values() if r is not None}
        self.partition_racks: dict[int, frozenset[str]] = {}
        all_partition_racks: set[str] = set()
        if all_consumer_racks:
            for p in self.partitions:
                racks = topic.racks_of(p)
                self.partition_racks[p] = racks
                all_partition_racks.update(racks)
        self.needs_rack_aware = bool(all_consumer_racks & all_partition_racks) and not all(
            r == all_partition_racks for r in self.partition_racks.values()
        )

    def group_key(self) -> tuple[tuple[str, str | None], ...]:
        return tuple(self.consumer_rack.items())

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumer_rack[consumer]
        return rack is None or rack in self.partition_racks.get(tp.partition, frozenset())

    def max_assignable(self, consumer: str) -> int:
        cap = self.per_consumer + (1 if self.extra_left > 0 else 0)
        return max(0, cap - self.assigned_count[consumer])

    def on_assigned(self, consumer: str, tps: list[TopicPartition]) -> None:
        self.assigned_count[consumer] += len(tps)
        if self.assigned_count[consumer] > self.per_consumer:
            self.extra_left -= 1
        for tp in tps:
            del self.unassigned[tp]


def _assign(consumer: str, tps: list[TopicPartition], state: _TopicState, out: dict[str, list]) -> None:
    out[consumer].extend(tps)
    state.on_assigned(consumer, tps)


def _assign_ranges(
    state: _TopicState,
    may_assign: Callable[[str, TopicPartition], bool] | None,
    out: dict[str, list[TopicPartition]],
) -> None:
    if may_assign is None and len(state.unassigned) == len(state.partitions):
        # Fast path (no rack pass touched this topic): the classic contiguous split.
        tps = list(state.unassigned)
        per, extra = state.per_consumer, state.extra_left
        for i, consumer in enumerate(state.consumers):
            start = per * i + min(i, extra)
            out[consumer].extend(tps[start : start + per + (1 if i < extra else 0)])
        state.unassigned.clear()
        return
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        chosen: list[TopicPartition] = []
        if limit > 0:
            for tp in state.unassigned:
                if may_assign is None or may_assign(consumer, tp):
                    chosen.append(tp)
                    if len(chosen) == limit:
                        break
        if chosen:
            _assign(consumer, chosen, state, out)


def _assign_copartitioned_with_racks(
    consumers: list[str], num_partitions: int, states: list[_TopicState], out: dict[str, list]
) -> None:
    remaining = list(consumers)
    for p in range(num_partitions):
        match = next(
            (
                c
                for c in remaining
                if all(
                    s.racks_match(c, TopicPartition(s.topic, p)) and s.max_assignable(c) > 0 for s in states
                )
            ),
            None,
        )
        if match is None:
            continue
        for s in states:
            _assign(match, [TopicPartition(s.topic, p)], s, out)
        if not any(s.max_assignable(match) > 0 for s in states):
            remaining.remove(match)
            if not remaining:
                break


def _assign_with_rack_matching(states: list[_TopicState], out: dict[str, list]) -> None:
    by_consumers: dict[tuple, list[_TopicState]] = defaultdict(list)
    for s in states:
        by_consumers[s.group_key()].append(s)
    for group in by_consumers.values():
        by_count: dict[int, list[_TopicState]] = defaultdict(list)
        for s in group:
            by_count[len(s.partition_racks)].append(s)
        for num_partitions, co in by_count.items():
            if len(co) > 1:
                _assign_copartitioned_with_racks(co[0].consumers, num_partitions, co, out)
            elif co[0].needs_rack_aware:
                _assign_ranges(co[0], co[0].racks_match, out)


class RangeStrategy:
    """Kafka's ``range`` strategy (see module docstring)."""

    name = "range"

    def assign(self, group: GroupInput) -> GroupAssignment:
        ordered = sorted_members(group.members.values())
        racks = {m.member_id: m.rack for m in ordered if m.rack}
        states = []
        for topic in group.subscribed_topics():
            consumers = [m.member_id for m in ordered if topic in m.topics]
            states.append(_TopicState(group.topics[topic], consumers, racks))
        out: dict[str, list[TopicPartition]] = {m: [] for m in group.members}
        if any(s.needs_rack_aware for s in states):
            _assign_with_rack_matching(states, out)
        for s in states:
            _assign_ranges(s, None, out)
        return finish(out, group.members)
