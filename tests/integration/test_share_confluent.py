"""KIP-932 share groups with a real client: confluent-kafka 2.16's ShareConsumer (librdkafka 2.16, which sends
ShareGroupHeartbeat v1, ShareFetch v1 and ShareAcknowledge v1) against the real server.

Two consumers share one partition and every accepted record is delivered once; a released record comes back
with a higher delivery count; a rejected one never does; a record whose lock expires is delivered again to
another consumer; the delivery-count limit archives a record that keeps being released."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]


def produce(bootstrap: str, n: int, start: int = 0) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + n):
        p.produce("t", value=str(i).encode(), partition=0)
    assert p.flush(30) == 0


def consumer(bootstrap: str, group: str = "g", **extra: Any) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})
    c.subscribe(["t"])
    return c


def poll_values(c: ShareConsumer, timeout: float = 1.0) -> list[Any]:
    return [m for m in c.poll(timeout) or [] if m.error() is None]


def test_two_consumers_share_a_partition_each_record_once(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    total = 300
    produce(srv.bootstrap, total)
    seen: list[Counter[int]] = [Counter(), Counter()]
    stop = threading.Event()

    def run(i: int) -> None:
        c = consumer(srv.bootstrap, **{"max.poll.records": 7})
        try:
            while not stop.is_set():
                for m in poll_values(c, 0.5):
                    seen[i][int(m.value())] += 1
                    time.sleep(0.002)  # a slow consumer: the other one gets its share meanwhile
            c.commit_sync()
        finally:
            c.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(set(seen[0]) | set(seen[1])) < total:
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(60)
    both = seen[0] + seen[1]
    assert set(both) == set(range(total))
    assert max(both.values()) == 1, "an accepted record was delivered twice"
    assert seen[0] and seen[1], "both consumers should have received records"


def test_release_redelivers_and_reject_archives(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    produce(srv.bootstrap, 4)
    c = consumer(srv.bootstrap, **{"share.acknowledgement.mode": "explicit"})
    try:
        first: list[Any] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(first) < 4:
            batch = poll_values(c)
            for m in batch:
                kind = {0: AcknowledgeType.RELEASE, 1: AcknowledgeType.REJECT}.get(
                    int(m.value()), AcknowledgeType.ACCEPT
                )
                c.acknowledge(m, kind)
            first += batch
            if batch:
                c.commit_sync()
        assert sorted(int(m.value()) for m in first) == [0, 1, 2, 3]
        assert all(m.delivery_count() == 1 for m in first)
        again: list[Any] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not again:
            again = poll_values(c)
            for m in again:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
            if again:
                c.commit_sync()
        # only the released record comes back, delivered for the second time; the rejected one never does
        assert [(int(m.value()), m.delivery_count()) for m in again] == [(0, 2)]
        assert poll_values(c, 2.0) == []
    finally:
        c.close()


def test_lock_expiry_redelivers_to_another_consumer(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(
        "--topic",
        "t:1",
        "--share-auto-offset-reset",
        "earliest",
        "--group-share-record-lock-duration-ms",
        "1000",
    )
    produce(srv.bootstrap, 3)
    holder = consumer(srv.bootstrap, **{"share.acknowledgement.mode": "explicit"})
    try:
        held: list[Any] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(held) < 3:
            held += poll_values(holder)
        assert sorted(int(m.value()) for m in held) == [0, 1, 2]
        # the holder never acknowledges: after 1 s the locks expire and another consumer gets the records
        other = consumer(srv.bootstrap)
        try:
            got: list[Any] = []
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(got) < 3:
                got += poll_values(other)
            assert sorted(int(m.value()) for m in got) == [0, 1, 2]
            assert all(m.delivery_count() == 2 for m in got)
            other.commit_sync()
        finally:
            other.close()
    finally:
        holder.close()


def test_delivery_count_limit_archives(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(
        "--topic", "t:1", "--share-auto-offset-reset", "earliest", "--group-share-delivery-count-limit", "3"
    )
    produce(srv.bootstrap, 1)
    c = consumer(srv.bootstrap, **{"share.acknowledgement.mode": "explicit"})
    try:
        counts = []
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            batch = poll_values(c)
            for m in batch:
                counts.append(m.delivery_count())
                c.acknowledge(m, AcknowledgeType.RELEASE)
            if batch:
                c.commit_sync()
            if len(counts) >= 3:
                break
        assert counts == [1, 2, 3]
        assert poll_values(c, 3.0) == []  # archived after its third delivery
    finally:
        c.close()


def test_kill_9_then_each_record_accepted_exactly_once(server_factory) -> None:  # type: ignore[no-untyped-def]
    """Step 5 end to end: a consumer accepts part of the records (commit_sync returns once they are durable),
    holds more without acknowledging, and the server is killed -9. After the restart a new consumer gets
    exactly the records that were not accepted: none accepted is delivered again, none unaccepted is lost."""
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    produce(srv.bootstrap, 50)
    c = consumer(srv.bootstrap, **{"share.acknowledgement.mode": "explicit", "max.poll.records": 20})
    accepted: set[int] = set()
    held: set[int] = set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(accepted) < 20:
        batch = poll_values(c)
        for m in batch:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
            accepted.add(int(m.value()))
        if batch:
            c.commit_sync()
    while time.monotonic() < deadline and not held:
        # polled again: these stay acquired, never acknowledged (commit_sync above covered the earlier batch)
        held = {int(m.value()) for m in poll_values(c)}
    assert accepted and held and not accepted & held
    srv.kill()
    srv.start()
    after = consumer(srv.bootstrap, group="g")
    got: Counter[int] = Counter()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(got) < 50 - len(accepted):
            for m in poll_values(after):
                got[int(m.value())] += 1
        after.commit_sync()
    finally:
        after.close()
    assert set(got) == set(range(50)) - accepted
    assert held <= set(got) and max(got.values()) == 1
    with contextlib.suppress(Exception):
        c.close()  # its broker was killed under it
