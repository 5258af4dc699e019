"""An aiokafka application switched to the KIP-848 consumer protocol by one argument.

    python docs/examples/aiokafka_consumer_protocol.py produce --count 100
    python docs/examples/aiokafka_consumer_protocol.py consume --count 100     # several at once share the work

``--bootstrap`` defaults to 127.0.0.1:9092 (``make run``, or Kafka 4.4). It commits before each revocation
(commit-on-revoke), so records move between members exactly once; it stops after ``--count`` records (0: never)
and leaves the group on the way out.
"""

from __future__ import annotations

import argparse
import asyncio

from aiokafka import AIOKafkaProducer
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.aio import AIOKafkaConsumer, ConsumerRebalanceListener


class CommitOnRevoke(ConsumerRebalanceListener):  # type: ignore[misc]
    """Commits the positions of the partitions being revoked, then lets them go."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.consumer = consumer

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        offsets = {tp: OffsetAndMetadata(await self.consumer.position(tp), "") for tp in revoked}
        await self.consumer.commit(offsets)
        print(f"revoked {sorted(tp.partition for tp in revoked)} (committed {len(offsets)})", flush=True)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        print(
            f"assigned {sorted(tp.partition for tp in assigned)} epoch={self.consumer.member_epoch}",
            flush=True,
        )


async def produce(args: argparse.Namespace) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap)
    await producer.start()
    try:
        for i in range(args.count):
            await producer.send(args.topic, f"order-{i}".encode(), key=str(i).encode())
        await producer.flush()
    finally:
        await producer.stop()
    print(f"produced {args.count}", flush=True)


async def consume(args: argparse.Namespace) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_protocol="consumer",  # the one change from a plain aiokafka consumer
        group_remote_assignor=args.assignor,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    consumer.subscribe([args.topic], listener=CommitOnRevoke(consumer))
    await consumer.start()
    print(f"member {consumer.member_id} joined {args.group}", flush=True)
    seen = 0
    try:
        async for record in consumer:
            seen += 1
            print(f"{record.partition}:{record.offset} {record.value.decode()}", flush=True)
            if args.count and seen >= args.count:
                break
        await consumer.commit()
    finally:
        await consumer.stop()  # leaves the group (member epoch -1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("mode", choices=("produce", "consume"))
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--group", default="orders-app")
    parser.add_argument("--assignor", default=None, help="uniform or range (default: the broker's)")
    parser.add_argument("--count", type=int, default=0)
    args = parser.parse_args()
    asyncio.run(produce(args) if args.mode == "produce" else consume(args))


if __name__ == "__main__":
    main()
