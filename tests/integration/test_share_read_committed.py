"""`share.isolation.level=read_committed` (a group config): a share group delivers only committed records of
our transactions. Acquisition stops at the last stable offset, the batches of an aborted transaction are
archived instead of delivered, control batches travel as in read_uncommitted (clients skip them), and a long
poll parked behind an open transaction wakes when it commits. confluent-kafka's transactional producer writes
the records; raw ShareFetch v2 frames read them."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer, ShareConsumer

from .helpers import RawClient
from .test_group_configs import SET, alter
from .test_share_fetch_wire import ACCEPT, Member, acquired, b, topic_id

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]


def txn_producer(bootstrap: str, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    p.init_transactions(30)
    return p


def consume(bootstrap: str, group: str, want: int) -> list[bytes]:
    """Values a confluent-kafka ShareConsumer of `group` receives (implicit acknowledgement) until it has
    `want` of them or 60 s passed."""
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.subscribe(["t"])
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 60
        while len(got) < want and time.monotonic() < deadline:
            got += [m.value() for m in c.poll(0.5) or [] if m.error() is None]
        c.commit_sync()
    finally:
        c.close()
    return got


def test_read_committed_share_group_skips_aborted_and_stops_at_open_transactions(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(
        "--topic", "t:1", "--transaction-abort-timed-out-transaction-cleanup-interval-ms", "600000"
    )
    c = RawClient(srv.host, srv.port)
    for group, level in (("rc", "read_committed"), ("ru", "read_uncommitted")):
        r = alter(
            c, group, ("share.isolation.level", SET, level), ("share.auto.offset.reset", SET, "earliest")
        )
        assert r.error_code == 0, r.error_message
    p = txn_producer(srv.bootstrap, "tx-a")
    p.begin_transaction()
    p.produce("t", value=b"a0", partition=0)
    p.produce("t", value=b"a1", partition=0)
    p.commit_transaction(30)  # 0, 1 and the COMMIT marker at 2
    p.begin_transaction()
    p.produce("t", value=b"b0", partition=0)
    p.produce("t", value=b"b1", partition=0)
    p.flush(30)
    p.abort_transaction(30)  # 3, 4 and the ABORT marker at 5
    plain = Producer({"bootstrap.servers": srv.bootstrap})
    plain.produce("t", value=b"n0", partition=0)
    assert plain.flush(30) == 0  # 6
    open_txn = txn_producer(srv.bootstrap, "tx-c")
    open_txn.begin_transaction()
    open_txn.produce("t", value=b"c0", partition=0)
    open_txn.flush(30)  # 7, transaction still open: the last stable offset is 7

    tid = topic_id(c)
    rc, ru = Member(srv, "m1", tid, group="rc"), Member(srv, "m1", tid, group="ru")
    first = rc.fetch(max_wait_ms=5000)
    assert acquired(first) == [(0, 2, 1), (5, 6, 1)]  # 3-4 aborted: archived; 7 not yet stable
    everything = ru.fetch(max_wait_ms=5000)
    assert acquired(everything) == [(0, 7, 1)]

    # the aborted records are never offered again, even after the rest is released
    assert acquired(rc.fetch(acks=(b(0, 2, 2), b(5, 6, 2)), max_wait_ms=5000)) == [(0, 2, 2), (5, 6, 2)]

    # a long poll parked behind the open transaction wakes when it commits
    done: dict[str, object] = {}

    def poll() -> None:
        done["r"] = rc.fetch(acks=(b(0, 2, ACCEPT), b(5, 6, ACCEPT)), max_wait_ms=30000)

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.5)  # not a timing assertion: the fetch may park before or after the commit, both answer c0
    open_txn.commit_transaction(30)  # the COMMIT marker at 8
    t.join(60)
    assert not t.is_alive()
    got = done["r"]
    if not acquired(got):  # answered before the commit (acknowledgements only): fetch again
        got = rc.fetch(max_wait_ms=10000)
    assert acquired(got) == [(7, 8, 1)]
    # a real share consumer of a read_committed group: the committed records only
    assert (
        alter(
            c,
            "cf",
            ("share.isolation.level", SET, "read_committed"),
            ("share.auto.offset.reset", SET, "earliest"),
        ).error_code
        == 0
    )
    assert sorted(consume(srv.bootstrap, "cf", 4)) == [b"a0", b"a1", b"c0", b"n0"]
