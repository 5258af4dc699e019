"""The Java client (kafka-clients 4.3.0, classic group protocol) against the real server.

Each scenario is one JVM running `tests/drivers/java/` (all group members as threads); the driver reports
what the client saw as JSON lines and pauses at each phase while this test checks the server's side:
DescribeGroups, the journal, and committed offsets fetched by another client (kafka-python).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient

from tests.integration import drivers
from tests.integration.helpers import describe_group, journal_events, wait_for_sync
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
logging.getLogger("kafka").setLevel(logging.CRITICAL)


@pytest.fixture(scope="session")
def java_cp() -> str:
    return drivers.java_classpath()


@pytest.fixture
def run_java(java_cp: str) -> Iterator:
    started: list[drivers.Driver] = []

    def run(main: str, *args: str) -> drivers.Driver:
        d = drivers.Driver(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", java_cp, main, *args])
        started.append(d)
        return d

    yield run
    for d in started:
        d.kill()


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets as another client (kafka-python's admin, OffsetFetch) sees them."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
        return {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()}
    finally:
        admin.close()


def journal_until(server, group: str, **match: object) -> list[dict]:  # type: ignore[no-untyped-def]
    """The group's journal once it holds an event with the `match` fields (lines are flushed in batches, at
    least every 200 ms)."""

    def found() -> bool:
        return any(
            all(e.get(k) == v for k, v in match.items()) for e in journal_events(server.data_dir, group)
        )

    wait_for_sync(found, 60, f"journal event {match}")
    return journal_events(server.data_dir, group)


def server_view(server, group: str) -> dict[str, set[int]]:  # type: ignore[no-untyped-def]
    g = describe_group(server.host, server.port, group)
    assert g["error"] == 0 and g["protocol_type"] == "consumer"
    return {mid: {p for _, p in m["partitions"]} for mid, m in g["members"].items()}


def client_view(phase: dict) -> dict[str, set[int]]:
    return {m["member_id"]: set(m["partitions"]) for m in phase["members"]}


@pytest.mark.owns_server
def test_java_group_of_three_consumes_commits_and_two_take_over_when_one_leaves(
    groupcoord_server, run_java
) -> None:
    server, topic, group = groupcoord_server, "java-orders", "java-g3"
    d = run_java("GroupDriver", "group3", server.bootstrap, topic, group)

    consumed = d.phase("consumed")
    assert len(consumed["members"]) == 3
    # DescribeGroups shows the three members with exactly the partitions each client says it owns
    assert describe_group(server.host, server.port, group)["state"] == "Stable"
    assert server_view(server, group) == client_view(consumed)
    assert sorted(p for m in consumed["members"] for p in m["partitions"]) == list(range(6))
    assert describe_group(server.host, server.port, group)["protocol"] == "range"  # Java's first choice
    # the 60 produced records consumed, and the commits visible to another client
    assert consumed["records"] == 60
    assert committed(server.bootstrap, group) == {(topic, p): 10 for p in range(6)}
    d.go()

    after = d.phase("after_leave")
    assert after["generation"] > consumed["generation"]
    remaining = client_view(after)
    assert len(remaining) == 2 and after["left"]["member_id"] not in remaining
    assert sorted(p for ps in remaining.values() for p in ps) == list(range(6))
    assert server_view(server, group) == remaining
    assert after["records"] == 90
    assert committed(server.bootstrap, group) == {(topic, p): 15 for p in range(6)}
    removed = [
        e for e in journal_until(server, group, event="member_removed") if e["event"] == "member_removed"
    ]
    assert [(e["member_id"], e["reason"]) for e in removed] == [(after["left"]["member_id"], "left")]
    d.go()
    d.finish()


@pytest.mark.owns_server
def test_java_static_member_restarted_inside_its_session_timeout_causes_no_rebalance(
    groupcoord_server, run_java
) -> None:
    server, topic, group = groupcoord_server, "java-static", "java-static-g"
    d = run_java("GroupDriver", "static", server.bootstrap, topic, group)

    stable = d.phase("stable")
    g = describe_group(server.host, server.port, group)
    assert g["state"] == "Stable"
    assert {m["instance"] for m in g["members"].values()} == {"inst-0", "inst-1", "inst-2"}
    assert server_view(server, group) == client_view(stable)
    generation_before = max(
        e["generation"]
        for e in journal_until(
            server, group, event="state_change", state_to="Stable", generation=stable["generation"]
        )
    )
    assert generation_before == stable["generation"]
    d.go()

    restarted = d.phase("restarted")
    old, members = restarted["old"], restarted["members"]
    new = next(m for m in members if m["instance"] == "inst-1")
    # a new member id for the same instance, the same partitions, and the same generation for everyone
    assert new["member_id"] != old["member_id"] and new["partitions"] == old["partitions"]
    assert {m["generation"] for m in members} == {stable["generation"]}
    g = describe_group(server.host, server.port, group)
    assert g["state"] == "Stable"
    assert server_view(server, group) == client_view(restarted)
    # it resumed from its predecessor's commits: only records produced after the restart
    assert restarted["restarted_values"] and all(int(v[1:]) >= 20 for v in restarted["restarted_values"])
    events = journal_until(server, group, event="static_rejoin")
    assert max(e["generation"] for e in events) == generation_before
    rejoins = [e for e in events if e["event"] == "static_rejoin"]
    assert [(e["group_instance_id"], e["previous_member_id"], e["member_id"]) for e in rejoins] == [
        ("inst-1", old["member_id"], new["member_id"])
    ]
    d.go()
    d.finish()


def test_java_admin_lists_describes_fetches_alters_removes_and_deletes_groups(
    groupcoord_server, run_java
) -> None:
    server, topic, group = groupcoord_server, unique("java-admin-t"), unique("java-admin-g")
    d = run_java("AdminDriver", "groups", server.bootstrap, topic, group)

    described = d.phase("described")
    [listed] = d.admin("list")
    assert {"group_id": group, "state": "Stable", "type": "Classic", "simple": False} in listed["result"]
    [desc] = d.admin("describe")
    assert desc["ok"], desc
    r = desc["result"]
    assert (r["state"], r["type"], r["assignor"], r["simple"], r["coordinator"]) == (
        "Stable", "Classic", "range", False, 0
    )  # fmt: skip
    g = describe_group(server.host, server.port, group)
    assert {m["member_id"]: set(m["partitions"]) for m in r["members"]} == server_view(server, group)
    assert {m["instance"] for m in r["members"]} == {"admin-inst-0", "admin-inst-1"}
    assert {m["client_id"] for m in r["members"]} == {m["client_id"] for m in g["members"].values()}
    assert {m["member_id"] for m in described["members"]} == set(g["members"])
    [offsets] = d.admin("offsets")
    assert offsets["result"] == {f"{topic}:{p}": {"offset": 5, "metadata": ""} for p in range(4)}
    assert committed(server.bootstrap, group) == {(topic, p): 5 for p in range(4)}
    [live] = d.admin("delete_live")
    assert (live["ok"], live["error"]) == (False, "GroupNotEmptyException")
    d.go()

    d.phase("altered")
    [removed] = d.admin("remove_members")
    assert removed["ok"], removed
    [unknown] = d.admin("remove_unknown_member")
    assert (unknown["ok"], unknown["error"]) == (False, "UnknownMemberIdException")
    empty = d.admin("describe")[1]["result"]
    assert (empty["state"], empty["members"]) == ("Empty", [])
    assert describe_group(server.host, server.port, group)["state"] == "Empty"
    [altered] = d.admin("alter_offsets")
    assert altered["ok"], altered
    assert d.admin("offsets")[1]["result"] == {
        f"{topic}:{p}": {"offset": p + 1, "metadata": "set-by-java-admin"} for p in range(4)
    }
    assert committed(server.bootstrap, group) == {(topic, p): p + 1 for p in range(4)}
    d.go()

    d.phase("deleted")
    [deleted] = d.admin("delete")
    assert deleted["ok"], deleted
    assert group not in {g["group_id"] for g in d.admin("list")[1]["result"]}
    gone = d.admin("describe")[2]  # DescribeGroups v6 (KIP-1043): Kafka 4.3's admin fails a deleted group
    assert (gone["ok"], gone["error"]) == (False, "GroupIdNotFoundException"), gone
    assert d.admin("offsets")[2]["result"] == {}
    [missing] = d.admin("delete_missing")
    assert (missing["ok"], missing["error"]) == (False, "GroupIdNotFoundException")
    assert describe_group(server.host, server.port, group)["state"] == "Dead"
    assert committed(server.bootstrap, group) == {}
    d.go()
    d.finish()


def test_java_admin_describes_topics_by_topic_id(groupcoord_server, run_java) -> None:
    """AdminClient.describeTopics(TopicCollection.ofTopicIds(...)) sends Metadata v12+ naming topics by id
    (with an empty name): a known id is described under its name, an unknown one fails UNKNOWN_TOPIC_ID."""
    topic = unique("java-by-id")  # a shared server keeps other tests' topics
    d = run_java("AdminDriver", "topic-ids", groupcoord_server.bootstrap, topic, "-")
    d.finish()
    [created] = d.of("created")
    [by_id] = d.admin("describe_by_id")
    assert by_id["ok"], by_id
    assert by_id["result"] == {"topic_id": created["topic_id"], "name": topic, "partitions": [0, 1, 2]}
    [unknown] = d.admin("describe_unknown_id")
    assert (unknown["ok"], unknown["error"]) == (False, "UnknownTopicIdException")


def test_java_admin_configs_cluster_and_offset_delete(groupcoord_server, run_java) -> None:
    """The Java AdminClient calls issue 13 found failing: describeConfigs (topic and broker), incremental
    alterConfigs, describeCluster with authorized operations and deleteConsumerGroupOffsets."""
    cfg_topic = unique("java-cfg")  # a shared server keeps other tests' topics
    d = run_java("AdminDriver", "configs", groupcoord_server.bootstrap, cfg_topic, unique("java-cfg-g"))
    d.finish()
    [topic] = d.admin("describe_topic")
    assert topic["ok"], topic
    r = topic["result"]
    assert (r["cleanup.policy"]["value"], r["cleanup.policy"]["source"]) == (
        "compact",
        "DYNAMIC_TOPIC_CONFIG",
    )
    assert (r["retention.ms"]["value"], r["retention.ms"]["source"]) == ("604800000", "DEFAULT_CONFIG")
    assert r["retention.bytes"]["value"] == "-1" and r["retention.ms"]["documented"]
    [broker] = d.admin("describe_broker")
    assert broker["result"]["node.id"]["read_only"] and broker["result"]["node.id"]["value"] == "0"
    assert broker["result"]["log.retention.hours"]["value"] == "168"
    [altered] = d.admin("alter_topic")
    assert altered["ok"], altered
    assert altered["result"]["cleanup.policy"]["value"] == "compact,delete"
    assert altered["result"]["retention.ms"]["value"] == "5000"
    [bad] = d.admin("alter_bad_value")
    assert (bad["ok"], bad["error"]) == (False, "InvalidConfigurationException")
    [cluster] = d.admin("describe_cluster")
    assert cluster["ok"], cluster
    assert cluster["result"]["nodes"] == [0] and cluster["result"]["controller"] == 0
    assert cluster["result"]["operations"] == sorted(
        [
            "ALTER",
            "ALTER_CONFIGS",
            "CLUSTER_ACTION",
            "CREATE",
            "DESCRIBE",
            "DESCRIBE_CONFIGS",
            "IDEMPOTENT_WRITE",
        ]
    )
    [deleted] = d.admin("delete_offsets")
    assert (deleted["ok"], deleted["result"]) == (True, [f"{cfg_topic}-1"])
    [unknown] = d.admin("delete_offsets_unknown_group")
    assert (unknown["ok"], unknown["error"]) == (False, "GroupIdNotFoundException")


def test_java_exactly_once_loop_abort_and_zombie_fencing(groupcoord_server, run_java) -> None:
    """The Java 4.x client's transactional producer with sendOffsetsToTransaction(groupMetadata): output and
    offsets commit together, an aborted transaction is invisible to read_committed readers (visible to
    read_uncommitted ones) and leaves the group's offset alone, and a second producer fences the first."""
    d = run_java(
        "TxnDriver",
        groupcoord_server.bootstrap,
        unique("java-eos-in"),
        unique("java-eos-out"),
        unique("java-eos-g"),
        unique("java-eos"),
    )
    d.finish(timeout=120)
    assert d.of("consumed")[0]["count"] == 10
    assert d.of("group_offset")[0]["offset"] == 10
    [zombie] = d.of("zombie")
    assert zombie["fenced"] and zombie["error"]["error"] in (
        "ProducerFencedException",
        "InvalidProducerEpochException",
    ), zombie
    reads = {e["isolation"]: e["values"] for e in d.of("read")}
    assert reads["read_committed"] == [f"out{i}" for i in range(10)]
    assert reads["read_uncommitted"] == [*reads["read_committed"], "doomed"]


