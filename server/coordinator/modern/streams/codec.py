"""Streams groups to and from their records (Kafka's `StreamsCoordinatorRecordHelpers` and the streams half
of `GroupMetadataManager.replay`, spec §15). Values are JSON-ready dicts with Kafka's field names in snake
case. Replay is order-independent between keys; tombstones delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groupcoord.server.coordinator.modern.streams.api import (
    CopartitionGroup,
    Subtopology,
    TopicInfo,
    Topology,
)
from groupcoord.server.coordinator.modern.streams.group import (
    StreamsGroup,
    StreamsGroupMember,
    TaskTuple,
)
from groupcoord.server.coordinator.records import (
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT as CURRENT,
)
from groupcoord.server.coordinator.records import (
    STREAMS_GROUP_MEMBER_METADATA as MEMBER,
)
from groupcoord.server.coordinator.records import (
    STREAMS_GROUP_METADATA as METADATA,
)
from groupcoord.server.coordinator.records import (
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER as TARGET_MEMBER,
)
from groupcoord.server.coordinator.records import (
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA as TARGET_METADATA,
)
from groupcoord.server.coordinator.records import (
    STREAMS_GROUP_TOPOLOGY as TOPOLOGY,
)
from groupcoord.server.coordinator.records import StreamsGroupRecord


def _tasks(t: Mapping[str, frozenset[int]]) -> list[list[Any]]:
    return [[s, sorted(ps)] for s, ps in sorted(t.items()) if ps]


def _untasks(v: list[list[Any]]) -> dict[str, frozenset[int]]:
    return {s: frozenset(ps) for s, ps in v}


def _tuple(t: TaskTuple) -> dict[str, Any]:
    return {"active": _tasks(t.active), "standby": _tasks(t.standby), "warmup": _tasks(t.warmup)}


def _untuple(d: Mapping[str, Any]) -> TaskTuple:
    return TaskTuple(_untasks(d["active"]), _untasks(d["standby"]), _untasks(d["warmup"]))


def group_metadata(g: StreamsGroup) -> StreamsGroupRecord:
    value = {
        "epoch": g.group_epoch,
        "metadata_hash": g.metadata_hash,
        "validated_topology_epoch": g.validated_topology_epoch,
        "last_assignment_configs": [list(kv) for kv in g.last_assignment_configs],
    }
    return StreamsGroupRecord(METADATA, g.group_id, "", value)


def topology(group_id: str, t: Topology) -> StreamsGroupRecord:
    def info(i: TopicInfo) -> dict[str, Any]:
        return {"name": i.name, "partitions": i.partitions, "replication_factor": i.replication_factor,
                "topic_configs": [list(kv) for kv in i.topic_configs]}  # fmt: skip

    subs = [
        {
            "subtopology_id": s.subtopology_id,
            "source_topics": list(s.source_topics),
            "source_topic_regex": list(s.source_topic_regex),
            "state_changelog_topics": [info(i) for i in s.state_changelog_topics],
            "repartition_sink_topics": list(s.repartition_sink_topics),
            "repartition_source_topics": [info(i) for i in s.repartition_source_topics],
            "copartition_groups": [
                [list(c.source_topics), list(c.source_topic_regex), list(c.repartition_source_topics)]
                for c in s.copartition_groups
            ],
        }
        for s in t.subtopologies
    ]
    return StreamsGroupRecord(TOPOLOGY, group_id, "", {"epoch": t.epoch, "subtopologies": subs})


def _untopology(v: Mapping[str, Any]) -> Topology:
    def info(d: Mapping[str, Any]) -> TopicInfo:
        return TopicInfo(d["name"], d["partitions"], d["replication_factor"],
                         tuple((k, x) for k, x in d["topic_configs"]))  # fmt: skip

    subs = tuple(
        Subtopology(
            s["subtopology_id"],
            tuple(s["source_topics"]),
            tuple(s["source_topic_regex"]),
            tuple(info(i) for i in s["state_changelog_topics"]),
            tuple(s["repartition_sink_topics"]),
            tuple(info(i) for i in s["repartition_source_topics"]),
            tuple(CopartitionGroup(tuple(a), tuple(b), tuple(c)) for a, b, c in s["copartition_groups"]),
        )
        for s in v["subtopologies"]
    )
    return Topology(v["epoch"], subs)


def member_metadata(group_id: str, m: StreamsGroupMember) -> StreamsGroupRecord:
    value = {
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "topology_epoch": m.topology_epoch,
        "process_id": m.process_id,
        "user_endpoint": None if m.user_endpoint is None else list(m.user_endpoint),
        "client_tags": [list(kv) for kv in m.client_tags],
    }
    return StreamsGroupRecord(MEMBER, group_id, m.member_id, value)


def target_member(group_id: str, member_id: str, t: TaskTuple) -> StreamsGroupRecord:
    return StreamsGroupRecord(TARGET_MEMBER, group_id, member_id, _tuple(t))


def target_metadata(group_id: str, epoch: int, timestamp: int) -> StreamsGroupRecord:
    value = {"assignment_epoch": epoch, "assignment_timestamp": timestamp}
    return StreamsGroupRecord(TARGET_METADATA, group_id, "", value)


def current_assignment(group_id: str, m: StreamsGroupMember) -> StreamsGroupRecord:
    value = {
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        "state": m.state,
        "assigned": _tuple(m.assigned),
        "pending_revocation": _tuple(m.pending_revocation),
        "active_epochs": [[s, p, e] for (s, p), e in sorted(m.active_epochs.items())],
    }
    return StreamsGroupRecord(CURRENT, group_id, m.member_id, value)


def member_tombstones(group_id: str, member_id: str) -> list[StreamsGroupRecord]:
    """Current assignment, target member, member metadata: Kafka's order when a member is removed."""
    return [StreamsGroupRecord(k, group_id, member_id, None) for k in (CURRENT, TARGET_MEMBER, MEMBER)]


