"""A work queue on one Kafka partition with groupcoord.share (KIP-932 share groups).

Put jobs on the topic, then run as many workers as you like: each job is handed to one worker at a time,
under a lock; a worker ACCEPTs it when done, RELEASEs it to have it retried (its delivery count goes up), or
REJECTs it for good. A worker that dies holding jobs loses them to the others when the lock runs out (30 s by
default); after five deliveries a job is archived.

    groupcoord serve --share-auto-offset-reset earliest          # terminal 1 (or: make run)
    python docs/examples/work_queue.py put --jobs 20              # terminal 2
    python docs/examples/work_queue.py work --name w1             # terminals 3, 4, ...

Each worker prints one JSON line per delivery: the job, its delivery count and what the worker did with it.
Jobs whose number is a multiple of ``--flaky`` fail on their first delivery (RELEASE), so you can watch them
come back with delivery_count 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

from aiokafka import AIOKafkaProducer

from groupcoord.share import AcknowledgeType, ShareConsumer


async def put(bootstrap: str, topic: str, jobs: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(jobs):
            await producer.send_and_wait(topic, f"job-{i}".encode(), partition=0)
    finally:
        await producer.stop()


async def work(bootstrap: str, topic: str, group: str, name: str, flaky: int) -> None:
    consumer = ShareConsumer(bootstrap, group, [topic], acknowledgement_mode="explicit", max_poll_records=5)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    closer = asyncio.create_task(_close_on(stop, consumer))
    async with consumer:  # joins the share group; leaving the block closes it cleanly
        async for job in consumer:
            number = int((job.value or b"job--1").decode().rsplit("-", 1)[1])
            await asyncio.sleep(0.05)  # the work
            if flaky and number % flaky == 0 and job.delivery_count == 1:
                outcome = AcknowledgeType.RELEASE  # failed: let any worker retry it
            else:
                outcome = AcknowledgeType.ACCEPT
            consumer.acknowledge(job, outcome)
            line = {
                "worker": name,
                "job": number,
                "delivery_count": job.delivery_count,
                "outcome": outcome.name,
            }
            print(json.dumps(line), flush=True)
    closer.cancel()


async def _close_on(stop: asyncio.Event, consumer: ShareConsumer) -> None:
    await stop.wait()
    await consumer.close()  # accepted jobs are sent, held ones released; ends the `async for`


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=("put", "work"))
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="jobs")
    parser.add_argument("--group", default="workers")
    parser.add_argument("--name", default="worker")
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--flaky", type=int, default=7, help="jobs divisible by this fail once (0: none)")
    args = parser.parse_args()
    if args.command == "put":
        asyncio.run(put(args.bootstrap, args.topic, args.jobs))
    else:
        asyncio.run(work(args.bootstrap, args.topic, args.group, args.name, args.flaky))


if __name__ == "__main__":
    main()
