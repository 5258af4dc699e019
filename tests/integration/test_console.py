"""The live web console (/ui on the admin listener): its JSON against the coordinator's own answers, its
security, and a real headless Chromium watching a real aiokafka group rebalance."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from tests.conftest import ROOT, free_port
from tests.integration.browser import chromium
from tests.integration.helpers import describe_group, journal_events, wait_for, wait_for_sync
from tests.integration.lag_fixture import lagging_group
from tests.integration.names import unique
from tests.integration.security_fixture import PLAIN_PASSWORD, PLAIN_USER, start_secure_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

SCREENSHOTS = ROOT / "docs" / "images"


def get(port: int, path: str, auth: tuple[str, str] | None = None, method: str = "GET") -> tuple[int, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    if auth is not None:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
            ctype = resp.headers.get("Content-Type", "")
            return resp.status, json.loads(body) if ctype.startswith("application/json") else body
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def metric(port: int, name: str, **labels: str) -> float | None:
    """One sample of the admin listener's /metrics (Kafka's group counts by protocol and state)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    return None


def group_page(port: int, gid: str) -> dict[str, Any]:
    status, body = get(port, "/ui/api/group?id=" + urllib.parse.quote(gid, safe=""))
    assert status == 200, (status, body)
    return body


async def test_console_json_gives_the_same_facts_as_describe_groups_and_the_journal(
    server_factory, tmp_path: Path
) -> None:
    mport = free_port()
    srv = server_factory("--metrics-port", str(mport))
    topic, gid = unique("console-json"), "orders?v=2 / #1 é"  # any valid group id reaches its own group
    consumer = await lagging_group(srv.bootstrap, topic, gid)
    try:
        await wait_for(
            lambda: group_page(mport, gid)["state"] == "Stable", 30, "the group page to say Stable"
        )
        page = group_page(mport, gid)
        described = describe_group(srv.host, srv.port, gid)
        assert page["state"] == described["state"]
        assert page["protocol"] == described["protocol"]
        assert {m["member_id"]: m["client_id"] for m in page["members"]} == {
            mid: m["client_id"] for mid, m in described["members"].items()
        }
        assert {
            m["member_id"]: {tuple(tp.rsplit("-", 1)) for tp in m["assignment"]} for m in page["members"]
        } == {mid: {(t, str(p)) for t, p in m["partitions"]} for mid, m in described["members"].items()}
        lags = {
            (p["topic"], p["partition"]): (p["committed"], p["log_end"], p["lag"]) for p in page["partitions"]
        }
        assert lags == {(topic, 0): (3, 10, 7), (topic, 1): (4, 4, 0)}
        assert page["lag"] == 7

        # the timeline closes one rebalance per state_change to Stable/Empty in the journal
        def stable_in_journal() -> int:
            return sum(
                1
                for e in journal_events(srv.data_dir, gid)
                if e["event"] == "state_change" and e["state_to"] in ("Stable", "Empty")
            )

        await wait_for(lambda: stable_in_journal() >= 1, 30, "the journal to be flushed")
        closed = [r for r in group_page(mport, gid)["timeline"] if not r["open"]]
        assert len(closed) == stable_in_journal()
        assert closed[-1]["cause"] == "new_member" and closed[-1]["generation"] == page["generation"]
        assert [j["client_id"] for j in closed[-1]["joined"]] == [f"{gid}-client"]

        status, listing = get(mport, "/ui/api/groups")
        row = next(g for g in listing["groups"] if g["group_id"] == gid)
        assert (row["type"], row["state"], row["members"], row["lag"]) == ("classic", "Stable", 1, 7)
        status, overview = get(mport, "/ui/api/overview")
        assert overview["groups_by_type"].get("classic", 0) >= 1 and overview["connections"] >= 1
        status, topics = get(mport, "/ui/api/topics")
        t = next(t for t in topics["topics"] if t["name"] == topic)
        assert [(p["log_start"], p["log_end"]) for p in t["partitions"]] == [(0, 10), (0, 4)]
        assert t["size_bytes"] > 0
    finally:
        await consumer.stop()
    assert get(mport, "/ui/api/group?id=no-such-group")[0] == 404
    assert get(mport, "/ui/api/groups", method="POST")[0] == 405
    status, html = get(mport, "/ui/")
    assert status == 200 and b"/ui/static/app.js" in html


