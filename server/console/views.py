"""The JSON behind each console page, built from the coordinator's in-memory state on demand.

Nothing here runs unless a page asks (and `app.Console` caches each answer briefly, so open browsers cost one
build per period, not one per browser). A group page is O(members + partitions of its topics); the groups
list is O(groups); neither touches the disk. `visible` filters by the principal's DESCRIBE rights (`auth.py`).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from groupcoord.server.coordinator.consumer import assignment_partitions, subscription_topics
from groupcoord.server.coordinator.modern.consumer.member import STATE_NAMES
from groupcoord.server.share.partition import ACKNOWLEDGED, ACQUIRED, ARCHIVED, AVAILABLE

if TYPE_CHECKING:
    from groupcoord.server.cluster.node import ClusterNode
    from groupcoord.server.console.timeline import RebalanceTimeline
    from groupcoord.server.coordinator.group import ClassicGroup, Member
    from groupcoord.server.coordinator.modern.consumer.group import ConsumerGroup
    from groupcoord.server.coordinator.modern.consumer.member import Assignment
    from groupcoord.server.coordinator.modern.share.group import ShareGroup
    from groupcoord.server.coordinator.shard import GroupCoordinatorShard
    from groupcoord.server.log.manager import LogManager
    from groupcoord.server.share.service import ShareService
    from groupcoord.server.txn.service import TxnCoordinator

#: (resource, name) -> may the principal DESCRIBE it; resource is "group", "topic" or "transactional_id"
Visible = Callable[[str, str], bool]

#: above this many partitions (grid columns) the page lists each member's partitions instead of a grid
GRID_MAX_PARTITIONS = 100


class ConsoleSource(Protocol):
    """What the console reads of the broker (the Broker satisfies it)."""

    machine: GroupCoordinatorShard | None
    logs: LogManager | None
    txn: TxnCoordinator | None
    cluster: ClusterNode | None
    share: ShareService | None
    loading: bool

    def console_facts(self) -> dict[str, Any]:
        """Node id, version, listeners, connections, start time: what only the wiring knows."""
        ...


def everything(_kind: str, _name: str) -> bool:
    return True


class _Decoded:
    """Decoded consumer-protocol assignments and subscriptions (the coordinator's own tolerant readers,
    `server/coordinator/consumer.py`), keyed by their bytes: they change only on a rebalance, while a page
    polls every second, and decoding is most of a group page's cost. Bounded."""

    MAX = 100_000

    def __init__(self) -> None:
        self._cache: dict[tuple[bool, bytes], list[str]] = {}

    def get(self, data: bytes, assignment: bool) -> list[str]:
        key = (assignment, data)
        hit = self._cache.get(key)
        if hit is None:
            hit = (
                (assignment_partitions(data) or []) if assignment else sorted(subscription_topics(data) or ())
            )
            if len(self._cache) >= self.MAX:
                self._cache.clear()
            self._cache[key] = hit
        return hit


_decoded = _Decoded()


def _assigned(m: Member) -> list[str]:
    """The member's partitions as `topic-partition`, decoded from its consumer-protocol assignment."""
    if m.protocol_type not in (None, "consumer") or not m.assignment:
        return []
    return _decoded.get(m.assignment, True)


def _subscribed(m: Member, protocol: str | None) -> list[str]:
    if m.protocol_type not in (None, "consumer"):
        return []
    data = m.metadata(protocol)
    return _decoded.get(data, False) if data else []


def _log_end(logs: LogManager | None, topic: str, partition: int) -> int | None:
    marks = None if logs is None else logs.watermarks(topic, partition)
    return None if marks is None else marks[1]


def _group_type(g: ClassicGroup) -> str:
    return "classic"


#: the server assignor a KIP-848 group uses when its members name none (Kafka's first of group.consumer.assignors)
DEFAULT_ASSIGNOR = "uniform"


def _summary(machine: GroupCoordinatorShard, gid: str) -> dict[str, Any] | None:
    """Type, state, members, protocol and generation of a classic or KIP-848 consumer group."""
    g = machine.group(gid)
    if g is not None:
        return {
            "type": "classic",
            "state": str(g.state),
            "members": len(g.members),
            "protocol_type": g.protocol_type,
            "protocol": g.protocol_name,
            "generation": g.generation_id,
        }
    sg = machine.share_manager.groups.get(gid)
    if sg is not None:
        return {
            "type": "share",
            "state": sg.state,
            "members": len(sg.members),
            "protocol_type": "share",
            "protocol": "simple",
            "generation": sg.group_epoch,
        }
    cg = machine.consumer_group(gid)
    if cg is not None:
        return {
            "type": "consumer",
            "state": cg.state,
            "members": len(cg.members),
            "protocol_type": "consumer",
            "protocol": cg.preferred_assignor(DEFAULT_ASSIGNOR),
            "generation": cg.group_epoch,
        }
    return None


