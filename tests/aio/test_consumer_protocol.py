"""groupcoord.aio's AIOKafkaConsumer with group_protocol="consumer" against Kafka 4.4 and groupcoord alike
(the `oracle_target` fixture runs each scenario on both; the Kafka broker is one JVM per worker, shared).

Scale out and in under commit-on-revoke with no partition owned twice and every record consumed exactly
once; a fenced member loses its partitions and rejoins; a static member's restart moves nothing; a mixed
group with a librdkafka (confluent-kafka 2.16) consumer-protocol member."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from confluent_kafka import Consumer

from tests.aio.members import Ledger, Member, produce, until

pytestmark = [pytest.mark.integration]

PARTITIONS = 6


def values(start: int, stop: int) -> list[bytes]:
    return [str(i).encode() for i in range(start, stop)]


async def test_scale_out_and_in_exactly_once_with_commit_on_revoke(oracle_target: Any) -> None:
    topic, group = oracle_target.unique("aio-scale"), oracle_target.unique("aio-g")
    oracle_target.create_topic(topic, PARTITIONS)
    bootstrap = oracle_target.bootstrap
    ledger = Ledger()
    await produce(bootstrap, topic, values(0, 200), PARTITIONS)
    a = await Member("a", bootstrap, group, topic, ledger).start()
    b = await Member("b", bootstrap, group, topic, ledger).start()
    await until(
        lambda: len(a.consumer.assignment()) == 3 and len(b.consumer.assignment()) == 3, what="a, b split"
    )
    await produce(bootstrap, topic, values(200, 400), PARTITIONS)
    c = await Member("c", bootstrap, group, topic, ledger).start()  # a third joins under load
    await produce(bootstrap, topic, values(400, 600), PARTITIONS)
    await until(lambda: all(len(m.consumer.assignment()) == 2 for m in (a, b, c)), what="three-way split")
    await b.stop()  # one leaves (epoch -1): its partitions move with their committed offsets
    await produce(bootstrap, topic, values(600, 800), PARTITIONS)
    await until(
        lambda: len(a.consumer.assignment()) + len(c.consumer.assignment()) == PARTITIONS, what="a, c"
    )
    await until(lambda: len(ledger.seen) == 800, what="every record")
    await a.stop()
    await c.stop()
    assert ledger.violations == []
    assert sorted(ledger.seen) == sorted(values(0, 800))
    assert [v for v, n in ledger.seen.items() if n != 1] == []  # exactly once
    assert a.listener.revocations >= 1 and b.listener.revocations >= 1


async def test_fenced_member_loses_partitions_and_rejoins(oracle_target: Any) -> None:
    topic, group = oracle_target.unique("aio-fence"), oracle_target.unique("aio-g")
    oracle_target.create_topic(topic, 2)
    ledger = Ledger()
    m = await Member("m", oracle_target.bootstrap, group, topic, ledger).start()
    await until(lambda: len(m.consumer.assignment()) == 2, what="assignment")
    coordinator = m.consumer._coordinator
    member_id = m.consumer.member_id
    coordinator.member_epoch += 5  # an epoch the broker never gave: FENCED_MEMBER_EPOCH
    await until(lambda: any(how == "lost" for _, how, _ in ledger.events), what="partitions lost")
    await until(
        lambda: len(m.consumer.assignment()) == 2 and ledger.events[-1][1] == "assigned", what="rejoin"
    )
    assert m.consumer.member_id == member_id  # Java keeps its id and rejoins at epoch 0
    await produce(oracle_target.bootstrap, topic, values(0, 20), 2)
    await until(lambda: len(ledger.seen) == 20, what="consumes after rejoin")
    await m.stop()


async def test_static_member_restart_moves_nothing(oracle_target: Any) -> None:
    topic, group = oracle_target.unique("aio-static"), oracle_target.unique("aio-g")
    oracle_target.create_topic(topic, 4)
    bootstrap = oracle_target.bootstrap
    ledger = Ledger()
    s = await Member("s", bootstrap, group, topic, ledger, group_instance_id="s-1").start()
    o = await Member("o", bootstrap, group, topic, ledger, group_instance_id="o-1").start()
    await until(lambda: len(s.consumer.assignment()) == 2 and len(o.consumer.assignment()) == 2, what="split")
    before_s, before_o = set(s.consumer.assignment()), set(o.consumer.assignment())
    await s.stop()  # leave with epoch -2: the broker keeps s-1's assignment for its return
    s2 = await Member("s", bootstrap, group, topic, ledger, group_instance_id="s-1").start()
    await until(lambda: set(s2.consumer.assignment()) == before_s, what="same partitions back")
    assert set(o.consumer.assignment()) == before_o
    assert o.listener.revocations == 0 and ("o", "assigned", tuple(sorted(before_s))) not in ledger.events
    await s2.stop()
    await o.stop()


def _librdkafka_member(
    bootstrap: str, group: str, topic: str, stop: threading.Event, out: dict[str, Any]
) -> None:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    out["assigned"] = set()

    def on_assign(_: Any, parts: list[Any]) -> None:
        out["assigned"] |= {p.partition for p in parts}

    def on_revoke(_: Any, parts: list[Any]) -> None:
        out["assigned"] -= {p.partition for p in parts}

    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    try:
        while not stop.is_set():
            c.poll(0.2)
    finally:
        c.close()


async def test_mixed_group_with_librdkafka_consumer_protocol_member(oracle_target: Any) -> None:
    topic, group = oracle_target.unique("aio-mixed"), oracle_target.unique("aio-g")
    oracle_target.create_topic(topic, 4)
    ledger = Ledger()
    a = await Member("a", oracle_target.bootstrap, group, topic, ledger).start()
    await until(lambda: len(a.consumer.assignment()) == 4, what="a alone owns all")
    stop, out = threading.Event(), {}
    thread = threading.Thread(
        target=_librdkafka_member, args=(oracle_target.bootstrap, group, topic, stop, out)
    )
    thread.start()
    try:
        await until(
            lambda: len(a.consumer.assignment()) == 2 and len(out.get("assigned", ())) == 2,
            what="shared with rdkafka",
        )
        mine = {tp.partition for tp in a.consumer.assignment()}
        assert mine.isdisjoint(out["assigned"]) and mine | out["assigned"] == set(range(4))
    finally:
        stop.set()
        await asyncio.to_thread(thread.join, 60)
    await until(lambda: len(a.consumer.assignment()) == 4, what="a takes all back after rdkafka leaves")
    await a.stop()
    assert ledger.violations == []


async def test_regex_subscription_picks_up_a_topic_created_later(oracle_target: Any) -> None:
    prefix = oracle_target.unique("aio-rx")
    first, later = f"{prefix}-a", f"{prefix}-b"
    oracle_target.create_topic(first, 2)
    ledger = Ledger()
    m = Member(
        "m", oracle_target.bootstrap, oracle_target.unique("aio-g"), first, ledger, metadata_max_age_ms=1000
    )
    await m.start(pattern=f"{prefix}-.*")  # resolved by the broker (SubscribedTopicRegex)
    await until(lambda: {tp.topic for tp in m.consumer.assignment()} == {first}, what="the first topic")
    oracle_target.create_topic(later, 2)
    await until(lambda: len(m.consumer.assignment()) == 4, timeout=120, what="the later topic too")
    await produce(oracle_target.bootstrap, later, values(0, 10), 2)
    await until(lambda: len(ledger.seen) == 10, what="records of the later topic")
    await m.stop()


async def test_unsubscribe_leaves_and_subscribe_rejoins(oracle_target: Any) -> None:
    topic, group = oracle_target.unique("aio-rejoin"), oracle_target.unique("aio-g")
    oracle_target.create_topic(topic, 2)
    ledger = Ledger()
    a = await Member("a", oracle_target.bootstrap, group, topic, ledger).start()
    b = await Member("b", oracle_target.bootstrap, group, topic, ledger).start()
    await until(lambda: len(a.consumer.assignment()) == 1 and len(b.consumer.assignment()) == 1, what="split")
    b.consumer.unsubscribe()  # revoke (with the listener's commit), then leave with epoch -1
    await until(lambda: len(a.consumer.assignment()) == 2, what="a takes b's partition")
    assert b.consumer.member_epoch == 0 and ("b", "revoked", ()) not in ledger.events
    b.consumer.subscribe([topic], listener=b.listener)  # rejoin at epoch 0
    await until(
        lambda: len(a.consumer.assignment()) == 1 and len(b.consumer.assignment()) == 1, what="re-split"
    )
    assert (b.consumer.member_epoch or 0) > 0
    await produce(oracle_target.bootstrap, topic, values(0, 40), 2)
    await until(lambda: len(ledger.seen) == 40, what="both consume")
    await a.stop()
    await b.stop()
    assert ledger.violations == [], ledger.events
    assert [v for v, n in ledger.seen.items() if n != 1] == [], ledger.events


async def test_kill_9_of_a_member_moves_its_partitions_after_the_session_timeout(oracle_target: Any) -> None:
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    topic, group = oracle_target.unique("aio-kill"), oracle_target.unique("aio-g")
    oracle_target.create_topic(topic, 4)
    ledger = Ledger()
    a = await Member("a", oracle_target.bootstrap, group, topic, ledger).start()
    await until(lambda: len(a.consumer.assignment()) == 4, what="a owns all")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, str(root / "tests" / "aio" / "lone_member.py"), oracle_target.bootstrap, group, topic],
        cwd=root, stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(root)),
    )  # fmt: skip
    try:
        await until(lambda: len(a.consumer.assignment()) == 2, what="the process member takes two")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    await until(
        lambda: len(a.consumer.assignment()) == 4, timeout=120, what="a gets them back (session timeout)"
    )
    await produce(oracle_target.bootstrap, topic, values(0, 40), 4)
    await until(lambda: set(ledger.seen) == set(values(0, 40)), what="all records after the kill")
    await a.stop()
    assert ledger.violations == []
