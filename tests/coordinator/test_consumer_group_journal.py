"""Journal events of KIP-848 consumer groups (docs/journal.md): members joining and leaving with a reason, group
epoch bumps with their cause, the target assignment, member epochs and reconciliation times, and the
state_change events the console's rebalance timeline folds into rows."""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.console.timeline import RebalanceTimeline
from groupcoord.server.coordinator.context import EVENT_KEYS
from tests.coordinator.consumer_group_harness import FOO, Harness


def kinds(events: list[dict]) -> list[str]:
    return [e["event"] for e in events]


def states(events: list[dict]) -> list[tuple[str, str, str]]:
    return [(e["state_from"], e["state_to"], e["reason"]) for e in events if e["event"] == "state_change"]


def test_a_join_journals_creation_member_bump_target_reconciliation_and_the_states_passed() -> None:
    h = Harness()
    r = h.hb("m1", 0)
    assert r.error == E.NONE
    assert all(set(e) == set(EVENT_KEYS) for e in h.events)
    assert kinds(h.events) == [
        "group_created", "member_joined", "group_epoch", "target_assignment", "member_epoch",
        "member_reconciled", "state_change", "state_change", "state_change",
    ]  # fmt: skip
    assert states(h.events) == [
        ("Empty", "Assigning", "new_member"),
        ("Assigning", "Reconciling", "target_assignment"),
        ("Reconciling", "Stable", "reconciled"),
    ]
    by = {e["event"]: e for e in h.events}
    assert by["member_joined"]["member_id"] == "m1" and by["member_joined"]["client_id"] == "client"
    assert by["group_epoch"]["generation"] == 1 and by["group_epoch"]["reason"] == "new_member"
    assert by["target_assignment"]["assignment"] == {"m1": [f"foo-{p}" for p in range(6)]}
    assert by["member_reconciled"]["member_epoch"] == 1 and by["member_reconciled"]["duration_ms"] == 0
    assert all(e["protocol_type"] == "consumer" and e["protocol"] == "uniform" for e in h.events)


def test_reconciliation_time_is_from_target_to_reconciled() -> None:
    h = Harness()
    h.hb("m1", 0)
    h.hb("m1", 1, owned={FOO: frozenset(range(6))})
    h.events.clear()
    h.now += 100
    h.hb("m2", 0)  # m1 must revoke half before m2 gets it
    assert states(h.events) == [
        ("Stable", "Assigning", "new_member"),
        ("Assigning", "Reconciling", "target_assignment"),
    ]
    m1_owned = {FOO: frozenset(range(6))}
    for _ in range(5):
        h.now += 250
        m1 = h.group().members["m1"]
        h.hb("m1", m1.member_epoch, owned={t: frozenset(ps) for t, ps in m1.assigned.items()} or m1_owned)
        m2 = h.group().members["m2"]
        h.hb("m2", m2.member_epoch, owned={t: frozenset(ps) for t, ps in m2.assigned.items()})
        if h.group().state == "Stable":
            break
    assert h.group().state == "Stable"
    done = {e["member_id"]: e for e in h.events if e["event"] == "member_reconciled"}
    assert set(done) == {"m1", "m2"}
    assert done["m1"]["duration_ms"] > 0 and done["m2"]["duration_ms"] >= done["m1"]["duration_ms"]
    assert done["m2"]["duration_ms"] == done["m2"]["ts"] - h.group().assignment_timestamp
    assert states(h.events)[-1] == ("Reconciling", "Stable", "reconciled")
    moves = [e for e in h.events if e["event"] == "member_epoch" and e["member_id"] == "m1"]
    assert moves and moves[0]["reason"] in {"stable", "unrevoked_partitions", "unreleased_partitions"}


def test_leaving_and_session_timeout_are_journaled_with_their_reason() -> None:
    h = Harness()
    h.hb("m1", 0)
    h.hb("m2", 0)
    h.events.clear()
    assert h.hb("m2", -1).error == E.NONE
    removed = [e for e in h.events if e["event"] == "member_removed"]
    assert [(e["member_id"], e["reason"]) for e in removed] == [("m2", "left")]
    bump = next(e for e in h.events if e["event"] == "group_epoch")
    assert bump["reason"] == "left" and bump["members"] == 1
    h.events.clear()
    h.advance(45_001)  # m1 never heartbeats again
    assert [(e["event"], e["reason"]) for e in h.events if e["event"] != "state_change"] == [
        ("member_removed", "session_timeout"),
        ("group_epoch", "session_timeout"),
    ]
    assert states(h.events)[-1][1:] == ("Empty", "session_timeout")


def test_deletion_is_journaled() -> None:
    h = Harness()
    h.hb("m1", 0)
    h.hb("m1", -1)
    h.events.clear()
    results, fx = h.shard.delete_groups(["g"], h.now)
    h.apply(fx)
    assert results == [("g", E.NONE)]
    assert states(h.events) == [("Empty", "Dead", "deleted")]
    assert kinds(h.events) == ["state_change", "group_deleted"]


def test_the_console_timeline_folds_consumer_group_events_into_rows() -> None:
    h = Harness()
    tl = RebalanceTimeline()
    h.hb("m1", 0)
    h.hb("m1", 1, owned={FOO: frozenset(range(6))})
    h.now += 100
    h.hb("m2", 0)
    for _ in range(6):
        h.now += 100
        for mid in ("m1", "m2"):
            m = h.group().members[mid]
            h.hb(mid, m.member_epoch, owned={t: frozenset(ps) for t, ps in m.assigned.items()})
    assert h.group().state == "Stable"
    for e in h.events:
        tl.on_event(e)
    rows = tl.rows("g")
    assert len(rows) == 2 and not any(r["open"] for r in rows)
    newest, first = rows
    assert (first["cause"], first["state_to"], first["generation"]) == ("new_member", "Stable", 1)
    assert (newest["cause"], newest["state_to"], newest["generation"]) == ("new_member", "Stable", 2)
    assert [j["member_id"] for j in newest["joined"]] == ["m2"]
    assert newest["duration_ms"] > 0
    assert [p["state"] for p in newest["phases"]] == ["Assigning", "Reconciling", "Stable"]


def test_after_a_restart_state_changes_start_from_the_loaded_state() -> None:
    from groupcoord.server.coordinator.modern.consumer.api import ConsumerGroupConfig
    from groupcoord.server.coordinator.shard import GroupCoordinatorShard

    h = Harness()
    h.hb("m1", 0)
    h.hb("m2", 0)
    for _ in range(4):
        for mid in ("m1", "m2"):
            m = h.group().members[mid]
            h.hb(mid, m.member_epoch, owned={t: frozenset(ps) for t, ps in m.assigned.items()})
    assert h.group().state == "Stable"
    records = list(h.records)
    h.shard = GroupCoordinatorShard(consumer_config=ConsumerGroupConfig(assignment_interval_ms=0))
    for r in records:
        h.shard.replay(r)
    h.apply(h.shard.finish_load(h.now))
    h.events.clear()
    m2 = h.group().members["m2"]
    h.hb("m2", m2.member_epoch, owned={t: frozenset(ps) for t, ps in m2.assigned.items()})
    assert h.events == []  # a steady heartbeat journals nothing
    h.hb("m2", -1)
    assert states(h.events)[0] == ("Stable", "Assigning", "left")