def group_ids(machine: GroupCoordinatorShard) -> list[str]:
    """Every group of the shard: classic, KIP-848 consumer and KIP-932 share groups."""
    return [*machine.group_ids(), *machine.share_manager.groups]


def _topic_name(logs: LogManager | None, topic_id: str) -> str:
    info = None
    if logs is not None:
        try:
            info = logs.topic_by_id(uuid.UUID(topic_id))
        except ValueError:
            info = None
    return topic_id if info is None else info.name


_SHARE_STATES = {
    AVAILABLE: "available",
    ACQUIRED: "acquired",
    ACKNOWLEDGED: "acknowledged",
    ARCHIVED: "archived",
}


def _share_page(src: ConsoleSource, sg: ShareGroup, visible: Visible) -> tuple[list[Any], list[Any]]:
    """Members (with their assignments) and share partitions (SPSO, SPEO, in-flight records by state)."""
    members = [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.client_host,
            "rack_id": m.rack_id,
            "group_instance_id": None,
            "session_timeout_ms": None,
            "rebalance_timeout_ms": None,
            "leader": False,
            "member_epoch": m.member_epoch,
            "subscription": sorted(m.subscribed_topic_names),
            "assignment": sorted(
                f"{_topic_name(src.logs, t)}-{p}" for t, ps in m.assignment.items() for p in ps
            ),
        }
        for m in sg.members.values()
    ]
    owners: dict[str, list[dict[str, Any]]] = {}
    for m in members:
        for tp in m["assignment"]:
            owners.setdefault(tp, []).append(m)
    partitions = []
    for topic_id, index, sp in _share_partitions(src).get(sg.group_id, []):
        name = _topic_name(src.logs, topic_id)
        if not visible("topic", name):
            continue
        end = _log_end(src.logs, name, index)
        counts: Counter[str] = Counter(_SHARE_STATES.get(r.state, str(r.state)) for r in sp.window.values())
        partitions.append(
            {
                "topic": name,
                "partition": index,
                "committed": sp.start,
                "share_end": sp.end,
                "log_end": end,
                "lag": None if end is None or sp.start < 0 else max(0, end - sp.start),
                "in_flight": dict(counts),
                "owner": ", ".join(_label(m) for m in owners.get(f"{name}-{index}", [])) or None,
                "owner_member_id": ", ".join(m["member_id"] for m in owners.get(f"{name}-{index}", []))
                or None,
            }
        )
    return members, partitions


def _label(m: dict[str, Any]) -> str:
    """How a user knows a member: its client id (and static instance id); the member id only without one."""
    name = m.get("client_id") or m["member_id"]
    return f"{name} ({m['group_instance_id']})" if m.get("group_instance_id") else name


def _share_partitions(src: ConsoleSource) -> dict[str, list[tuple[str, int, Any]]]:
    """The share service's partitions by group: (topic id, partition, SharePartition), sorted."""
    out: dict[str, list[tuple[str, int, Any]]] = {}
    share = src.share
    for (gid, topic_id, index), sp in sorted((share.partitions if share else {}).items()):
        out.setdefault(gid, []).append((topic_id, index, sp))
    return out


def _share_lag(src: ConsoleSource, parts: list[tuple[str, int, Any]]) -> int | None:
    """A share group's lag as its page sums it: records from each share partition's start to the log end."""
    total, known = 0, False
    for topic_id, index, sp in parts:
        end = _log_end(src.logs, _topic_name(src.logs, topic_id), index)
        if end is not None and sp.start >= 0:
            total += max(0, end - sp.start)
            known = True
    return total if known else None


def _names(logs: LogManager | None, assignment: Assignment) -> list[str]:
    """`topic-partition` names of a KIP-848 assignment (topic id -> partitions); unknown ids by their id."""
    out = []
    for topic_id, parts in assignment.items():
        info = None if logs is None else logs.topic_by_id(topic_id)
        name = str(topic_id) if info is None else info.name
        out += [f"{name}-{p}" for p in sorted(parts)]
    return sorted(out)