def test_console_is_off_with_console_false(server_factory) -> None:
    mport = free_port()
    server_factory("--metrics-port", str(mport), "--console", "false")
    assert get(mport, "/ui/api/groups")[0] == 404
    assert get(mport, "/metrics")[0] == 200


def test_console_asks_for_credentials_and_shows_only_what_the_principal_may_describe(tmp_path: Path) -> None:
    mport = free_port()
    s = start_secure_server(
        tmp_path,
        "--metrics-port", str(mport),
        "--authorizer-class-name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--super-users", "User:admin",
        users=(("admin", "admin-secret"),),
    )  # fmt: skip
    try:
        assert get(mport, "/ui/api/groups")[0] == 401
        assert get(mport, "/ui/api/groups", auth=(PLAIN_USER, "wrong"))[0] == 401
        assert get(mport, "/ui/api/groups", auth=("nobody", "x"))[0] == 401
        # the super user sees the topic; bob (PLAIN, no ACLs) may describe nothing, so sees none of it
        status, admin_view = get(mport, "/ui/api/topics", auth=("admin", "admin-secret"))
        assert status == 200 and "secure" in [t["name"] for t in admin_view["topics"]]
        status, bob_view = get(mport, "/ui/api/topics", auth=(PLAIN_USER, PLAIN_PASSWORD))
        assert status == 200 and bob_view["topics"] == []
        assert get(mport, "/ui/api/overview", auth=(PLAIN_USER, PLAIN_PASSWORD))[1]["topics"] == 0
    finally:
        s.srv.kill()


BROWSER_STATE = """
const q = (s) => document.querySelector(s);
return {
  members: q('#g-members .n') && q('#g-members .n').textContent,
  state: q('#g-state .n') && q('#g-state .n').textContent,
  rows: document.querySelectorAll('#timeline-table tbody tr.rebalance').length,
  open: document.querySelectorAll('#timeline-table tbody tr.open').length,
  owned: [...document.querySelectorAll('#assignment-grid tbody tr')].map(r => r.querySelectorAll('td[data-owned]').length),
  lag: q('#g-lag') && q('#g-lag').textContent,
  group: q('#group-id') && q('#group-id').textContent,
};
"""


async def browser_state(driver: Any) -> dict[str, Any]:
    return await asyncio.to_thread(driver.execute_script, BROWSER_STATE)


async def wait_browser(driver: Any, predicate: Any, what: str, timeout: float = 60) -> dict[str, Any]:
    last: dict[str, Any] = {}

    async def check() -> bool:
        nonlocal last
        last = await browser_state(driver)
        return bool(predicate(last))

    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if await check():
            return last
        await asyncio.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}; the page showed {last}")


async def screenshot(driver: Any, path: Path, publish: bool = True) -> None:
    """Saved with the test's files; with GROUPCOORD_UPDATE_SCREENSHOTS=1 the published ones replace docs/images/."""
    await asyncio.to_thread(driver.save_screenshot, str(path))
    assert path.stat().st_size > 10_000
    if publish and os.environ.get("GROUPCOORD_UPDATE_SCREENSHOTS"):
        SCREENSHOTS.mkdir(exist_ok=True)
        shutil.copy(path, SCREENSHOTS / path.name)


