"""Moving a member towards its target tasks, revoking before assigning (Kafka's streams
`CurrentAssignmentBuilder`, spec §7): a task moves only once its previous owner has reported it revoked."""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.server.coordinator.modern.streams.group import (
    EMPTY_TASKS,
    STABLE,
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    StreamsGroupMember,
    TaskTuple,
    tasks_intersect,
    tasks_minus,
    tasks_union,
)


class FencedMemberEpoch(Exception):
    pass


def _owned_overlaps(owned: TaskTuple | None, pending: TaskTuple) -> bool:
    if owned is None:
        return True
    return any(
        tasks_intersect(a, b) for a, b in ((owned.active, pending.active), (owned.standby, pending.standby),
                                           (owned.warmup, pending.warmup))
    )  # fmt: skip


def _released(
    member: StreamsGroupMember, wanted: TaskTuple, others: Iterable[StreamsGroupMember]
) -> tuple[TaskTuple, bool]:
    """The part of `wanted` no other member still holds (and whether something is held back)."""
    held_active: set[tuple[str, int]] = set()
    same_process: set[tuple[str, int]] = set()
    same_process_active: set[tuple[str, int]] = set()
    for o in others:
        if o.member_id == member.member_id:
            continue
        mine = {
            (s, p)
            for t in (o.assigned.active, o.pending_revocation.active)
            for s, ps in t.items()
            for p in ps
        }
        held_active |= mine
        if o.process_id == member.process_id:
            same_process_active |= mine
            for t in (o.assigned.standby, o.assigned.warmup, o.pending_revocation.standby):
                same_process |= {(s, p) for s, ps in t.items() for p in ps}
    held = False

    def keep(tasks: dict[str, frozenset[int]], blocked: set[tuple[str, int]]) -> dict[str, frozenset[int]]:
        nonlocal held
        out = {}
        for s, ps in tasks.items():
            ok = frozenset(p for p in ps if (s, p) not in blocked)
            held = held or len(ok) < len(ps)
            if ok:
                out[s] = ok
        return out

    active = keep(dict(wanted.active), held_active | same_process)
    standby = keep(dict(wanted.standby), same_process_active | same_process)
    warmup = keep(dict(wanted.warmup), same_process_active | same_process)
    return TaskTuple(active, standby, warmup), held


def reconcile(
    member: StreamsGroupMember,
    target_epoch: int,
    target: TaskTuple,
    owned: TaskTuple | None,
    others: Iterable[StreamsGroupMember],
) -> StreamsGroupMember:
    """The member after this heartbeat's reconciliation step (unchanged when nothing moves)."""
    others = list(others)
    if member.state == UNREVOKED_TASKS:
        if _owned_overlaps(owned, member.pending_revocation):
            return member
        member = member.replace(pending_revocation=EMPTY_TASKS)
    elif member.state == STABLE and member.member_epoch == target_epoch:
        return member
    cur = member.assigned
    kept = TaskTuple(
        tasks_intersect(cur.active, target.active),
        tasks_intersect(cur.standby, target.standby),
        tasks_intersect(cur.warmup, target.warmup),
    )
    revoke = TaskTuple(
        tasks_minus(cur.active, target.active),
        tasks_minus(cur.standby, target.standby),
        tasks_minus(cur.warmup, target.warmup),
    )
    if not revoke.is_empty() and _owned_overlaps(owned, revoke):
        epochs = {k: e for k, e in member.active_epochs.items() if k[1] in kept.active.get(k[0], ())}
        return member.replace(
            state=UNREVOKED_TASKS, assigned=kept, pending_revocation=revoke, active_epochs=epochs
        )
    wanted = TaskTuple(
        tasks_minus(target.active, kept.active),
        tasks_minus(target.standby, kept.standby),
        tasks_minus(target.warmup, kept.warmup),
    )
    granted, held = _released(member, wanted, others)
    epochs = {k: e for k, e in member.active_epochs.items() if k[1] in kept.active.get(k[0], ())}
    for s, ps in granted.active.items():
        for p in ps:
            epochs[(s, p)] = target_epoch
    return member.replace(
        state=UNRELEASED_TASKS if held else STABLE,
        previous_member_epoch=member.member_epoch if member.member_epoch != target_epoch
        else member.previous_member_epoch,
        member_epoch=target_epoch,
        assigned=TaskTuple(
            tasks_union(kept.active, granted.active),
            tasks_union(kept.standby, granted.standby),
            tasks_union(kept.warmup, granted.warmup),
        ),
        pending_revocation=EMPTY_TASKS,
        active_epochs=epochs,
    )  # fmt: skip
