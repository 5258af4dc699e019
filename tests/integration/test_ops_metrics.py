"""/metrics, /health and /ready of a running coordinator, scraped by a real Prometheus, with a real aiokafka group."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ROOT, free_port
from tests.integration.helpers import wait_for
from tests.integration.lag_fixture import lagging_group
from tests.integration.prometheus import Prometheus

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

DASHBOARD = ROOT / "docs" / "grafana-dashboard.json"


def http_get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def samples(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    _, text = http_get(port, "/metrics")
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(port: int, name: str, **labels: str) -> float | None:
    return samples(port).get((name, tuple(sorted(labels.items()))))


async def test_prometheus_scrape_reports_lag_of_a_real_aiokafka_group(server_factory, tmp_path: Path) -> None:
    mport = free_port()
    srv = server_factory("--metrics-port", str(mport))
    assert http_get(mport, "/health") == (200, "ok\n")
    await wait_for(lambda: http_get(mport, "/ready")[0] == 200, 60, "/ready")
    prom = Prometheus(tmp_path / "prometheus", [f"127.0.0.1:{mport}"])
    try:
        prom.wait_ready()
        consumer = await lagging_group(srv.bootstrap, "lagged", "dash")
        try:

            def lag_of(partition: str) -> list[dict]:
                return prom.query(
                    f'kafka_consumergroup_lag{{consumergroup="dash",topic="lagged",partition="{partition}"}}'
                )

            await wait_for(
                lambda: bool(lag_of("0")) and bool(lag_of("1")), 30, "prometheus to scrape the lag", 0.5
            )
            assert float(lag_of("0")[0]["value"][1]) == 7
            assert float(lag_of("1")[0]["value"][1]) == 0
            total = prom.query('kafka_consumergroup_lag_sum{consumergroup="dash",topic="lagged"}')
            assert float(total[0]["value"][1]) == 7
            members = prom.query('kafka_consumergroup_members{consumergroup="dash"}')
            assert float(members[0]["value"][1]) == 1
        finally:
            await consumer.stop()
    finally:
        prom.stop()


async def test_metrics_follow_commits_rebalances_and_requests(server_factory) -> None:
    mport = free_port()
    srv = server_factory("--metrics-port", str(mport))
    consumer = await lagging_group(srv.bootstrap, "t2", "g2")
    try:
        assert (
            value(mport, "kafka_consumergroup_current_offset", consumergroup="g2", topic="t2", partition="0")
            == 3
        )
        assert value(mport, "kafka_consumergroup_lag", consumergroup="g2", topic="t2", partition="0") == 7
        assert value(mport, "kafka_consumergroup_current_offset_sum", consumergroup="g2", topic="t2") == 7
        assert value(mport, "kafka_topic_partition_current_offset", topic="t2", partition="0") == 10
        assert value(mport, "kafka_topic_partition_oldest_offset", topic="t2", partition="1") == 0
        assert value(mport, "kafka_topic_partitions", topic="t2") == 2
        assert value(mport, "kafka_server_group_coordinator_metrics_classic_group_count", state="Stable") == 1
        assert value(mport, "kafka_server_group_coordinator_metrics_offset_count") == 2
        assert value(mport, "kafka_server_group_coordinator_metrics_offset_commit_count_total") == 2
        assert value(mport, "groupcoord_group_rebalances_total", consumergroup="g2", reason="new_member") == 1
        assert (
            value(mport, "kafka_server_group_coordinator_metrics_group_completed_rebalance_count_total") == 1
        )
        assert value(mport, "groupcoord_requests_total", api="JOIN_GROUP", error="NONE") >= 1
        assert value(mport, "groupcoord_requests_total", api="SYNC_GROUP", error="NONE") >= 1
        assert value(mport, "groupcoord_request_latency_seconds_count", api="OFFSET_COMMIT") == 1
        assert value(mport, "groupcoord_rebalance_duration_seconds_count", reason="new_member") == 1
        await wait_for(
            lambda: (value(mport, "groupcoord_requests_total", api="HEARTBEAT", error="NONE") or 0) >= 1,
            60,
            "a heartbeat to be counted",
        )
    finally:
        await consumer.stop()
    # LeaveGroup: the group empties, its lag stays (offsets are kept), the rebalance is counted with its cause
    await wait_for(
        lambda: value(mport, "kafka_consumergroup_members", consumergroup="g2") == 0, 60, "the group to empty"
    )
    assert value(mport, "groupcoord_group_rebalances_total", consumergroup="g2", reason="leave") == 1
    assert value(mport, "kafka_consumergroup_lag", consumergroup="g2", topic="t2", partition="0") == 7
    assert value(mport, "kafka_server_group_coordinator_metrics_classic_group_count", state="Empty") == 1


async def test_unknown_paths_methods_and_garbage_get_http_errors(server_factory) -> None:
    mport = free_port()
    server_factory("--metrics-port", str(mport))
    assert http_get(mport, "/nope")[0] == 404
    req = urllib.request.Request(f"http://127.0.0.1:{mport}/metrics", method="POST", data=b"x")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 405
    # a garbage request line is answered 400 and the listener keeps serving
    reader, writer = await asyncio.open_connection("127.0.0.1", mport)
    writer.write(b"\x00\x01garbage\r\n\r\n")
    assert (await reader.read()).startswith(b"HTTP/1.1 400")
    writer.close()
    assert http_get(mport, "/health")[0] == 200


def dashboard_metric_names() -> set[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert exprs, "the dashboard has no queries"
    return {n for e in exprs for n in re.findall(r"\b((?:kafka|groupcoord)_[a-z_]+)\b", e)}


async def test_every_metric_the_grafana_dashboard_queries_is_exposed(server_factory) -> None:
    mport = free_port()
    srv = server_factory("--metrics-port", str(mport))
    consumer = await lagging_group(srv.bootstrap, "t3", "g3")
    try:
        exposed = {name for name, _ in samples(mport)}
    finally:
        await consumer.stop()
    missing = sorted(dashboard_metric_names() - exposed)
    assert not missing, f"the dashboard queries series /metrics does not have: {missing}"