async def test_a_browser_watching_the_console_sees_a_group_rebalance_as_it_happens(
    server_factory, tmp_path: Path
) -> None:
    mport = free_port()
    srv = server_factory("--metrics-port", str(mport))
    # a client-chosen id with markup in it must show as text
    topic, gid = unique("console"), unique("billing") + "<i>&x</i>"
    first = await lagging_group(srv.bootstrap, topic, gid)
    second = None
    try:
        with chromium() as driver:
            url = f"http://127.0.0.1:{mport}/ui/#/group/{urllib.parse.quote(gid, safe='')}"
            await asyncio.to_thread(driver.get, url)
            before = await wait_browser(
                driver,
                lambda s: (
                    s["group"] == gid and s["members"] == "1" and s["state"] == "Stable" and s["owned"] == [2]
                ),
                "one member owning both partitions",
            )
            assert before["lag"] == "7" and before["rows"] >= 1
            await screenshot(driver, tmp_path / "console-group-one-member.png", publish=False)

            second = AIOKafkaConsumer(
                topic,
                bootstrap_servers=srv.bootstrap,
                group_id=gid,
                client_id=f"{gid}-second",
                enable_auto_commit=False,
                session_timeout_ms=6000,
                heartbeat_interval_ms=500,
            )
            await second.start()
            after = await wait_browser(
                driver,
                lambda s: (
                    s["members"] == "2"
                    and s["state"] == "Stable"
                    and s["rows"] > before["rows"]
                    and sorted(s["owned"]) == [1, 1]
                ),
                "a new timeline row and the grid split between two members",
            )
            assert after["open"] == 0

            producer = AIOKafkaProducer(bootstrap_servers=srv.bootstrap)
            await producer.start()
            try:
                for i in range(5):
                    await producer.send_and_wait(topic, b"more%d" % i, partition=0)
            finally:
                await producer.stop()
            await wait_browser(driver, lambda s: s["lag"] == "12", "the lag to move from 7 to 12")
            await screenshot(driver, tmp_path / "console-group-rebalanced.png")

            await asyncio.to_thread(driver.get, f"http://127.0.0.1:{mport}/ui/#/groups")

            def listed() -> bool:
                rows = driver.execute_script(
                    "return [...document.querySelectorAll('#groups-table tbody tr')]"
                    ".map(r => [r.dataset.group, r.querySelector('a').textContent])"
                )
                return [gid, gid] in rows

            await wait_for(lambda: listed(), 60, "the groups page to list the group")
            await screenshot(driver, tmp_path / "console-groups.png")
    finally:
        await first.stop()
        if second is not None:
            await second.stop()


async def test_long_tables_page_by_100_rows_and_keep_their_page_across_live_updates(
    server_factory, tmp_path: Path
) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    mport = free_port()
    srv = server_factory("--metrics-port", str(mport))
    topic, gid = unique("wide"), unique("wide-group")
    admin = AIOKafkaAdminClient(bootstrap_servers=srv.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 120, 1)])
    finally:
        await admin.close()
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=srv.bootstrap, group_id=gid, heartbeat_interval_ms=500
    )
    await consumer.start()
    try:
        await wait_for(lambda: len(consumer.assignment()) == 120, 60, "the member to own 120 partitions")
        pager = """const p = document.querySelector('.pager[data-for="offsets-table"]');
            return p ? [p.textContent, document.querySelectorAll('#offsets-table tbody tr').length,
                        !!document.getElementById('assignment-list')] : null;"""
        with chromium() as driver:
            url = f"http://127.0.0.1:{mport}/ui/#/group/{urllib.parse.quote(gid, safe='')}"
            await asyncio.to_thread(driver.get, url)

            async def shows(text: str, rows: int) -> bool:
                got = await asyncio.to_thread(driver.execute_script, pager)
                return got is not None and text in got[0] and got[1] == rows and got[2]

            async def wait(text: str, rows: int) -> None:
                for _ in range(240):
                    if await shows(text, rows):
                        return
                    await asyncio.sleep(0.25)
                raise AssertionError(f"the offsets table never showed {text!r} with {rows} rows")

            await wait("rows 1–100 of 120", 100)
            await asyncio.to_thread(
                driver.execute_script,
                "document.querySelector('.pager[data-for=\"offsets-table\"] .next').click()",
            )
            await wait("rows 101–120 of 120", 20)
            before = await asyncio.to_thread(driver.execute_script, "return document.body.dataset.updated")
            for _ in range(240):  # two more polls re-render the page: it stays on the second page
                now = await asyncio.to_thread(driver.execute_script, "return document.body.dataset.updated")
                if now != before and int(now) - int(before) > 1500:
                    break
                await asyncio.sleep(0.25)
            assert await shows("rows 101–120 of 120", 20)
    finally:
        await consumer.stop()