def test_java_share_consumers_release_reject_and_share_a_partition(server_factory, run_java) -> None:  # type: ignore[no-untyped-def]
    """KIP-932 with the Java 4.3 KafkaShareConsumer (ShareFetch/ShareAcknowledge v2): two consumers of one
    share group read one partition; every accepted record is delivered once, the released one ("v0") comes back
    with delivery count 2, the rejected one ("v1") never comes back."""
    srv = server_factory("--topic", "shared:1", "--share-auto-offset-reset", "earliest")
    count = 40
    d = run_java("ShareDriver", srv.bootstrap, "shared", unique("share"), str(count))
    assert d.proc.wait(120) == 0, d.events[-5:]
    [report] = [e for e in d.events if e["event"] == "deliveries"]
    deliveries = report["list"]
    by_value: dict[str, list[int]] = {}
    for x in deliveries:
        by_value.setdefault(x["value"], []).append(x["delivery_count"])
    assert set(by_value) == {f"v{i}" for i in range(count)}
    assert sorted(by_value["v0"]) == [1, 2]
    assert by_value["v1"] == [1]
    assert all(v == [1] for k, v in by_value.items() if k not in ("v0", "v1"))


def test_java_admin_share_group_offsets(server_factory, run_java) -> None:  # type: ignore[no-untyped-def]
    """KIP-932's admin calls from the Java 4.3 Admin (DescribeShareGroupOffsets v1, AlterShareGroupOffsets v0,
    DeleteShareGroupOffsets v0) around a KafkaShareConsumer group: start offset and lag, NON_EMPTY_GROUP while
    a member is live, a reset the next consumer starts from, an unknown partition, delete, an unknown group."""
    srv = server_factory("--topic", "sa:1", "--share-auto-offset-reset", "earliest")
    d = run_java("ShareAdminDriver", srv.bootstrap, "sa", unique("share-admin"))
    assert d.proc.wait(150) == 0, d.events[-5:]
    ev = {e["event"]: e for e in d.events}
    assert sorted(ev["consumed"]["values"]) == sorted(f"v{i}" for i in range(10))
    assert ev["alter_live"]["result"]["error"] == "GroupNotEmptyException"
    assert ev["delete_live"]["result"]["error"] == "GroupNotEmptyException"
    assert ev["listed"]["offsets"] == {"sa-0": {"start_offset": 10, "lag": 0}}
    assert ev["altered"]["p0"] == "ok"
    assert ev["altered"]["p5"]["error"] == "UnknownTopicOrPartitionException"
    assert ev["listed_after_alter"]["offsets"] == {"sa-0": {"start_offset": 3, "lag": 7}}
    assert sorted(ev["consumed_after_alter"]["values"]) == [f"v{i}" for i in range(3, 10)]
    assert ev["deleted"]["result"] == "ok"
    assert ev["listed_after_delete"]["offsets"] == {}
    assert ev["delete_unknown_group"]["result"]["error"] == "GroupIdNotFoundException"


