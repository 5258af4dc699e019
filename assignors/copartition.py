"""``copartition``: partition p of every topic in a co-partitioned set goes to the same member.

This is what a stream-stream join needs (records with the same key land in the same partition number
of both topics, so one consumer must read both). Each set becomes one "unit" per partition index; units
and the partitions of ungrouped topics are balanced and kept sticky by the shared engine, then units are
expanded back to partitions. Only members subscribed to every (existing) topic of a set may take its
units. Topics of a set that do not exist yet are ignored until they appear (which triggers a rebalance).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from groupcoord.assignors.balance import sticky_balance
from groupcoord.assignors.model import (
    AssignmentError,
    CopartitionMismatchError,
    GroupAssignment,
    GroupInput,
    InvalidInputError,
    TopicPartition,
    finish,
)
from groupcoord.assignors.ordering import sorted_members
from groupcoord.assignors.ownership import trusted_owned
from groupcoord.assignors.sticky import partition_validator


class CopartitionStrategy:
    """Co-partitioned assignment; ``sets`` lists groups of topic names that must stay aligned."""

    name = "copartition"

    def __init__(self, sets: Iterable[Iterable[str]]) -> None:
        self.sets: tuple[tuple[str, ...], ...] = tuple(tuple(sorted(set(s))) for s in sets)
        seen: dict[str, int] = {}
        for i, s in enumerate(self.sets):
            if not s:
                raise InvalidInputError("empty co-partitioned set")
            for topic in s:
                if topic in seen:
                    raise InvalidInputError(f"topic {topic!r} is in two co-partitioned sets; merge them")
                seen[topic] = i

    def assign(self, group: GroupInput) -> GroupAssignment:
        ordered = [m.member_id for m in sorted_members(group.members.values())]
        topics = group.subscribed_topics()
        present = set(topics)
        grouped: set[str] = set()
        items: dict[str, list[TopicPartition]] = {}
        eligible: dict[str, list[str]] = {}
        expand: dict[str, tuple[str, ...]] = {}  # unit key -> the real topics it stands for

        for i, s in enumerate(self.sets):
            live = tuple(t for t in s if t in present)
            if not live:
                continue
            counts = {t: len(group.topics[t].partitions) for t in live}
            if len(set(counts.values())) > 1:
                raise CopartitionMismatchError(f"co-partitioned topics differ in partition count: {counts}")
            key = f"\x00copartition-{i}"
            grouped.update(live)
            expand[key] = live
            items[key] = [TopicPartition(key, p) for p in group.topics[live[0]].partitions]
            eligible[key] = [m for m in ordered if all(t in group.members[m].topics for t in live)]
            if not eligible[key]:
                raise AssignmentError(
                    f"no member subscribes to all of the co-partitioned topics {list(live)}"
                )
        for t in topics:
            if t not in grouped:
                items[t] = [TopicPartition(t, p) for p in group.topics[t].partitions]
                eligible[t] = [m for m in ordered if t in group.members[m].topics]

        owned = self._unit_claims(group, expand, eligible)
        raw = sticky_balance(items, eligible, ordered, owned)
        out: dict[str, list[TopicPartition]] = {}
        for m, units in raw.items():
            parts: list[TopicPartition] = []
            for u in units:
                parts.extend(TopicPartition(t, u.partition) for t in expand.get(u.topic, (u.topic,)))
            out[m] = parts
        return finish(out, group.members)

    @staticmethod
    def _unit_claims(
        group: GroupInput, expand: dict[str, tuple[str, ...]], eligible: dict[str, Sequence[str]]
    ) -> dict[str, list[TopicPartition]]:
        """Owned partitions -> owned units; a unit claimed by two members (via different topics) is unowned."""
        trusted = trusted_owned(group.members.values(), partition_validator(group))
        unit_of = {t: key for key, topics in expand.items() for t in topics}
        allowed = {key: set(ms) for key, ms in eligible.items()}
        owner: dict[TopicPartition, str | None] = {}
        for m, tps in trusted.items():
            for tp in tps:
                key = unit_of.get(tp.topic, tp.topic)
                if m not in allowed.get(key, ()):
                    continue
                unit = TopicPartition(key, tp.partition)
                prev = owner.get(unit, m)
                owner[unit] = m if prev == m else None
        claims: dict[str, list[TopicPartition]] = {m: [] for m in group.members}
        for unit, m in sorted(owner.items()):
            if m is not None:
                claims[m].append(unit)
        return claims
