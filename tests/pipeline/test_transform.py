"""The transformations on small hand-built journals whose answers are known (docs/report.md definitions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline import journal as J
from groupcoord.pipeline import transform as T

pytestmark = pytest.mark.spark

T0 = 1_763_812_000_000


def tables(spark: Any, data_dir: Path, **kw: Any) -> dict[str, dict]:
    prepared = T.prepare(J.read_journal(spark, data_dir, **kw)).cache()
    rebal = T.rebalances(prepared).cache()
    try:
        return {
            "rebalances": sorted(
                (r.asDict() for r in rebal.collect()), key=lambda r: (r["group"], r["started_ms"])
            ),
            "sessions": {r["member_id"]: r.asDict() for r in T.member_sessions(prepared).collect()},
            "groups": {r["group"]: r.asDict() for r in T.group_summary(prepared, rebal).collect()},
        }
    finally:
        rebal.unpersist()
        prepared.unpersist()


def stable_group(j: Any, group: str = "g", static: bool = False) -> None:
    """Group `g` with members a, b (static: instances ia, ib) Stable at T0+1000 with t-0..t-3."""
    j.create(group, T0)
    j.join(group, "a", T0 + 1, instance="ia" if static else None)
    j.transition(group, "PreparingRebalance", "new_member", T0 + 1)
    j.join(group, "b", T0 + 2, instance="ib" if static else None)
    j.transition(group, "CompletingRebalance", "join_complete", T0 + 500)
    j.transition(
        group, "Stable", "sync_complete", T0 + 1000, assignment={"a": ["t-0", "t-1"], "b": ["t-2", "t-3"]}
    )


def test_first_rebalance_phases_members_and_first_assignment(spark: Any, journal: Any) -> None:
    stable_group(journal)
    t = tables(spark, journal.write())
    (r,) = t["rebalances"]
    assert r["cause"] == "new_member"
    assert r["outcome"] == "Stable"
    assert (r["duration_ms"], r["join_ms"], r["sync_ms"]) == (999, 499, 500)
    assert (r["members_before"], r["members_after"], r["generation"]) == (0, 2, 1)
    # decision (docs/report.md): the first assignment moves every assigned partition, and is flagged
    assert r["partitions_moved"] == 4 and r["first_assignment"] is True
    g = t["groups"]["g"]
    assert g["rebalances"] == 1 and g["partitions_moved"] == 0 and g["partitions_moved_incl_first"] == 4


def test_partitions_moved_counted_from_decoded_assignments(spark: Any, journal: Any) -> None:
    stable_group(journal)
    journal.join("g", "c", T0 + 10_000)
    journal.rebalance(
        "g", "new_member", T0 + 10_000, 300, 20, {"a": ["t-0"], "b": ["t-2"], "c": ["t-1", "t-3"]}
    )
    journal.remove("g", "b", T0 + 20_000, "left")
    # t-1: c -> a, t-2: b -> c, t-0 and t-3 keep their owner
    journal.rebalance("g", "leave", T0 + 20_000, 100, 10, {"a": ["t-0", "t-1"], "c": ["t-2", "t-3"]})
    t = tables(spark, journal.write())
    moved = [(r["cause"], r["partitions_moved"], r["first_assignment"]) for r in t["rebalances"]]
    assert moved == [("new_member", 4, True), ("new_member", 2, False), ("leave", 2, False)]
    assert [(r["members_before"], r["members_after"]) for r in t["rebalances"]] == [(0, 2), (2, 3), (3, 2)]
    g = t["groups"]["g"]
    assert (g["partitions_moved"], g["partitions_moved_incl_first"]) == (4, 8)


def test_expiry_caused_rebalance_has_cause_session_timeout(spark: Any, journal: Any) -> None:
    stable_group(journal)
    journal.remove("g", "b", T0 + 60_000, "session_timeout")
    journal.rebalance("g", "session_timeout", T0 + 60_000, 2000, 30, {"a": ["t-0", "t-1", "t-2", "t-3"]})
    t = tables(spark, journal.write())
    r = t["rebalances"][-1]
    assert r["cause"] == "session_timeout"
    assert (r["duration_ms"], r["join_ms"], r["sync_ms"]) == (2030, 2000, 30)
    assert r["partitions_moved"] == 2
    assert t["sessions"]["b"]["end_cause"] == "expired"
    assert t["sessions"]["b"]["duration_ms"] == 60_000 - 2
    g = t["groups"]["g"]
    assert (g["members_expired"], g["members_left"], g["rebalances"]) == (1, 0, 2)
    assert g["causes"] == {"new_member": 1, "session_timeout": 1}


def test_static_rejoin_with_skip_assignment_is_not_a_rebalance(spark: Any, journal: Any) -> None:
    stable_group(journal, static=True)
    # the leader restarts with group.instance.id=ia: new member id, no rebalance, told to skip assignment
    journal.static_rejoin("g", "a", "a2", "ia", T0 + 5_000, skip=True)
    journal.static_rejoin("g", "b", "b2", "ib", T0 + 6_000, skip=False)
    t = tables(spark, journal.write())
    assert len(t["rebalances"]) == 1  # only the initial join
    g = t["groups"]["g"]
    assert (g["rebalances"], g["static_rejoins"], g["skip_assignments"]) == (1, 2, 1)
    assert t["sessions"]["a"]["end_cause"] == "replaced"
    assert t["sessions"]["a2"]["end_cause"] is None and t["sessions"]["a2"]["group_instance_id"] == "ia"


def test_static_member_keeps_its_partitions_across_a_new_member_id(spark: Any, journal: Any) -> None:
    stable_group(journal, static=True)
    journal.static_rejoin("g", "a", "a2", "ia", T0 + 5_000, skip=True)
    journal.remove("g", "b", T0 + 9_000, "session_timeout")
    # a2 is instance ia: t-0, t-1 did not move; t-2, t-3 moved from b (ib) to a2 (ia)
    journal.rebalance("g", "session_timeout", T0 + 9_000, 50, 5, {"a2": ["t-0", "t-1", "t-2", "t-3"]})
    t = tables(spark, journal.write())
    r = t["rebalances"][-1]
    assert (r["partitions_moved"], r["static_rejoins_before"], r["skip_assignment"]) == (2, 1, True)


def test_rejoin_during_sync_stays_one_rebalance(spark: Any, journal: Any) -> None:
    stable_group(journal)
    journal.join("g", "c", T0 + 10_000)
    journal.transition("g", "PreparingRebalance", "new_member", T0 + 10_000)
    journal.transition("g", "CompletingRebalance", "join_complete", T0 + 10_100)
    journal.remove("g", "c", T0 + 40_100, "sync_timeout")
    journal.transition("g", "PreparingRebalance", "sync_timeout", T0 + 40_100)
    journal.transition("g", "CompletingRebalance", "join_complete", T0 + 40_200)
    journal.transition(
        "g", "Stable", "sync_complete", T0 + 40_250, {"a": ["t-0", "t-1"], "b": ["t-2", "t-3"]}
    )
    t = tables(spark, journal.write())
    r = t["rebalances"][-1]
    assert len(t["rebalances"]) == 2
    assert (r["cause"], r["join_rounds"], r["duration_ms"], r["sync_ms"]) == ("new_member", 2, 30_250, 50)
    assert r["partitions_moved"] == 0
    assert t["sessions"]["c"]["end_cause"] == "expired"


def test_everyone_leaves_rebalance_ends_empty(spark: Any, journal: Any) -> None:
    stable_group(journal)
    journal.remove("g", "a", T0 + 5_000, "left")
    journal.transition("g", "PreparingRebalance", "leave", T0 + 5_000)
    journal.remove("g", "b", T0 + 5_100, "left")
    journal.transition("g", "Empty", "join_complete", T0 + 5_300)
    t = tables(spark, journal.write())
    r = t["rebalances"][-1]
    assert (r["cause"], r["outcome"], r["members_before"], r["members_after"]) == ("leave", "Empty", 2, 0)
    assert (r["duration_ms"], r["join_ms"], r["sync_ms"], r["partitions_moved"]) == (300, 300, None, None)
    assert t["groups"]["g"]["members_left"] == 2


def test_member_session_end_causes(spark: Any, journal: Any) -> None:
    journal.create("g", T0)
    for i, m in enumerate(["l", "e", "f", "r", "s", "open"]):
        journal.join("g", m, T0 + i, instance="is" if m == "s" else None, client=f"client-{m}")
    journal.remove("g", "l", T0 + 100, "left")
    journal.remove("g", "e", T0 + 200, "rebalance_timeout")
    journal.remove("g", "f", T0 + 300, "group_max_size")
    journal.remove("g", "r", T0 + 400, "static_replaced", previous_member_id="r")
    journal.static_rejoin("g", "s", "s2", "is", T0 + 500, skip=False)
    t = tables(spark, journal.write())
    s = t["sessions"]
    causes = {m: (s[m]["end_cause"], s[m]["end_reason"]) for m in ["l", "e", "f", "r", "s", "open"]}
    assert causes == {
        "l": ("left", "left"),
        "e": ("expired", "rebalance_timeout"),
        "f": ("fenced", "group_max_size"),
        "r": ("replaced", "static_replaced"),
        "s": ("replaced", "static_rejoin"),
        "open": (None, None),
    }
    assert s["l"]["client_id"] == "client-l" and s["l"]["duration_ms"] == 100
    assert s["open"]["ended"] is None
    g = t["groups"]["g"]
    assert (g["members_left"], g["members_expired"], g["members_fenced"], g["members_replaced"]) == (
        1,
        1,
        1,
        1,
    )


def test_since_until_torn_line_and_unknown_fields(spark: Any, journal: Any) -> None:
    stable_group(journal)
    journal.lines[0]["a_future_field"] = {"nested": [1, 2]}  # readers ignore unknown fields
    journal.remove("g", "b", T0 + 60_000, "session_timeout")
    journal.rebalance("g", "session_timeout", T0 + 60_000, 10, 10, {"a": ["t-0", "t-1", "t-2", "t-3"]})
    data = journal.write(extra='{"ts":1763812099999,"seq":99,"group":"g","ev')  # a crash cut the last batch
    t = tables(spark, data)
    assert len(t["rebalances"]) == 2 and t["groups"]["g"]["events"] == len(journal.lines)
    t = tables(spark, data, since_ms=T0 + 30_000)
    (r,) = t["rebalances"]
    # no earlier assignment inside the range: this one is the group's first in the data
    assert (r["cause"], r["first_assignment"], r["partitions_moved"]) == ("session_timeout", True, 4)
    t = tables(spark, data, until_ms=T0 + 30_000)
    assert [r["cause"] for r in t["rebalances"]] == ["new_member"]


def test_ordering_by_ts_then_seq_and_groups_are_independent(spark: Any, journal: Any) -> None:
    stable_group(journal, "g1")
    stable_group(journal, "g2")
    journal.lines.reverse()  # file order does not matter; (ts, seq) does
    t = tables(spark, journal.write())
    assert [(r["group"], r["partitions_moved"]) for r in t["rebalances"]] == [("g1", 4), ("g2", 4)]
    assert set(t["groups"]) == {"g1", "g2"}


def test_read_journal_reads_parquet_segments_and_jsonl_from_a_path_and_a_uri(
    spark: Any, journal: Any, tmp_path: Path
) -> None:
    pytest.importorskip("pyarrow")
    from groupcoord.server.journal.roll import roll_file

    journal.create("g", 1000)
    journal.join("g", "a", 1001)
    data = journal.write("journal-1-00000.jsonl")
    roll_file(data / "journal" / "journal-1-00000.jsonl")
    only_parquet = [r.asDict() for r in J.read_journal(spark, f"file://{data}").orderBy("seq").collect()]
    assert [r["event"] for r in only_parquet] == ["group_created", "member_joined"]
    journal.lines = []
    journal.join("g", "b", 1002)
    journal.write("journal-1-00001.jsonl", extra='{"ts": 10')  # a torn last line
    for where in (data, f"file://{data}"):
        rows = J.read_journal(spark, where).orderBy("seq").collect()
        assert [(r["seq"], r["member_id"]) for r in rows] == [(1, None), (2, "a"), (3, "b")], where


def test_share_group_member_sessions_and_record_counts(spark: Any, journal: Any) -> None:
    """Share groups (docs/journal.md): member_joined/member_removed make member sessions as for the other
    group types, and the `share_records` counts of every call are summed per group."""
    journal.create("q", T0)
    journal.join("q", "qa", T0 + 1, client="worker-a")
    journal.event("q", "share_records", T0 + 2, member_id="qa", reason="fetch", acquired=10)
    journal.event(
        "q", "share_records", T0 + 3, member_id="qa", reason="acknowledge", acknowledged=7, released=3
    )
    journal.event("q", "share_records", T0 + 4, member_id="qa", reason="fetch", acquired=3)
    journal.event("q", "share_records", T0 + 5, reason="lock_expired", released=3, archived=1)
    journal.event("q", "share_records", T0 + 6, member_id="qa", reason="acknowledge", archived=2)
    journal.remove("q", "qa", T0 + 50, "session_timeout")
    stable_group(journal, "g")
    t = tables(spark, journal.write())
    q = t["groups"]["q"]
    counts = [q[f"share_records_{c}"] for c in ("acquired", "acknowledged", "released", "archived")]
    assert counts == [13, 7, 6, 3]
    assert q["members_joined"] == 1 and q["members_expired"] == 1
    assert t["sessions"]["qa"]["end_cause"] == "expired" and t["sessions"]["qa"]["duration_ms"] == 49
    g = t["groups"]["g"]
    assert [g[f"share_records_{c}"] for c in ("acquired", "acknowledged", "released", "archived")] == [
        0,
        0,
        0,
        0,
    ]