def test_java_admin_group_configs_apply_to_a_share_consumer(server_factory, run_java) -> None:  # type: ignore[no-untyped-def]
    """Group configs from the Java 4.3 Admin (IncrementalAlterConfigs / DescribeConfigs on a GROUP resource,
    GroupConfigDriver.java): the values and sources Kafka's Admin shows, Kafka's InvalidConfigurationException
    for a value out of bounds, and share.auto.offset.reset=earliest obeyed by a KafkaShareConsumer of that group
    (the broker's default is latest)."""
    srv = server_factory("--topic", "gc:1")
    d = run_java("GroupConfigDriver", srv.bootstrap, "gc", unique("group-configs"))
    assert d.proc.wait(150) == 0, d.events[-5:]
    ev = {e["event"]: e for e in d.events}
    assert ev["altered"]["result"] == "ok"
    assert ev["bad"]["result"]["error"] == "InvalidConfigurationException"
    assert "share.delivery.count.limit" in ev["bad"]["result"]["message"]
    entries = ev["described"]["entries"]
    assert entries["share.auto.offset.reset"] == {"value": "earliest", "source": "DYNAMIC_GROUP_CONFIG"}
    assert entries["share.record.lock.duration.ms"] == {"value": "20000", "source": "DYNAMIC_GROUP_CONFIG"}
    assert entries["share.delivery.count.limit"] == {"value": "5", "source": "DEFAULT_CONFIG"}
    assert sorted(ev["consumed"]["values"]) == [f"v{i}" for i in range(5)]
