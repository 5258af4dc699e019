"""A cooperative group mixing aiokafka (`CooperativeStickyAssignor`) and Java (`CooperativeStickyAssignor`)
members converges: one protocol (`cooperative-sticky`), every partition owned exactly once, balanced, and the
Java members' listeners only ever revoke partitions that then went to another member (never all of them).
"""

from __future__ import annotations

import logging

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration import drivers
from tests.integration.helpers import describe_group, exact_cover, wait_for
from tests.integration.test_cooperative_aiokafka import Member

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
JAVA_COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"


def converged(server, group: str, count: int, partitions: set[tuple[str, int]]) -> bool:  # type: ignore[no-untyped-def]
    g = describe_group(server.host, server.port, group)
    if g["state"] != "Stable" or len(g["members"]) != count or g["protocol"] != "cooperative-sticky":
        return False
    owned = [m["partitions"] for m in g["members"].values()]
    loads = [len(o) for o in owned]
    return exact_cover(owned, partitions) and max(loads) - min(loads) <= 1


def java_view(java: drivers.Driver, name: str, topic: str) -> set[tuple[str, int]]:
    """A Java member's partitions as its listener saw them: cooperative callbacks carry only the changes."""
    owned: set[tuple[str, int]] = set()
    for e in java.events:
        if e.get("member") == name and e["event"] == "assigned":
            owned |= {(topic, p) for p in e["partitions"]}
        elif e.get("member") == name and e["event"] == "revoked":
            owned -= {(topic, p) for p in e["partitions"]}
    return owned


async def test_mixed_aiokafka_and_java_cooperative_group_converges(groupcoord_server) -> None:
    server, topic, group = groupcoord_server, "coop-mixed", "coop-mixed-g"
    java_cp = drivers.java_classpath()
    admin = AIOKafkaAdminClient(bootstrap_servers=server.bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(topic, 8, 1)])
    await admin.close()
    partitions = {(topic, p) for p in range(8)}

    py = [Member(server.bootstrap, group, f"py{i}", topic=topic) for i in range(2)]
    for m in py:
        await m.start()
    await wait_for(lambda: converged(server, group, 2, partitions), 40, "2 aiokafka members")

    history = [len(m.revoked) for m in py]
    java = drivers.Driver([
        "java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", f"-Dpartition.assignment.strategy={JAVA_COOPERATIVE}",
        "-cp", java_cp, "GroupDriver", "hold", server.bootstrap, topic, group, "2",
    ])  # fmt: skip
    try:
        java.phase("running", timeout=60)  # the Java members consume while the driver waits here
        await wait_for(lambda: converged(server, group, 4, partitions), 60, "2 aiokafka + 2 Java members")
        # the aiokafka members never lost a partition they kept: revoked only what moved to a Java member
        g = describe_group(server.host, server.port, group)
        java_owned = {
            tp for m in g["members"].values() if m["client_id"].startswith("java-") for tp in m["partitions"]
        }
        for m, seen in zip(py, history, strict=True):
            revoked = {(tp.topic, tp.partition) for s in m.revoked[seen:] for tp in s}
            assert revoked <= java_owned and m.owned()

        # an aiokafka member (maybe the leader) leaves: the other three converge again
        await py[0].stop()
        await wait_for(lambda: converged(server, group, 3, partitions), 60, "1 aiokafka + 2 Java members")

        # what the Java clients' listeners were told adds up to what the coordinator says they own
        def java_agrees() -> bool:
            g = describe_group(server.host, server.port, group)
            on_server = {
                m["client_id"]: m["partitions"]
                for m in g["members"].values()
                if m["client_id"].startswith("java-")
            }
            return on_server == {name: java_view(java, name, topic) for name in on_server}

        await wait_for(java_agrees, 30, "the Java listeners to agree with the coordinator")
        java.go()
        java.phase("stopping", timeout=60)
        assert not java.of("error")
        java.go()
        java.finish()
    finally:
        java.kill()
        for m in py[1:]:
            await m.stop()
