"""A real aiokafka group with known lag, shared by the metrics and `groupcoord groups` tests."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration.helpers import wait_for


async def lagging_group(bootstrap: str, topic: str, group: str) -> AIOKafkaConsumer:
    """Topic with 10 records on partition 0 and 4 on partition 1; the group commits 3 and 4: lag 7 and 0."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 2, 1)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(10):
            await producer.send_and_wait(topic, b"x%d" % i, partition=0)
        for i in range(4):
            await producer.send_and_wait(topic, b"y%d" % i, partition=1)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=f"{group}-client",
        enable_auto_commit=False,
        session_timeout_ms=30000,  # a loaded machine may delay heartbeats by seconds: never time the member out
        heartbeat_interval_ms=500,
    )
    await consumer.start()
    await wait_for(lambda: len(consumer.assignment()) == 2, 30, "the consumer to own both partitions")
    await consumer.commit({TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 4})
    return consumer
