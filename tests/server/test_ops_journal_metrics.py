"""Journal-derived metrics from a sequence of group events (the runtime's listener feed)."""

from __future__ import annotations

from groupcoord.server.coordinator.machine import EVENT_KEYS
from groupcoord.server.ops.metrics import JournalMetrics


def ev(ts: int, event: str, group: str = "g", **fields: object) -> dict:
    e = dict.fromkeys(EVENT_KEYS)
    e.update(ts=ts, event=event, group=group, **fields)
    return e


def sample(m: JournalMetrics, name: str, **labels: str) -> float | None:
    for family in m.collect():
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return s.value
    return None


def test_rebalance_spans_are_timed_from_preparing_to_stable_and_counted_by_their_first_cause() -> None:
    m = JournalMetrics()
    m.on_event(
        ev(1000, "state_change", state_from="Empty", state_to="PreparingRebalance", reason="new_member")
    )
    # a second cause inside the same rebalance does not start another
    m.on_event(
        ev(
            1500,
            "state_change",
            state_from="CompletingRebalance",
            state_to="PreparingRebalance",
            reason="leave",
        )
    )
    m.on_event(ev(2000, "state_change", state_from="PreparingRebalance", state_to="CompletingRebalance"))
    m.on_event(
        ev(3500, "state_change", state_from="CompletingRebalance", state_to="Stable", reason="sync_complete")
    )
    assert sample(m, "groupcoord_group_rebalances_total", consumergroup="g", reason="new_member") == 1
    assert sample(m, "groupcoord_group_rebalances_total", consumergroup="g", reason="leave") is None
    assert sample(m, "groupcoord_group_last_rebalance_duration_seconds", consumergroup="g") == 2.5
    assert sample(m, "groupcoord_rebalance_duration_seconds_count", reason="new_member") == 1
    assert sample(m, "groupcoord_rebalance_duration_seconds_bucket", reason="new_member", le="2.5") == 1
    assert sample(m, "groupcoord_rebalance_duration_seconds_bucket", reason="new_member", le="1.0") == 0
    assert sample(m, "kafka_server_group_coordinator_metrics_group_completed_rebalance_count_total") == 1


def test_static_replacements_skip_assignment_and_deleted_groups() -> None:
    m = JournalMetrics()
    m.on_event(ev(1, "static_rejoin", skip_assignment=True))
    m.on_event(ev(2, "static_rejoin", skip_assignment=False))
    m.on_event(ev(3, "member_removed", reason="static_replaced"))
    m.on_event(ev(4, "member_removed", reason="left"))
    assert sample(m, "groupcoord_group_static_member_replacements_total", consumergroup="g") == 3
    assert sample(m, "groupcoord_group_skip_assignment_total", consumergroup="g") == 1
    m.on_event(ev(5, "state_change", state_from="Stable", state_to="PreparingRebalance", reason="leave"))
    m.on_event(ev(6, "group_deleted", reason="deleted"))
    assert sample(m, "groupcoord_group_static_member_replacements_total", consumergroup="g") is None
    assert sample(m, "groupcoord_group_rebalances_total", consumergroup="g", reason="leave") is None
