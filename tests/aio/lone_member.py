"""A consumer-protocol member in a process of its own (for kill -9): prints "owned N" at each assignment."""

from __future__ import annotations

import asyncio
import sys

from groupcoord.aio import AIOKafkaConsumer


async def main(bootstrap: str, group: str, topic: str) -> None:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        group_protocol="consumer",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    while True:
        await consumer.getmany(timeout_ms=200)
        print(f"owned {len(consumer.assignment())}", flush=True)
        await asyncio.sleep(0.2)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