def test_a_kip848_consumer_group_shows_its_epochs_members_and_assignment(server_factory) -> None:
    """confluent-kafka with group.protocol=consumer: the console lists the group as type consumer with its
    group epoch, each member's epoch and assigned partitions (topic ids resolved to names), and its lag."""
    from tests.integration.test_consumer_group_confluent import FLAGS, Member, create_topic, produce

    mport = free_port()
    srv = server_factory("--metrics-port", str(mport), *FLAGS)
    topic, gid = unique("kip848-console"), unique("kip848")
    create_topic(srv.bootstrap, topic, 4)
    produce(srv.bootstrap, topic, 0, 8, partitions=4)
    seen: dict[str, str] = {}
    members = [Member(srv.bootstrap, gid, topic, f"m{i}", seen) for i in range(2)]
    try:

        def settled() -> bool:
            status, page = get(mport, "/ui/api/group?id=" + urllib.parse.quote(gid, safe=""))
            if status != 200 or page["state"] != "Stable" or len(page["members"]) != 2:
                return False
            return sorted(tp for m in page["members"] for tp in m["assignment"]) == [
                f"{topic}-{p}" for p in range(4)
            ]

        wait_for_sync(settled, 90, "the console to show the consumer group stable with 4 partitions split")
        page = group_page(mport, gid)
        assert page["type"] == "consumer" and page["protocol"] == "uniform"
        assert all(m["member_epoch"] == page["generation"] for m in page["members"])
        assert sorted(m["client_id"] for m in page["members"]) == ["m0", "m1"]
        assert all(m["pending_revocation"] == [] and len(m["assignment"]) == 2 for m in page["members"])
        row = next(g for g in get(mport, "/ui/api/groups")[1]["groups"] if g["group_id"] == gid)
        assert (row["type"], row["state"], row["members"]) == ("consumer", "Stable", 2)
        assert get(mport, "/ui/api/overview")[1]["groups_by_type"].get("consumer") == 1
        group_count = "kafka_server_group_coordinator_metrics_group_count"
        assert metric(mport, group_count, protocol="consumer") == 1
        assert (
            metric(mport, "kafka_server_group_coordinator_metrics_consumer_group_count", state="stable") == 1
        )

        # the journal and the rebalance timeline: each member's join opened a rebalance that closed Stable
        def closed_rows() -> list[dict[str, Any]]:
            return [
                r for r in group_page(mport, gid)["timeline"] if not r["open"] and r["state_to"] == "Stable"
            ]

        wait_for_sync(lambda: len(closed_rows()) >= 2, 30, "two closed rebalance rows on the console")
        assert {r["cause"] for r in closed_rows()} == {"new_member"}
        members[1].close()
        wait_for_sync(
            lambda: any(j["reason"] == "left" for r in closed_rows() for j in r["left"]),
            60,
            "a rebalance row listing the member that left",
        )
        # the console reads the live event stream; the journal file is written behind it, so wait for it too
        wait_for_sync(
            lambda: any(e["event"] == "member_removed" for e in journal_events(srv.data_dir, gid)),
            60,
            "the member's removal in the journal file",
        )
        events = journal_events(srv.data_dir, gid)
        kinds = {e["event"] for e in events}
        assert {
            "group_created",
            "member_joined",
            "group_epoch",
            "target_assignment",
            "member_reconciled",
        } <= kinds
        assert {e["client_id"] for e in events if e["event"] == "member_joined"} == {"m0", "m1"}
        removed = [e for e in events if e["event"] == "member_removed"]
        assert [(e["client_id"], e["reason"]) for e in removed] == [("m1", "left")]
        done = [e for e in events if e["event"] == "member_reconciled"]
        assert all(e["duration_ms"] >= 0 and e["member_epoch"] <= e["generation"] for e in done)
    finally:
        for m in members:
            m.close()


