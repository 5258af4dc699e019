"""The group's target assignment from the configured topology and its members (Kafka's streams
`TargetAssignmentBuilder`, spec §6.1), and the IQ endpoint map of the heartbeat response (spec §9)."""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.server.coordinator.modern.streams import assignor
from groupcoord.server.coordinator.modern.streams.api import EndpointPartitions, Tasks
from groupcoord.server.coordinator.modern.streams.group import StreamsGroup, TaskTuple, task_set


def compute_target(
    g: StreamsGroup, num_standby: int, offsets: Mapping[str, Mapping[tuple[str, int], int]]
) -> dict[str, TaskTuple]:
    """Every member's target; all empty while the topology is not ready. Members assign from what they hold
    now (current assignment), not from the previous target."""
    configured = g.configured
    if configured is None or not configured.ready:
        return {mid: TaskTuple() for mid in g.members}
    specs = {
        mid: assignor.MemberSpec(
            m.process_id or mid,
            frozenset(task_set(m.assigned.active)),
            frozenset(task_set(m.assigned.standby)),
            offsets.get(mid, {}),
        )
        for mid, m in g.members.items()
    }
    stateful = frozenset(s.subtopology_id for s in configured.subtopologies or () if s.stateful)
    out = assignor.assign(configured.tasks(), stateful, specs, num_standby)
    return {mid: TaskTuple(a, s, {}) for mid, (a, s) in out.items()}


def _partitions(g: StreamsGroup, tasks: Tasks) -> tuple[tuple[str, tuple[int, ...]], ...]:
    configured = g.configured
    if configured is None or configured.subtopologies is None:
        return ()
    by_topic: dict[str, set[int]] = {}
    counts = configured.partition_counts
    for s in configured.subtopologies:
        ps = tasks.get(s.subtopology_id, frozenset())
        if not ps:
            continue
        for topic in s.input_topics():
            n = counts.get(topic)
            for p in ps:
                if n is None or p < n:
                    by_topic.setdefault(topic, set()).add(p)
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(by_topic.items()))


def endpoint_partitions(g: StreamsGroup) -> tuple[EndpointPartitions, ...]:
    out = []
    for m in g.members.values():
        if m.user_endpoint is None:
            continue
        a = m.assigned
        standby = dict(a.standby)
        for s, ps in a.warmup.items():
            standby[s] = standby.get(s, frozenset()) | ps
        out.append(EndpointPartitions(m.user_endpoint, _partitions(g, a.active), _partitions(g, standby)))
    return tuple(out)
