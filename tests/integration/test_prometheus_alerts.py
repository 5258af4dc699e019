"""docs/prometheus-alerts.yml: valid for promtool, firing on the series that should fire them, and written
against metric names a live groupcoord really exposes."""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port
from tests.integration.lag_fixture import lagging_group
from tests.integration.prometheus import promtool_binary
from tests.integration.test_ops_metrics import samples

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

RULES = ROOT / "docs" / "prometheus-alerts.yml"

#: promtool unit tests: each alert fires on a series that should trigger it, and stays quiet on one that should
#: not (a `exp_alerts: []` entry fails when the alert fires)
UNIT_TESTS = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'kafka_consumergroup_lag_sum{{consumergroup="slow",topic="orders"}}'
        values: '20000x30'
      - series: 'kafka_consumergroup_lag_sum{{consumergroup="fine",topic="orders"}}'
        values: '50x30'
      - series: 'kafka_consumergroup_current_offset_sum{{consumergroup="slow",topic="orders"}}'
        values: '100+10x30'
      - series: 'kafka_consumergroup_current_offset_sum{{consumergroup="fine",topic="orders"}}'
        values: '100x30'
    alert_rule_test:
      - eval_time: 5m
        alertname: KafkaConsumerGroupLagHigh
        exp_alerts: []
      - eval_time: 15m
        alertname: KafkaConsumerGroupLagHigh
        exp_alerts:
          - exp_labels: {{severity: warning, consumergroup: slow, topic: orders}}
            exp_annotations:
              summary: "Consumer group slow lags 20000 records on orders"
              description: "The group's committed offsets have been more than 10000 records behind the log end for 10 minutes."
      - eval_time: 25m
        alertname: KafkaConsumerGroupStalled
        exp_alerts:
          - exp_labels: {{severity: warning, consumergroup: fine, topic: orders}}
            exp_annotations:
              summary: "Consumer group fine is not committing on orders"
              description: "Lag is above 0 and the group's committed offsets have not moved for 15 minutes."
  - interval: 1m
    input_series:
      - series: 'kafka_consumergroup_lag{{consumergroup="g",topic="t",partition="0"}}'
        values: '-1x40'
      - series: 'kafka_consumergroup_lag{{consumergroup="g",topic="t",partition="1"}}'
        values: '0x40'
    alert_rule_test:
      - eval_time: 35m
        alertname: KafkaConsumerGroupPartitionNotCommitted
        exp_alerts:
          - exp_labels: {{severity: info, consumergroup: g, topic: t, partition: "0"}}
            exp_annotations:
              summary: "g has no committed offset on t-0"
              description: "The group commits other partitions of the topic but not this one (unassigned, or new)."
  - interval: 1m
    input_series:
      - series: 'groupcoord_group_rebalances_total{{consumergroup="flappy",reason="session_timeout"}}'
        values: '0+1x30'
      - series: 'groupcoord_group_rebalances_total{{consumergroup="calm",reason="new_member"}}'
        values: '1x30'
    alert_rule_test:
      - eval_time: 20m
        alertname: GroupcoordRebalanceStorm
        exp_alerts:
          - exp_labels: {{severity: warning, consumergroup: flappy}}
            exp_annotations:
              summary: "Consumer group flappy rebalanced 10 times in 10 minutes"
              description: "Frequent rebalances stop consumption each time. groupcoord_group_rebalances_total's
                `reason` label says why (session_timeout: slow or dying consumers; new_member/leave: restarts
                or autoscaling flapping)."
  - interval: 1m
    input_series:
      - series: 'groupcoord_loading{{instance="a:9404",job="groupcoord"}}'
        values: '1x10'
      - series: 'groupcoord_loading{{instance="b:9404",job="groupcoord"}}'
        values: '1 1 0x10'
      - series: 'up{{instance="a:9404",job="groupcoord"}}'
        values: '1 1 0x10'
      - series: 'up{{instance="b:9404",job="groupcoord"}}'
        values: '1x10'
    alert_rule_test:
      - eval_time: 3m
        alertname: GroupcoordNotReady
        exp_alerts: []
      - eval_time: 8m
        alertname: GroupcoordNotReady
        exp_alerts:
          - exp_labels: {{severity: critical, instance: "a:9404", job: groupcoord}}
            exp_annotations:
              summary: "groupcoord at a:9404 is still loading its state after 5 minutes"
              description: "Group APIs answer COORDINATOR_LOAD_IN_PROGRESS until the load ends."
      - eval_time: 5m
        alertname: GroupcoordDown
        exp_alerts:
          - exp_labels: {{severity: critical, instance: "a:9404", job: groupcoord}}
            exp_annotations:
              summary: "groupcoord at a:9404 does not answer scrapes"
              description: "The admin listener is unreachable: the process is down, or its event loop is stuck."
  - interval: 1m
    input_series:
      # one timer a second: all 60 samples a minute land above 1 s on the stuck loop, under 1 ms on the other
      - series: 'groupcoord_event_loop_lag_seconds_bucket{{instance="stuck",le="0.001"}}'
        values: '0x30'
      - series: 'groupcoord_event_loop_lag_seconds_bucket{{instance="stuck",le="1"}}'
        values: '0x30'
      - series: 'groupcoord_event_loop_lag_seconds_bucket{{instance="stuck",le="+Inf"}}'
        values: '0+60x30'
      - series: 'groupcoord_event_loop_lag_seconds_bucket{{instance="ok",le="0.001"}}'
        values: '0+60x30'
      - series: 'groupcoord_event_loop_lag_seconds_bucket{{instance="ok",le="1"}}'
        values: '0+60x30'
      - series: 'groupcoord_event_loop_lag_seconds_bucket{{instance="ok",le="+Inf"}}'
        values: '0+60x30'
    alert_rule_test:
      - eval_time: 20m
        alertname: GroupcoordEventLoopLag
        exp_alerts:
          - exp_labels: {{severity: warning, instance: stuck}}
            exp_annotations:
              summary: "groupcoord at stuck: event loop 99th percentile lag is 1s"
              description: "Every request (heartbeats included) waits this long; near session.timeout.ms members
                get evicted. Large scrapes (see Scrape cost in docs/operations.md) and CPU starvation are the
                usual causes."
"""


def promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([promtool_binary(), *args], capture_output=True, text=True, timeout=120)


def test_alert_rules_pass_promtool_check() -> None:
    done = promtool("check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 7 rules found" in done.stdout


def test_alert_rules_fire_on_the_series_they_are_for(tmp_path: Path) -> None:
    tests = tmp_path / "alerts_test.yml"
    tests.write_text(UNIT_TESTS.format(rules=str(RULES)))
    done = promtool("test", "rules", str(tests))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def rule_metric_names() -> set[str]:
    """Every kafka_*/groupcoord_* name in the file outside comments (expressions and the annotations' hints)."""
    text = "\n".join(ln for ln in RULES.read_text().splitlines() if not ln.lstrip().startswith("#"))
    return set(re.findall(r"\b((?:kafka|groupcoord)_[a-z_]+)\b", text))


async def test_every_metric_the_alert_rules_use_is_exposed(server_factory) -> None:
    mport = free_port()
    srv = server_factory("--metrics-port", str(mport))
    consumer = await lagging_group(srv.bootstrap, "alerted", "alerts")
    try:
        exposed = {name for name, _ in samples(mport)}
    finally:
        await consumer.stop()
    names = rule_metric_names()
    assert "groupcoord_event_loop_lag_seconds_bucket" in names and "kafka_consumergroup_lag_sum" in names
    missing = sorted(names - exposed)
    assert not missing, f"the alert rules use series /metrics does not have: {missing}"
