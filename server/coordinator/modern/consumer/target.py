"""Target assignment (Kafka's `TargetAssignmentBuilder`, spec §4.2): the assignor's input built from the
members (one of them replaced by its update) and the topics, and the diff of its output against the target.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping

from groupcoord.server.coordinator.assignors import BUILTIN, GroupSpec, MemberSpec
from groupcoord.server.coordinator.modern.consumer.api import Partitions, TopicImage
from groupcoord.server.coordinator.modern.consumer.member import ConsumerGroupMember


def subscribed_topic_ids(names: Iterable[str], topics: TopicImage) -> frozenset[uuid.UUID]:
    """Kafka's `TopicIds`: the ids of the subscribed names that exist (a missing topic is simply absent)."""
    out = set()
    for n in names:
        t = topics.topic_by_name(n)
        if t is not None:
            out.add(t[0])
    return frozenset(out)


def metadata_hash(names: Iterable[str], topics: TopicImage) -> int:
    """A stable int64 over the subscribed topics' id, name and partition count (KIP-1101's role: any change
    of a subscribed topic changes the hash, and a changed hash bumps the group epoch)."""
    h = hashlib.blake2b(digest_size=8)
    found = False
    for n in sorted(set(names)):
        t = topics.topic_by_name(n)
        if t is None:
            continue
        found = True
        h.update(f"{n}\x00{t[0]}\x00{t[1]}\x01".encode())
    return int.from_bytes(h.digest(), "big", signed=True) if found else 0  # no topic: 0, as Kafka


def compute_target(
    assignor: str,
    members: Mapping[str, ConsumerGroupMember],
    current: Mapping[str, Partitions],
    topics: TopicImage,
    resolved: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, Partitions]:
    """The new target of every member (raises `PartitionAssignorError`); `resolved`: regex -> topic names."""
    specs = []
    counts: dict[uuid.UUID, int] = {}
    for mid in sorted(members):
        m = members[mid]
        names = m.subscribed_topics(resolved)
        ids = subscribed_topic_ids(names, topics)
        for n in names:
            t = topics.topic_by_name(n)
            if t is not None:
                counts[t[0]] = t[1]
        specs.append(MemberSpec(mid, m.instance_id, m.rack_id, ids, current.get(mid, {})))
    homogeneous = len({s.subscribed for s in specs}) <= 1
    out = BUILTIN[assignor].assign(GroupSpec(tuple(specs), homogeneous, counts))
    return {mid: {t: ps for t, ps in out.get(mid, {}).items() if ps} for mid in members}
