"""The whole job (tables, summary.json, plots, report.html), and a cross-check against bench/journal_gen.py."""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.job import run_job

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_763_812_000_000


def test_outputs(spark: Any, journal: Any, tmp_path: Path) -> None:
    j = journal
    j.create("orders", T0)
    j.join("orders", "a", T0 + 1)
    j.join("orders", "b", T0 + 2)
    j.rebalance("orders", "new_member", T0 + 2, 100, 10, {"a": ["o-0", "o-1"], "b": ["o-2"]})
    j.remove("orders", "b", T0 + 5000, "session_timeout")
    j.rebalance("orders", "session_timeout", T0 + 5000, 300, 20, {"a": ["o-0", "o-1", "o-2"]})
    j.create("quiet", T0 + 7)
    out = tmp_path / "report"
    res = run_job(spark, j.write(), out)
    assert res.events == len(j.lines)
    s = json.loads((out / "summary.json").read_text())
    assert s == res.summary
    assert s["total_events"] == len(j.lines) and s["groups"] == 2
    g = s["per_group"]["orders"]
    assert g["rebalances"] == 2 and g["rebalance_p50_ms"] == 215 and g["rebalance_p99_ms"] == 317.9
    assert (g["members_expired"], g["members_left"], g["members_fenced"]) == (1, 0, 0)
    assert (g["static_rejoins_without_rebalance"], g["skip_assignments"], g["partitions_moved"]) == (0, 0, 1)
    assert s["per_group"]["quiet"]["rebalances"] == 0 and s["per_group"]["quiet"]["rebalance_p50_ms"] is None
    assert s["totals"]["causes"] == {"new_member": 1, "session_timeout": 1}
    for name, rows in (("rebalances", 2), ("member_sessions", 2), ("group_summary", 2)):
        assert spark.read.parquet(str(out / "tables" / name)).count() == rows
    page = (out / "report.html").read_text()
    for png in ("timeline.png", "durations.png", "causes.png", "partitions_moved.png"):
        assert f'src="{png}"' in page and (out / png).stat().st_size > 1000
    assert "<script" not in page and "http" not in page.replace("http-equiv", "")


def _reference(journal_dir: Path) -> dict[str, Any]:
    """An independent, event-by-event Python reading of docs/journal.md + docs/report.md definitions."""
    events = [json.loads(line) for f in sorted(journal_dir.glob("*.jsonl")) for line in f.open()]
    by_group: dict[str, list[dict]] = defaultdict(list)
    for e in events:
        by_group[e["group"]].append(e)
    causes: Counter = Counter()
    moved = moved_first = expired = rejoins = skips = 0
    for evs in by_group.values():
        evs.sort(key=lambda e: (e["ts"], e["seq"]))
        in_rebalance = False
        instance: dict[str, str] = {}
        prev: dict[str, str] | None = None
        for e in evs:
            if e["group_instance_id"]:
                for m in (e["member_id"], e["previous_member_id"]):
                    if m:
                        instance[m] = e["group_instance_id"]
            if e["event"] == "static_rejoin":
                rejoins += 1
                skips += bool(e["skip_assignment"])
            if e["event"] == "member_removed" and e["reason"] in (
                "session_timeout",
                "rebalance_timeout",
                "sync_timeout",
            ):
                expired += 1
            if e["event"] != "state_change":
                continue
            if e["state_to"] == "PreparingRebalance" and not in_rebalance:
                in_rebalance = True
                causes[e["reason"]] += 1
            elif e["state_to"] in ("Stable", "Empty", "Dead"):
                in_rebalance = False
            if e["state_to"] == "Stable" and e["assignment"] is not None:
                owners = {tp: instance.get(m, m) for m, tps in e["assignment"].items() for tp in tps}
                n = sum(1 for tp, o in owners.items() if prev is None or prev.get(tp) != o)
                if prev is None:
                    moved_first += n
                else:
                    moved += n
                prev = owners
    return {
        "events": len(events),
        "causes": dict(causes),
        "moved": moved,
        "moved_incl_first": moved + moved_first,
        "expired": expired,
        "rejoins": rejoins,
        "skips": skips,
    }