def group_tombstones(g: StreamsGroup) -> list[StreamsGroupRecord]:
    gid, ids = g.group_id, sorted(set(g.members) | set(g.target))
    out = [StreamsGroupRecord(CURRENT, gid, mid, None) for mid in ids]
    out += [StreamsGroupRecord(TARGET_MEMBER, gid, mid, None) for mid in ids]
    out.append(StreamsGroupRecord(TARGET_METADATA, gid, "", None))
    out += [StreamsGroupRecord(MEMBER, gid, mid, None) for mid in ids]
    out.append(StreamsGroupRecord(TOPOLOGY, gid, "", None))
    out.append(StreamsGroupRecord(METADATA, gid, "", None))
    return out


def replay(groups: dict[str, StreamsGroup], r: StreamsGroupRecord) -> None:
    g = groups.get(r.group_id)
    v = r.value
    if g is None:
        if v is None:
            return
        g = groups[r.group_id] = StreamsGroup(r.group_id)
    if r.kind == METADATA:
        if v is None:
            del groups[r.group_id]
            return
        g.group_epoch, g.metadata_hash = v["epoch"], v["metadata_hash"]
        g.validated_topology_epoch = v["validated_topology_epoch"]
        g.last_assignment_configs = tuple((k, x) for k, x in v["last_assignment_configs"])
    elif r.kind == TOPOLOGY:
        g.topology = None if v is None else _untopology(v)
    elif r.kind == TARGET_METADATA:
        if v is not None:
            g.assignment_epoch, g.assignment_timestamp = v["assignment_epoch"], v["assignment_timestamp"]
    elif r.kind == TARGET_MEMBER:
        if v is None:
            g.target.pop(r.member_id, None)
        else:
            g.target[r.member_id] = _untuple(v)
    elif r.kind == MEMBER:
        if v is None:
            g.members.pop(r.member_id, None)
            return
        m = g.members.get(r.member_id) or StreamsGroupMember(r.member_id)
        g.members[r.member_id] = m.replace(
            instance_id=v["instance_id"], rack_id=v["rack_id"], client_id=v["client_id"],
            client_host=v["client_host"], rebalance_timeout_ms=v["rebalance_timeout_ms"],
            topology_epoch=v["topology_epoch"], process_id=v["process_id"],
            user_endpoint=None if v["user_endpoint"] is None else tuple(v["user_endpoint"]),
            client_tags=tuple((k, x) for k, x in v["client_tags"]),
        )  # fmt: skip
    elif r.kind == CURRENT and v is not None:
        m = g.members.get(r.member_id) or StreamsGroupMember(r.member_id)
        g.members[r.member_id] = m.replace(
            member_epoch=v["member_epoch"], previous_member_epoch=v["previous_member_epoch"], state=v["state"],
            assigned=_untuple(v["assigned"]), pending_revocation=_untuple(v["pending_revocation"]),
            active_epochs={(s, p): e for s, p, e in v["active_epochs"]},
        )  # fmt: skip
