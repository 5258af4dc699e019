"""The console's rebalance timeline, folded from journal events (docs/journal.md's definition of a rebalance)."""

from __future__ import annotations

from groupcoord.server.console.timeline import RebalanceTimeline


def ev(ts: int, event: str, group: str = "g", **fields: object) -> dict[str, object]:
    return {"ts": ts, "group": group, "event": event, **fields}


def change(
    ts: int, to: str, reason: str, generation: int, members: int = 1, group: str = "g"
) -> dict[str, object]:
    return ev(ts, "state_change", group, state_to=to, reason=reason, generation=generation, members=members)


def test_a_rebalance_spans_from_preparing_to_stable_with_its_cause_and_who_joined_just_before() -> None:
    tl = RebalanceTimeline()
    tl.on_event(ev(100, "member_joined", member_id="m1", client_id="c1"))  # JoinGroup adds before the change
    tl.on_event(change(100, "PreparingRebalance", "new_member", 0))
    assert tl.rows("g")[0]["open"] is True
    tl.on_event(change(150, "CompletingRebalance", "join_complete", 1))
    tl.on_event(change(180, "Stable", "sync_complete", 1))
    (row,) = tl.rows("g")
    assert (row["cause"], row["start_ms"], row["duration_ms"], row["generation_from"], row["generation"]) == (
        "new_member",
        100,
        80,
        0,
        1,
    )
    assert [j["client_id"] for j in row["joined"]] == ["c1"]
    assert [p["state"] for p in row["phases"]] == ["PreparingRebalance", "CompletingRebalance", "Stable"]


def test_a_rejoin_during_completing_stays_one_rebalance_and_a_leave_is_listed_with_its_reason() -> None:
    tl = RebalanceTimeline()
    tl.on_event(change(0, "PreparingRebalance", "session_timeout", 3))
    tl.on_event(ev(1, "member_removed", member_id="m2", client_id="c2", reason="session_timeout"))
    tl.on_event(change(2, "CompletingRebalance", "join_complete", 4))
    tl.on_event(change(3, "PreparingRebalance", "new_member", 4))
    tl.on_event(change(9, "Stable", "sync_complete", 5))
    (row,) = tl.rows("g")
    assert (row["cause"], row["generation_from"], row["generation"]) == ("session_timeout", 3, 5)
    assert row["left"] == [
        {
            "ts": 1,
            "member_id": "m2",
            "client_id": "c2",
            "group_instance_id": None,
            "reason": "session_timeout",
        }
    ]


def test_rows_are_newest_first_bounded_and_static_replacements_are_apart() -> None:
    tl = RebalanceTimeline(max_rows=3)
    for i in range(5):
        tl.on_event(change(i * 10, "PreparingRebalance", "new_member", i))
        tl.on_event(change(i * 10 + 5, "Stable", "sync_complete", i + 1))
    tl.on_event(ev(99, "static_rejoin", member_id="new", previous_member_id="old", group_instance_id="i1"))
    assert [r["generation"] for r in tl.rows("g")] == [5, 4, 3]
    assert tl.count("g") == 3
    assert tl.replacements("g")[0]["previous_member_id"] == "old"
    assert tl.rows("g")[0]["generation"] == 5  # a replacement is not a rebalance


def test_forgets_the_group_touched_longest_ago_beyond_max_groups_and_ignores_lag_snapshots() -> None:
    tl = RebalanceTimeline(max_groups=2)
    for gid in ("a", "b", "c"):
        tl.on_event(change(1, "PreparingRebalance", "new_member", 0, group=gid))
    tl.on_event(ev(2, "lag_snapshot", group="d"))
    assert (tl.count("a"), tl.count("b"), tl.count("c"), tl.count("d")) == (0, 1, 1, 0)


def test_a_kip848_rebalance_starts_from_the_epoch_before_its_bump() -> None:
    """A consumer group's Assigning is journaled after the group epoch was bumped (it carries the new one): the
    row must read "0 → 1" then "1 → 2", not "1 → 1" and "2 → 2" (issue #36 item 4)."""
    tl = RebalanceTimeline()
    tl.on_event(ev(0, "member_joined", member_id="m1", client_id="c1", generation=1))
    tl.on_event(change(0, "Assigning", "new_member", 1))
    tl.on_event(change(1, "Reconciling", "target_assignment", 1))
    tl.on_event(change(5, "Stable", "reconciled", 1))
    tl.on_event(ev(10, "member_joined", member_id="m2", client_id="c2", generation=2))
    tl.on_event(change(10, "Assigning", "new_member", 2, members=2))
    assert tl.rows("g")[0]["generation_from"] == 1 and tl.rows("g")[0]["open"]
    tl.on_event(change(12, "Reconciling", "target_assignment", 2, members=2))
    tl.on_event(change(20, "Stable", "reconciled", 2, members=2))
    assert [(r["generation_from"], r["generation"]) for r in tl.rows("g")] == [(1, 2), (0, 1)]
