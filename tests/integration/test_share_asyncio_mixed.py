"""One share group, several kinds of client: the asyncio groupcoord.share consumer works a queue on one
partition together with the Java 4.3 KafkaShareConsumer (ShareFetch/ShareAcknowledge v2) or confluent-kafka
2.16's ShareConsumer (v1). Exact accounting: every record is accepted by a commit the broker answered
without error, by exactly one client, and each kind of client got a share."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka import AcknowledgeType as CkAck
from confluent_kafka import Producer
from confluent_kafka import ShareConsumer as CkShareConsumer

from groupcoord.share import AcknowledgeType, ShareConsumer
from tests.integration import drivers

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(300)]

TOTAL = 300


def produce_stream(bootstrap: str, total: int, chunk: int = 20, pause: float = 0.3) -> None:
    """``total`` records in chunks, spread over a few seconds so every client joins while there is work."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for start in range(0, total, chunk):
        for i in range(start, min(total, start + chunk)):
            p.produce("t", value=str(i).encode(), partition=0)
        assert p.flush(30) == 0
        time.sleep(pause)


async def asyncio_worker(bootstrap: str, accepted: Counter[int], stop: asyncio.Event) -> None:
    async with ShareConsumer(bootstrap, "g", ["t"], acknowledgement_mode="explicit", max_poll_records=5) as c:
        while not stop.is_set():
            batch = await c.poll(0.3)
            for r in batch:
                await asyncio.sleep(0.005)  # a slow worker: the other clients get their share meanwhile
                c.acknowledge(r, AcknowledgeType.ACCEPT)
            if batch and set((await c.commit()).values()) == {0}:
                for r in batch:
                    accepted[int(r.value or b"")] += 1


async def wait_all(seen: list[Counter[int]], total: int, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline and len(set().union(*seen)) < total:
        await asyncio.sleep(0.2)


def check(py: Counter[int], other: Counter[int], total: int, who: str) -> None:
    both = py + other
    assert set(both) == set(range(total)), f"never accepted: {sorted(set(range(total)) - set(both))[:20]}"
    assert max(both.values()) == 1, f"accepted twice: {[k for k, v in both.items() if v > 1][:20]}"
    assert py and other, f"both kinds should have worked: asyncio {len(py)}, {who} {len(other)}"


@pytest.fixture
def run_java() -> Iterator:
    cp = drivers.java_classpath()
    started: list[drivers.Driver] = []

    def run(main: str, *args: str) -> drivers.Driver:
        d = drivers.Driver(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, main, *args])
        started.append(d)
        return d

    yield run
    for d in started:
        d.kill()


async def test_java_and_asyncio_share_consumers_in_one_group(server_factory, run_java) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    d = run_java("ShareWorkDriver", srv.bootstrap, "t", "g")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 90
    while not d.of("polling"):
        assert d.proc.poll() is None, d.events[-5:]
        assert loop.time() < deadline, "the Java consumer never polled"
        await asyncio.sleep(0.2)
    py: Counter[int] = Counter()
    java: Counter[int] = Counter()
    stop = asyncio.Event()
    workers = [asyncio.create_task(asyncio_worker(srv.bootstrap, py, stop)) for _ in range(2)]
    producer = asyncio.create_task(asyncio.to_thread(produce_stream, srv.bootstrap, TOTAL))

    def java_accepted() -> Counter[int]:
        java.clear()
        for e in d.of("accepted"):
            java.update(int(v) for v in e["values"])
        return java

    while loop.time() < deadline + 120 and len(set(py) | set(java_accepted())) < TOTAL:
        await asyncio.sleep(0.2)
    d.go()  # stop the Java consumer: it closes cleanly
    await asyncio.to_thread(d.finish, 60)
    stop.set()
    await asyncio.wait_for(asyncio.gather(producer, *workers), 60)
    check(py, java_accepted(), TOTAL, "Java")
    assert not d.of("commit_failed"), d.of("commit_failed")[:3]


async def test_confluent_and_asyncio_share_consumers_in_one_group(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    py: Counter[int] = Counter()
    ck: Counter[int] = Counter()
    halt = threading.Event()
    errors: list[BaseException] = []

    def confluent_worker() -> None:
        c = CkShareConsumer(
            {
                "bootstrap.servers": srv.bootstrap,
                "group.id": "g",
                "share.acknowledgement.mode": "explicit",
                "max.poll.records": 5,
            }
        )
        c.subscribe(["t"])
        try:
            while not halt.is_set():
                batch = [m for m in c.poll(0.3) or [] if m.error() is None]
                for m in batch:
                    time.sleep(0.005)
                    c.acknowledge(m, CkAck.ACCEPT)
                if batch:
                    result = c.commit_sync()
                    if all(v is None for v in result.values()):
                        ck.update(int(m.value()) for m in batch)
        except BaseException as exc:  # reported to the test, which fails on it
            errors.append(exc)
        finally:
            with contextlib.suppress(Exception):
                c.close()

    thread = threading.Thread(target=confluent_worker)
    thread.start()
    stop = asyncio.Event()
    try:
        workers = [asyncio.create_task(asyncio_worker(srv.bootstrap, py, stop)) for _ in range(2)]
        await asyncio.to_thread(produce_stream, srv.bootstrap, TOTAL)
        await wait_all([py, ck], TOTAL, 120)
    finally:
        halt.set()
        stop.set()
        await asyncio.to_thread(thread.join, 60)
    await asyncio.wait_for(asyncio.gather(*workers), 60)
    assert not errors, errors
    check(py, ck, TOTAL, "confluent-kafka")
