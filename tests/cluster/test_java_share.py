"""Share groups in cluster mode with the Java 4.3 KafkaShareConsumer (tests/drivers/java/ShareWorkDriver.java,
ShareFetch/ShareAcknowledge v2 to each partition's leader): three nodes each leading one partition of the
queue, the Java consumer bootstrapped at one node and asyncio consumers at the others. Exact accounting:
every record is accepted by a commit the broker answered without error, by exactly one client."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from confluent_kafka import Producer

from tests.cluster.helpers import start_nodes, wait_partitions_spread
from tests.integration import drivers
from tests.integration.test_share_asyncio_mixed import asyncio_worker, check

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOTAL = 240


def produce(bootstrap: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    for i in range(TOTAL):
        p.produce("t", value=str(i).encode(), partition=i % 3)
    assert p.flush(60) == 0


async def test_java_and_asyncio_share_consumers_over_three_leaders(server_factory, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    cp = drivers.java_classpath()
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "t:3", "--share-auto-offset-reset", "earliest")
    leases = await wait_partitions_spread(pg_url, "t", 3, list(nodes))
    assert sorted(owner for owner, _ in leases.values()) == [1, 2, 3]
    d = drivers.Driver(
        ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "ShareWorkDriver", nodes[2].bootstrap,
         "t", "g"]
    )  # fmt: skip
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 90
        while not d.of("polling"):
            assert d.proc.poll() is None, d.events[-5:]
            assert loop.time() < deadline, "the Java consumer never polled"
            await asyncio.sleep(0.2)
        py: Counter[int] = Counter()
        java: Counter[int] = Counter()
        stop = asyncio.Event()
        workers = [asyncio.create_task(asyncio_worker(nodes[n].bootstrap, py, stop)) for n in (1, 3)]
        await asyncio.to_thread(produce, nodes[1].bootstrap)

        def java_accepted() -> Counter[int]:
            java.clear()
            for e in d.of("accepted"):
                java.update(int(v) for v in e["values"])
            return java

        deadline = loop.time() + 180
        while loop.time() < deadline and len(set(py) | set(java_accepted())) < TOTAL:
            for w in workers:
                if w.done():
                    w.result()
            await asyncio.sleep(0.2)
        d.go()  # stop the Java consumer: it closes cleanly
        await asyncio.to_thread(d.finish, 60)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*workers), 60)
        check(py, java_accepted(), TOTAL, "Java")
        assert not d.of("commit_failed"), d.of("commit_failed")[:3]
    finally:
        d.kill()
