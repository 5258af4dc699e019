"""Kafka 4.4's `sticky` task assignor (`StickyTaskAssignor`, spec §6.3): active tasks stay with their owner up
to a per-member quota, then go to a standby that holds their state, then to the least-loaded process; standby
replicas of stateful tasks go to processes that do not hold the task yet. No warm-up tasks (as 4.4)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

TaskId = tuple[str, int]

NAME = "sticky"


@dataclass(frozen=True, slots=True)
class MemberSpec:
    process_id: str
    active: frozenset[TaskId]  # currently assigned active tasks
    standby: frozenset[TaskId]
    #: tasks it reported changelog offsets for (state on its disk), with their offset sums
    offsets: Mapping[TaskId, int]


@dataclass(slots=True)
class _Process:
    capacity: int = 0
    tasks: int = 0

    def load(self) -> float:
        return self.tasks / self.capacity if self.capacity else math.inf


class _State:
    def __init__(self, members: Mapping[str, MemberSpec]) -> None:
        self.members = members
        self.processes: dict[str, _Process] = {}
        for m in members.values():
            self.processes.setdefault(m.process_id, _Process()).capacity += 1
        self.active: dict[str, set[TaskId]] = {mid: set() for mid in members}
        self.standby: dict[str, set[TaskId]] = {mid: set() for mid in members}
        self.count: dict[str, int] = dict.fromkeys(members, 0)
        #: task -> processes holding it (active or standby)
        self.holders: dict[TaskId, set[str]] = {}

    def give(self, mid: str, task: TaskId, active: bool) -> None:
        (self.active if active else self.standby)[mid].add(task)
        self.count[mid] += 1
        pid = self.members[mid].process_id
        self.processes[pid].tasks += 1
        self.holders.setdefault(task, set()).add(pid)

    def holds(self, pid: str, task: TaskId) -> bool:
        return pid in self.holders.get(task, ())

    def least_loaded_member(self, pid: str) -> str:
        ids = [mid for mid, m in self.members.items() if m.process_id == pid]
        return min(ids, key=lambda mid: (self.count[mid], mid))

    def process_order(self) -> list[str]:
        return sorted(self.processes, key=lambda p: (self.processes[p].load(), p))


def assign(
    tasks: Mapping[str, int],
    stateful: frozenset[str],
    members: Mapping[str, MemberSpec],
    num_standby: int,
) -> dict[str, tuple[dict[str, frozenset[int]], dict[str, frozenset[int]]]]:
    """member id -> (active, standby) as {subtopology: partitions}."""
    if not members:
        return {}
    st = _State(members)
    all_tasks = [(s, p) for s in sorted(tasks) for p in range(tasks[s])]
    _assign_active(st, all_tasks)
    if num_standby > 0:
        _assign_standby(st, [t for t in all_tasks if t[0] in stateful], num_standby)
    out = {}
    for mid in members:
        out[mid] = (_group(st.active[mid]), _group(st.standby[mid]))
    return out


def _group(tasks: set[TaskId]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for s, p in tasks:
        out.setdefault(s, set()).add(p)
    return {s: frozenset(ps) for s, ps in out.items()}


def _assign_active(st: _State, all_tasks: list[TaskId]) -> None:
    prev_active = {t: mid for mid, m in st.members.items() for t in m.active}
    prev_standby: dict[TaskId, list[str]] = {}
    for mid, m in st.members.items():
        for t in m.standby | set(m.offsets):
            prev_standby.setdefault(t, []).append(mid)
    for t, mids in prev_standby.items():
        mids.sort(key=lambda mid: (t not in st.members[mid].standby, -st.members[mid].offsets.get(t, 0), mid))
    remaining = len(all_tasks)
    open_members = set(st.members)

    def quota() -> int:
        return math.ceil(remaining / len(open_members)) if open_members else 0

    per_member = quota()
    left: list[TaskId] = []
    # 1. previous owners, in (partition, subtopology) order, up to the shrinking quota
    for t in sorted(all_tasks, key=lambda t: (t[1], t[0])):
        owner = prev_active.get(t)
        if owner is not None and owner in open_members and st.count[owner] < per_member:
            st.give(owner, t, True)
            remaining -= 1
            if st.count[owner] >= per_member:
                open_members.discard(owner)
                per_member = quota()
        else:
            left.append(t)
    # 2. members holding the task's state (standby or reported offsets)
    rest: list[TaskId] = []
    for t in left:
        chosen = None
        for mid in prev_standby.get(t, ()):
            if chosen is None or (
                st.processes[st.members[mid].process_id].load()
                < st.processes[st.members[chosen].process_id].load()
                and st.count[mid] < st.count[chosen]
            ):
                chosen = mid
        if chosen is not None and chosen in open_members and st.count[chosen] < per_member:
            st.give(chosen, t, True)
            remaining -= 1
            if st.count[chosen] >= per_member:
                open_members.discard(chosen)
                per_member = quota()
        else:
            rest.append(t)
    # 3. the least-loaded process, its least-loaded member
    for t in sorted(rest):
        pid = st.process_order()[0]
        st.give(st.least_loaded_member(pid), t, True)


def _assign_standby(st: _State, stateful_tasks: list[TaskId], replicas: int) -> None:
    prev_active = {t: mid for mid, m in st.members.items() for t in m.active}
    total = sum(len(a) for a in st.active.values()) + replicas * len(stateful_tasks)
    per_member = math.ceil(total / len(st.members))
    prev_standby: dict[TaskId, list[str]] = {}
    for mid, m in st.members.items():
        for t in m.standby | set(m.offsets):
            prev_standby.setdefault(t, []).append(mid)
    least: list[tuple[TaskId, int]] = []
    for t in sorted(stateful_tasks, key=lambda t: (t[1], t[0]), reverse=True):
        for i in range(replicas):
            owner = prev_active.get(t)
            if (
                owner is not None
                and not st.holds(st.members[owner].process_id, t)
                and st.count[owner] < per_member
            ):
                st.give(owner, t, False)
                continue
            candidates = [
                c
                for c in prev_standby.get(t, ())
                if not st.holds(st.members[c].process_id, t) and st.count[c] < per_member
            ]
            if candidates:
                best = min(candidates, key=lambda c: (st.processes[st.members[c].process_id].load(), c))
                st.give(best, t, False)
                continue
            least.append((t, replicas - i))
            break
    for t, n in sorted(least, key=lambda x: x[0], reverse=True):
        for _ in range(n):
            for pid in st.process_order():
                if not st.holds(pid, t):
                    st.give(st.least_loaded_member(pid), t, False)
                    break