def test_a_share_group_shows_its_members_and_share_partition_state(server_factory) -> None:
    """confluent-kafka's ShareConsumer reads 10 records and acknowledges them: the console lists a share
    group with its member, and the share partition's start offset (SPSO) moved to the log end."""
    from confluent_kafka import Producer, ShareConsumer

    mport = free_port()
    srv = server_factory(
        "--metrics-port", str(mport), "--topic", "t:1", "--share-auto-offset-reset", "earliest"
    )
    p = Producer({"bootstrap.servers": srv.bootstrap})
    for i in range(10):
        p.produce("t", value=str(i).encode(), partition=0)
    assert p.flush(30) == 0
    gid = unique("queue")
    c = ShareConsumer({"bootstrap.servers": srv.bootstrap, "group.id": gid, "client.id": "worker-1"})
    c.subscribe(["t"])
    try:
        got = 0
        page: dict[str, Any] = {}
        for _ in range(240):
            got += len([m for m in c.poll(0.25) or [] if m.error() is None])
            status, page = get(mport, "/ui/api/group?id=" + urllib.parse.quote(gid, safe=""))
            if (
                got >= 10
                and status == 200
                and page["partitions"]
                and page["partitions"][0]["committed"] == 10
            ):
                break
        assert got >= 10
        assert (page["type"], page["state"], page["protocol"]) == ("share", "Stable", "simple")
        assert [(m["client_id"], m["assignment"]) for m in page["members"]] == [("worker-1", ["t-0"])]
        (part,) = page["partitions"]
        assert (part["topic"], part["partition"], part["committed"], part["log_end"], part["lag"]) == (
            "t",
            0,
            10,
            10,
            0,
        )
        assert get(mport, "/ui/api/overview")[1]["groups_by_type"].get("share") == 1
        group_count = "kafka_server_group_coordinator_metrics_group_count"
        assert metric(mport, group_count, protocol="share") == 1
        assert metric(mport, "kafka_server_group_coordinator_metrics_share_group_count", state="stable") == 1
    finally:
        c.close()


def test_with_only_client_certificate_listeners_the_console_still_asks_for_credentials(
    tmp_path: Path,
) -> None:
    """An SSL listener requiring client certificates authenticates Kafka clients: the console asks for the
    server's users too (SCRAM here), never answering anonymously."""
    from tests.conftest import ServerProcess
    from tests.integration.certs import make_certs

    certs = make_certs(tmp_path / "certs")
    mport, sport = free_port(), free_port()
    srv = ServerProcess(
        tmp_path / "data",
        (
            "--listeners", f"SSL://127.0.0.1:{sport}",
            "--ssl-keystore-location", str(certs.server_keystore),
            "--ssl-truststore-location", str(certs.ca),
            "--ssl-client-auth", "required",
            "--add-scram", "SCRAM-SHA-512=[name=ops,password=ops-secret]",
            "--metrics-port", str(mport),
        ),
        port=sport,
    )  # fmt: skip
    srv.start()
    try:
        assert get(mport, "/ui/api/overview")[0] == 401
        assert get(mport, "/ui/api/overview", auth=("ops", "nope"))[0] == 401
        status, body = get(mport, "/ui/api/overview", auth=("ops", "ops-secret"))
        assert status == 200 and body["loading"] is False
    finally:
        srv.kill()