def test_matches_reference_on_generated_journal(spark: Any, tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import journal_gen
    finally:
        sys.path.remove(str(ROOT / "bench"))
    data = tmp_path / "gen"
    journal_gen.main(
        ["--out", str(data), "--events", "6000", "--groups", "12", "--workers", "1", "--seed", "7"]
    )
    ref = _reference(data / "journal")
    s = run_job(spark, data, tmp_path / "out", html=False).summary
    t = s["totals"]
    assert s["total_events"] == ref["events"]
    assert t["causes"] == ref["causes"]
    assert t["rebalances"] == sum(ref["causes"].values())
    assert (t["partitions_moved"], t["partitions_moved_incl_first"]) == (
        ref["moved"],
        ref["moved_incl_first"],
    )
    assert (t["members_expired"], t["static_rejoins_without_rebalance"], t["skip_assignments"]) == (
        ref["expired"],
        ref["rejoins"],
        ref["skips"],
    )
    assert ref["rejoins"] > 0 and ref["expired"] > 0 and ref["moved"] > 0  # the generator exercised them


def test_empty_range_still_writes_a_report(spark: Any, journal: Any, tmp_path: Path) -> None:
    journal.create("g", T0)
    out = tmp_path / "report"
    s = run_job(spark, journal.write(), out, since_ms=T0 + 1).summary
    assert (s["total_events"], s["groups"], s["totals"]["rebalances"]) == (0, 0, 0)
    assert s["totals"]["rebalance_p50_ms"] is None and s["top_groups"] == []
    assert (out / "report.html").exists() and (out / "timeline.png").exists()


def test_a_journal_version_newer_than_known_is_reported_and_warned_about(
    spark: Any, journal: Any, tmp_path: Path
) -> None:
    import io

    from groupcoord.pipeline.progress import Progress
    from groupcoord.pipeline.schema import KNOWN_JOURNAL_VERSION

    newer = KNOWN_JOURNAL_VERSION + 1
    journal.create("g", T0)
    journal.join("g", "a", T0 + 1)
    old = journal.write("journal-1000-000000.jsonl")  # the fixture's lines: v null, i.e. version 1
    journal.lines = []
    journal.event("g", "member_joined", T0 + 2, member_id="b", v=newer, new_field="a later version's field")
    journal.write("journal-2000-000000.jsonl")
    out = io.StringIO()
    s = run_job(spark, old, tmp_path / "report", progress=Progress(None, out=out), html=False).summary
    assert s["journal_versions"] == [1, newer]
    assert s["total_events"] == 3
    assert f"journal has version {newer}, newer than this report knows" in out.getvalue()


def test_consumer_group_events_leave_the_report_working(spark: Any, journal: Any, tmp_path: Path) -> None:
    """KIP-848 groups journal other states and events (docs/journal.md): the job reads them beside classic
    ones, counts their member sessions and does not count their epoch bumps as classic rebalances."""
    from tests.coordinator.consumer_group_harness import FOO, Harness

    j = journal
    j.create("orders", T0)
    j.join("orders", "a", T0 + 1)
    j.rebalance("orders", "new_member", T0 + 2, 100, 10, {"a": ["o-0"]})
    h = Harness()
    h.now = T0 + 10
    h.hb("m1", 0)
    h.hb("m1", 1, owned={FOO: frozenset(range(6))})
    h.hb("m2", 0)
    h.now += 45_001
    h.advance(0)  # both sessions expire
    for e in h.events:
        j.event(
            e["group"],
            e["event"],
            e["ts"],
            **{k: v for k, v in e.items() if k not in ("group", "event", "ts")},
        )
    out = tmp_path / "report"
    res = run_job(spark, j.write(), out)
    assert res.events == len(j.lines)
    s = json.loads((out / "summary.json").read_text())
    assert s["per_group"]["orders"]["rebalances"] == 1
    g = s["per_group"]["g"]
    assert g["members_joined"] == 2 and g["members_expired"] == 2 and g["rebalances"] == 0
