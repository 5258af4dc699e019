"""State a coordinator must keep across a restart, written and read back only through the Kafka APIs.

`make test-compose` runs `write` against the compose `coordinator`, then `compose restart coordinator`
(SIGTERM) and `compose kill` + `start` (SIGKILL), running `check` after each: the records, a topic config,
the group and its committed offsets (with metadata) live on the named volume, so they must all come back.
The local test runs the same two functions around a restart of a server process it owns.
"""

from __future__ import annotations

import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.structs import OffsetAndMetadata

from tests.integration.helpers import kafka_python_poll

PARTITIONS = 3
RECORDS = 10  # per partition
COMMITTED = {0: 4, 1: 7, 2: 10}
RETENTION_MS = "123456789"


def names(run: str) -> tuple[str, str]:
    return f"kept-{run}", f"kept-g-{run}"


def write(bootstrap: str, run: str) -> None:
    topic, group = names(run)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1, topic_configs={"retention.ms": RETENTION_MS})])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for p in range(PARTITIONS):
            for i in range(RECORDS):
                producer.send(topic, key=b"k%d" % i, value=b"%s-%d-%d" % (run.encode(), p, i), partition=p)
        producer.flush(30)
    finally:
        producer.close()
    # metadata_max_age_ms: kafka-python's leader may join before its metadata has the new topic, assign it
    # nothing, and only rejoin when the metadata next refreshes (five minutes by default)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        session_timeout_ms=6000,
        metadata_max_age_ms=500,
    )
    try:
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < PARTITIONS:
            assert time.monotonic() < deadline, "the consumer did not get its partitions"
            kafka_python_poll(consumer, 200)
        consumer.commit(
            {TopicPartition(topic, p): OffsetAndMetadata(o, "kept", -1) for p, o in COMMITTED.items()}
        )
    finally:
        consumer.close()  # LeaveGroup: the group is Empty, its offsets stay


def check(bootstrap: str, run: str) -> None:
    topic, group = names(run)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert group in {g["group_id"] for g in admin.list_groups()}
        offsets = admin.list_group_offsets(group)[group]
        assert {
            tp.partition: (om.offset, om.metadata) for tp, om in offsets.items() if tp.topic == topic
        } == {p: (o, "kept") for p, o in COMMITTED.items()}
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])["topic"][topic]
        assert configs["retention.ms"]["value"] == RETENTION_MS
    finally:
        admin.close()
    reader = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10000)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        reader.assign(tps)
        reader.seek_to_beginning(*tps)
        values = sorted(r.value for r in reader)
        assert values == sorted(
            b"%s-%d-%d" % (run.encode(), p, i) for p in range(PARTITIONS) for i in range(RECORDS)
        )
    finally:
        reader.close()
    resumed = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        resumed.assign(tps)
        assert {tp.partition: resumed.position(tp) for tp in tps} == COMMITTED
    finally:
        resumed.close()