def _consumer_members(src: ConsoleSource, cg: ConsumerGroup) -> list[dict[str, Any]]:
    target: dict[str, dict[uuid.UUID, Any]] = {mid: dict(t) for mid, t in cg.target.items()}
    return [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.client_host,
            "group_instance_id": m.instance_id,
            "session_timeout_ms": None,
            "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "leader": False,
            "member_epoch": m.member_epoch,
            "member_state": STATE_NAMES.get(m.state, str(m.state)),
            "subscription": sorted(m.subscribed_topic_names),
            "assignment": _names(src.logs, m.assigned),
            "pending_revocation": _names(src.logs, m.pending_revocation),
            "target": _names(
                src.logs, {t: dict.fromkeys(ps, 0) for t, ps in target.get(m.member_id, {}).items()}
            ),
        }
        for m in cg.members.values()
    ]


def _lag_total(src: ConsoleSource, gid: str) -> int | None:
    machine = src.machine
    if machine is None:
        return None
    total, known = 0, False
    for (topic, p), value in machine.committed_offsets(gid).items():
        end = _log_end(src.logs, topic, p)
        if end is not None:
            total += max(0, end - value.offset)
            known = True
    return total if known else None


def overview(src: ConsoleSource, visible: Visible = everything) -> dict[str, Any]:
    machine = src.machine
    by_type: Counter[str] = Counter()
    by_state: Counter[str] = Counter()
    members = 0
    if machine is not None:
        for gid in group_ids(machine):
            summary = _summary(machine, gid)
            if summary is None or not visible("group", gid):
                continue
            by_type[summary["type"]] += 1
            by_state[summary["state"]] += 1
            members += summary["members"]
    topics = partitions = 0
    if src.logs is not None:
        for name, info in src.logs.topics().items():
            if visible("topic", name):
                topics += 1
                partitions += info.partitions
    out: dict[str, Any] = {
        "loading": src.loading,
        "groups": sum(by_type.values()),
        "groups_by_type": dict(by_type),
        "groups_by_state": dict(by_state),
        "members": members,
        "topics": topics,
        "partitions": partitions,
        "transactions": 0 if src.txn is None else len(src.txn.machine.txns),
        "now_ms": int(time.time() * 1000),
        **src.console_facts(),
    }
    cluster = src.cluster
    if cluster is not None:
        out["cluster"] = {
            "node_id": cluster.node_id,
            "shards": cluster.shards,
            "held_shards": sorted(cluster.held),
            "nodes": [{"node_id": n.node_id, "host": n.host, "port": n.port} for n in cluster.live_nodes()],
        }
    return out


def groups(src: ConsoleSource, timeline: RebalanceTimeline, visible: Visible = everything) -> dict[str, Any]:
    machine = src.machine
    rows = []
    if machine is not None:
        share_parts = _share_partitions(src)
        for gid in sorted(group_ids(machine)):
            summary = _summary(machine, gid)
            if summary is None or not visible("group", gid):
                continue
            share = summary["type"] == "share"
            rows.append(
                {
                    "group_id": gid,
                    **summary,
                    "lag": _share_lag(src, share_parts.get(gid, [])) if share else _lag_total(src, gid),
                    "rebalances": timeline.count(gid),
                    "last_rebalance": timeline.last(gid),
                }
            )
    return {"groups": rows}


