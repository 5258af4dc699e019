"""kafkajs 2.2.4 against the real server.

Each scenario is one node process running `tests/drivers/kafkajs/driver.js` (all group members as consumers
in that process); the driver reports what the client saw as JSON lines and pauses at each phase while this
test checks the server's side: DescribeGroups, the journal, and committed offsets fetched by another client
(kafka-python). kafkajs has no static membership (it never sends a group.instance.id), so that scenario
exists only for the Java client.
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
DRIVER = str(drivers.DRIVERS / "kafkajs" / "driver.js")


@pytest.fixture(scope="session")
def node_path() -> str:
    return drivers.kafkajs_node_path()


@pytest.fixture
def run_kafkajs(node_path: str) -> Iterator:
    started: list[drivers.Driver] = []

    def run(*args: str) -> drivers.Driver:
        env = {"NODE_PATH": node_path, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
        d = drivers.Driver(["node", DRIVER, *args], env=env)
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


def server_view(server, group: str) -> dict[str, set[int]]:  # type: ignore[no-untyped-def]
    g = describe_group(server.host, server.port, group)
    assert g["error"] == 0 and g["state"] == "Stable" and g["protocol_type"] == "consumer"
    return {mid: {p for _, p in m["partitions"]} for mid, m in g["members"].items()}


def client_view(phase: dict) -> dict[str, set[int]]:
    return {m["member_id"]: set(m["partitions"]) for m in phase["members"]}


@pytest.mark.owns_server
def test_kafkajs_group_of_three_consumes_commits_and_two_take_over_when_one_leaves(
    groupcoord_server, run_kafkajs
) -> None:
    server, topic, group = groupcoord_server, "kafkajs-orders", "kafkajs-g3"
    d = run_kafkajs("group3", server.bootstrap, topic, group)

    consumed = d.phase("consumed")
    assert consumed["records"] == 60
    assert server_view(server, group) == client_view(consumed)
    assert sorted(p for m in consumed["members"] for p in m["partitions"]) == list(range(6))
    assert describe_group(server.host, server.port, group)["protocol"] == "RoundRobinAssigner"
    assert committed(server.bootstrap, group) == {(topic, p): 10 for p in range(6)}
    d.go()

    after = d.phase("after_leave")
    remaining = client_view(after)
    assert len(remaining) == 2 and after["left"]["member_id"] not in remaining
    assert sorted(p for ps in remaining.values() for p in ps) == list(range(6))
    assert server_view(server, group) == remaining
    assert after["records"] == 90
    assert committed(server.bootstrap, group) == {(topic, p): 15 for p in range(6)}

    def removed() -> list[tuple[str, str]]:
        events = journal_events(server.data_dir, group)
        return [(e["member_id"], e["reason"]) for e in events if e["event"] == "member_removed"]

    wait_for_sync(lambda: bool(removed()), 60, "the journal to record the leave")
    assert removed() == [(after["left"]["member_id"], "left")]
    d.go()
    d.finish()


def test_kafkajs_admin_lists_describes_fetches_sets_resets_and_deletes_groups(
    groupcoord_server, run_kafkajs
) -> None:
    server, topic, group = groupcoord_server, unique("kafkajs-admin-t"), unique("kafkajs-admin-g")
    d = run_kafkajs("admin", server.bootstrap, topic, group)

    described = d.phase("described")
    [listed] = d.admin("list")
    assert {"groupId": group, "protocolType": "consumer"} in listed["result"]
    [desc] = d.admin("describe")
    r = desc["result"]
    assert (r["state"], r["protocol"], r["protocol_type"], r["error_code"]) == (
        "Stable", "RoundRobinAssigner", "consumer", 0
    )  # fmt: skip
    assert {m["member_id"]: set(m["partitions"]) for m in r["members"]} == server_view(server, group)
    assert client_view(described) == server_view(server, group)
    [offsets] = d.admin("offsets")
    assert offsets["result"] == {f"{topic}:{p}": {"offset": 5, "metadata": None} for p in range(4)}
    assert committed(server.bootstrap, group) == {(topic, p): 5 for p in range(4)}
    [live] = d.admin("delete_live")
    assert (live["ok"], live["groups"]) == (
        False, [{"groupId": group, "errorCode": 68, "error": "NON_EMPTY_GROUP"}]
    )  # fmt: skip
    d.go()

    d.phase("set")
    [set_offsets] = d.admin("set_offsets")
    assert set_offsets["ok"], set_offsets
    assert d.admin("offsets")[1]["result"] == {
        f"{topic}:{p}": {"offset": p + 1, "metadata": None} for p in range(4)
    }
    assert committed(server.bootstrap, group) == {(topic, p): p + 1 for p in range(4)}
    assert describe_group(server.host, server.port, group)["state"] == "Empty"
    d.go()

    d.phase("reset")
    [reset] = d.admin("reset_offsets")
    assert reset["ok"], reset
    # kafkajs resets to "earliest" by committing its sentinel -2, which its consumers resolve on start
    assert d.admin("offsets")[2]["result"] == {
        f"{topic}:{p}": {"offset": -2, "metadata": None} for p in range(4)
    }
    assert committed(server.bootstrap, group) == {(topic, p): -2 for p in range(4)}
    d.go()

    d.phase("deleted")
    [deleted] = d.admin("delete")
    assert deleted["result"] == [{"groupId": group, "errorCode": 0}]
    assert group not in {g["groupId"] for g in d.admin("list")[1]["result"]}
    assert d.admin("describe")[1]["result"]["state"] == "Dead"
    assert d.admin("offsets")[3]["result"] == {
        f"{topic}:{p}": {"offset": -1, "metadata": None} for p in range(4)
    }
    [missing] = d.admin("delete_missing")
    assert missing["groups"] == [{"groupId": group, "errorCode": 69, "error": "GROUP_ID_NOT_FOUND"}]
    assert describe_group(server.host, server.port, group)["state"] == "Dead"
    assert committed(server.bootstrap, group) == {}
    d.go()
    d.finish()
