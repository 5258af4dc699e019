"""One group, three clients: aiokafka, kafka-python and confluent-kafka consumers, all on `range` only.

Whichever of them the server makes leader runs its own client's range assignor; the group must still end up
in one generation with one consistent assignment, and that assignment must be Kafka's RangeAssignor over the
member ids in sorted order. Records produced by each client's producer must be consumed by the member that
owns their partition.
"""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AioRange
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import Producer as CkProducer
from kafka import KafkaConsumer, KafkaProducer
from kafka.coordinator.assignors.range import RangePartitionAssignor as KpRange

from tests.integration.helpers import (
    PollingThread,
    describe_group,
    exact_cover,
    journal_events,
    range_assign,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(60)]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
logging.getLogger("kafka").setLevel(logging.CRITICAL)

GROUP = "g-mixed"
TOPICS = {"mixed-a": 7, "mixed-b": 3}  # uneven counts: the member order decides who gets the extra partitions


def parts(tps) -> frozenset[tuple[str, int]]:  # type: ignore[no-untyped-def]
    return frozenset((tp.topic, tp.partition) for tp in tps)


@pytest.mark.parametrize("first", ["aiokafka", "kafka-python", "confluent"])
async def test_three_clients_on_range_share_one_consistent_assignment_and_consume(
    groupcoord_server, first
) -> None:
    bootstrap = groupcoord_server.bootstrap
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
    finally:
        await admin.close()
    everything = {(t, p) for t, n in TOPICS.items() for p in range(n)}

    consumed: list[tuple[str, str, int, bytes]] = []  # (consumer, topic, partition, value)
    lock = threading.Lock()

    def record(who: str, topic: str, partition: int, value: bytes) -> None:
        with lock:
            consumed.append((who, topic, partition, value))

    aio = AIOKafkaConsumer(
        *TOPICS,
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        client_id="mixed-aiokafka",
        partition_assignment_strategy=(AioRange,),
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )

    def kp_make() -> KafkaConsumer:
        c = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=GROUP,
            client_id="mixed-kafka-python",
            partition_assignment_strategy=[KpRange],
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        # fetch the topics' metadata before subscribing: works around a kafka-python 3.0.12 bug where a leader
        # that joined without metadata can wedge on its rejoin (see tests/integration/clients.py KafkaPython.consumer)
        for t in TOPICS:
            assert c.partitions_for_topic(t)
        c.subscribe(list(TOPICS))
        return c

    def kp_records(batch) -> None:  # type: ignore[no-untyped-def]
        for tp, records in batch.items():
            for r in records:
                record("kafka-python", tp.topic, tp.partition, r.value)

    def ck_make() -> CkConsumer:
        c = CkConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "client.id": "mixed-confluent",
                "partition.assignment.strategy": "range",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "log_level": 0,
            }
        )
        c.subscribe(list(TOPICS))
        return c

    def ck_records(msg) -> None:  # type: ignore[no-untyped-def]
        if msg.error() is None:
            record("confluent", msg.topic(), msg.partition(), msg.value())

    kp: PollingThread | None = None
    ck: PollingThread | None = None
    aio_task: asyncio.Task | None = None
    try:

        async def start_aio() -> None:
            nonlocal aio_task
            await aio.start()

            async def aio_loop() -> None:
                while True:
                    batch = await aio.getmany(timeout_ms=100)
                    for tp, records in batch.items():
                        for r in records:
                            record("aiokafka", tp.topic, tp.partition, r.value)

            aio_task = asyncio.create_task(aio_loop())

        async def start_kp() -> None:
            nonlocal kp
            kp = PollingThread(
                kp_make,
                lambda c: c.poll(timeout_ms=1000),  # see tests/integration/clients.py KafkaPython.consumer
                lambda c: (
                    parts(c.assignment()),
                    c._coordinator._generation.generation_id,
                    c._coordinator._generation.member_id,
                ),
                on_records=kp_records,
                name="mixed-kp",
            )
            await asyncio.to_thread(kp.wait_ready)

        async def start_ck() -> None:
            nonlocal ck
            ck = PollingThread(
                ck_make,
                lambda c: c.poll(0.1),
                lambda c: (parts(c.assignment()), c.memberid()),
                ck_records,
                "mixed-ck",
            )
            await asyncio.to_thread(ck.wait_ready)

        starters = {"aiokafka": start_aio, "kafka-python": start_kp, "confluent": start_ck}
        # the first member of a group leads it (and keeps the lead while it rejoins), so starting `first` alone
        # makes its client's range assignor compute the three-member assignment
        await starters[first]()
        await wait_for(
            lambda: (
                describe_group(groupcoord_server.host, groupcoord_server.port, GROUP)["state"] == "Stable"
            ),
            30,
            f"{first} to form the group alone",
        )
        for name, start in starters.items():
            if name != first:
                await start()
        assert kp is not None and ck is not None

        def views() -> dict[str, tuple[str | None, frozenset]]:
            """client -> (member id, assignment), as each client sees itself."""
            kp_state = kp.state or (frozenset(), -1, None)
            ck_state = ck.state or (frozenset(), None)
            return {
                "aiokafka": (aio._coordinator.member_id, parts(aio.assignment())),
                "kafka-python": (kp_state[2], kp_state[0]),
                "confluent": (ck_state[1], ck_state[0]),
            }

        def converged() -> bool:
            if kp.state is None or ck.state is None:
                return False
            v = views()
            if not exact_cover([a for _, a in v.values()], everything):
                return False
            if kp.state[1] != aio._coordinator.generation:
                return False
            d = describe_group(groupcoord_server.host, groupcoord_server.port, GROUP)
            served = {mid: frozenset(m["partitions"]) for mid, m in d["members"].items()}
            return d["state"] == "Stable" and served == {mid: a for mid, a in v.values()}

        await wait_for(converged, 45, "the three clients to converge on one assignment")

        v = views()
        member_ids = [mid for mid, _ in v.values()]
        assert all(member_ids) and len(set(member_ids)) == 3
        assert {mid: a for mid, a in v.values()} == range_assign(member_ids, TOPICS)

        d = describe_group(groupcoord_server.host, groupcoord_server.port, GROUP)
        assert d["protocol"] == "range"
        assert {m["client_id"] for m in d["members"].values()} == {
            "mixed-aiokafka",
            "mixed-kafka-python",
            "mixed-confluent",
        }

        # the server's record of the generation agrees with both clients that expose theirs (the journal is
        # flushed in batches, so give it a moment)
        def last_stable() -> dict | None:
            stables = [
                e
                for e in journal_events(groupcoord_server.data_dir, GROUP)
                if e["event"] == "state_change" and e["state_to"] == "Stable"
            ]
            return stables[-1] if stables else None

        await wait_for(
            lambda: (last_stable() or {}).get("generation") == aio._coordinator.generation, 60, "the journal"
        )
        assert last_stable()["generation"] == kp.state[1]  # type: ignore[index]
        assert last_stable()["leader"] == v[first][0], f"expected {first} to lead"  # type: ignore[index]

        # each client's producer writes one record to every partition
        expected: set[tuple[str, int, bytes]] = set()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for t, n in TOPICS.items():
                for p in range(n):
                    value = f"aiokafka-{t}-{p}".encode()
                    await producer.send_and_wait(t, value, partition=p)
                    expected.add((t, p, value))
        finally:
            await producer.stop()

        def kp_produce() -> None:
            prod = KafkaProducer(bootstrap_servers=bootstrap)
            try:
                futures = []
                for t, n in TOPICS.items():
                    for p in range(n):
                        value = f"kafka-python-{t}-{p}".encode()
                        futures.append(prod.send(t, value, partition=p))
                        expected.add((t, p, value))
                for f in futures:
                    f.get(timeout=60)
            finally:
                prod.close(timeout=60)

        def ck_produce() -> None:
            prod = CkProducer({"bootstrap.servers": bootstrap, "log_level": 0})
            errors: list = []
            for t, n in TOPICS.items():
                for p in range(n):
                    value = f"confluent-{t}-{p}".encode()
                    prod.produce(
                        t, value, partition=p, on_delivery=lambda err, _m: err and errors.append(err)
                    )
                    expected.add((t, p, value))
            assert prod.flush(15) == 0
            assert errors == []

        await asyncio.wait_for(asyncio.to_thread(kp_produce), 30)
        await asyncio.wait_for(asyncio.to_thread(ck_produce), 30)

        def got() -> set[tuple[str, int, bytes]]:
            with lock:
                return {(t, p, value) for _, t, p, value in consumed}

        await wait_for(lambda: got() >= expected, 30, f"{len(expected)} records to be consumed")
        with lock:
            snapshot = list(consumed)
        assert len(snapshot) == len(expected)  # each record once: no member read another's partition
        owner = {name: a for name, (_, a) in views().items()}
        for who, t, p, _ in snapshot:
            assert (t, p) in owner[who], f"{who} consumed {t}-{p}, which it does not own"
        assert kp.error is None and ck.error is None, (kp.error, ck.error)
    finally:
        if aio_task is not None:
            aio_task.cancel()
            await asyncio.gather(aio_task, return_exceptions=True)
        if kp is not None:
            await asyncio.to_thread(kp.stop, lambda c: c.close())
        if ck is not None:
            await asyncio.to_thread(ck.stop, lambda c: c.close())
        await aio.stop()