def group(
    src: ConsoleSource, timeline: RebalanceTimeline, gid: str, visible: Visible = everything
) -> dict[str, Any] | None:
    """One group's page; None when there is no such group (or the principal may not see it)."""
    machine = src.machine
    if machine is None or not visible("group", gid):
        return None
    g = machine.group(gid)
    cg = machine.consumer_group(gid) if g is None else None
    sg = machine.share_manager.groups.get(gid)
    if sg is not None:
        members, partitions = _share_page(src, sg, visible)
        return {
            "group_id": gid,
            **(_summary(machine, gid) or {}),
            "leader": None,
            "assignment_epoch": sg.assignment_epoch,
            "members": sorted(members, key=lambda m: (m["client_id"], m["member_id"])),
            "partitions": partitions,
            "grid": len(partitions) <= GRID_MAX_PARTITIONS,
            "lag": sum(p["lag"] for p in partitions if p["lag"] is not None),
            "timeline": timeline.rows(gid),
            "replacements": [],
            "pending_transactional_offsets": [],
            "now_ms": int(time.time() * 1000),
        }
    committed = machine.committed_offsets(gid)
    if g is None and cg is None and not committed:
        return None
    members = []
    owner: dict[str, dict[str, Any]] = {}
    topics: set[str] = {t for t, _ in committed}
    if g is not None:
        for m in g.members.values():
            parts = _assigned(m)
            for tp in parts:
                owner[tp] = {
                    "member_id": m.member_id,
                    "client_id": m.client_id,
                    "group_instance_id": m.group_instance_id,
                }
            subscribed = _subscribed(m, g.protocol_name)
            topics.update(subscribed)
            topics.update(tp.rsplit("-", 1)[0] for tp in parts)
            members.append(
                {
                    "member_id": m.member_id,
                    "client_id": m.client_id,
                    "host": m.client_host,
                    "group_instance_id": m.group_instance_id,
                    "session_timeout_ms": m.session_timeout_ms,
                    "rebalance_timeout_ms": m.rebalance_timeout_ms,
                    "leader": m.member_id == g.leader_id,
                    "subscription": subscribed,
                    "assignment": parts,
                }
            )
    elif cg is not None:
        members = _consumer_members(src, cg)
        for m in members:
            for tp in m["assignment"]:
                owner[tp] = m
            topics.update(m["subscription"])
    members.sort(key=lambda m: (m["client_id"], m["member_id"]))
    partitions = []
    for topic in sorted(t for t in topics if visible("topic", t)):
        info = None if src.logs is None else src.logs.topic(topic)
        count = info.partitions if info is not None else 0
        numbers = set(range(count)) | {p for t, p in committed if t == topic}
        for p in sorted(numbers):
            value = committed.get((topic, p))
            end = _log_end(src.logs, topic, p)
            c = None if value is None else value.offset
            partitions.append(
                {
                    "topic": topic,
                    "partition": p,
                    "committed": c,
                    "log_end": end,
                    "lag": None if c is None or end is None else max(0, end - c),
                    "owner": None if (o := owner.get(f"{topic}-{p}")) is None else _label(o),
                    "owner_member_id": None if o is None else o["member_id"],
                }
            )
    pending = []
    for pid, offsets in sorted(machine.offset_manager.txn.pending.get(gid, {}).items()):
        for (topic, p), value in sorted(offsets.items()):
            pending.append({"producer_id": pid, "topic": topic, "partition": p, "offset": value.offset})
    summary = _summary(machine, gid) or {
        "type": "classic", "state": "Dead", "members": 0, "protocol_type": None, "protocol": None, "generation": 0,
    }  # fmt: skip
    return {
        "group_id": gid,
        **summary,
        "leader": None if g is None else g.leader_id,
        "assignment_epoch": None if cg is None else cg.assignment_epoch,
        "members": members,
        "partitions": partitions,
        "grid": len(partitions) <= GRID_MAX_PARTITIONS,
        "lag": sum(p["lag"] for p in partitions if p["lag"] is not None),
        "timeline": timeline.rows(gid),
        "replacements": timeline.replacements(gid),
        "pending_transactional_offsets": pending,
        "now_ms": int(time.time() * 1000),
    }


def topics(src: ConsoleSource, visible: Visible = everything) -> dict[str, Any]:
    rows = []
    logs = src.logs
    if logs is not None:
        for name, info in sorted(logs.topics().items()):
            if not visible("topic", name):
                continue
            parts = []
            for p in range(info.partitions):
                plog = logs.partition(name, p)
                marks = logs.watermarks(name, p)
                parts.append(
                    {
                        "partition": p,
                        "log_start": None if marks is None else marks[0],
                        "log_end": None if marks is None else marks[1],
                        "size_bytes": None if plog is None else plog.size_bytes,
                    }
                )
            rows.append(
                {
                    "name": name,
                    "topic_id": str(info.topic_id),
                    "partitions": parts,
                    "size_bytes": sum(p["size_bytes"] or 0 for p in parts),
                    "configs": dict(info.configs),
                }
            )
    return {"topics": rows}


def transactions(src: ConsoleSource, visible: Visible = everything) -> dict[str, Any]:
    rows = []
    if src.txn is not None:
        for tid, v in sorted(src.txn.machine.txns.items()):
            if not visible("transactional_id", tid):
                continue
            rows.append(
                {
                    "transactional_id": tid,
                    "producer_id": v.producer_id,
                    "producer_epoch": v.producer_epoch,
                    "state": v.state,
                    "timeout_ms": v.timeout_ms,
                    "start_ms": v.start_ms,
                    "partitions": [f"{t}-{p}" for t, p in v.partitions],
                    "groups": list(v.groups),
                }
            )
    return {"transactions": rows}
