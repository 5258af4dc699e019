"""A work queue on one Kafka partition with groupcoord.share (KIP-932 share groups).

Put jobs on the topic, then run as many workers as you like: each job is handed to one worker at a time,
under a lock; a worker ACCEPTs it when done, RELEASEs it to have it retried (its delivery count goes up), or
REJECTs it for good. A worker that dies holding jobs loses them to the others when the lock runs out (30 s by
default); after five deliveries a job is archived.

    make run                                                      # terminal 1 (or: groupcoord serve)
    python docs/examples/work_queue.py put --jobs 20              # terminal 2
    python docs/examples/work_queue.py work --name w1             # terminals 3, 4, ...

A share group starts at the log end by default (share.auto.offset.reset=latest): jobs put before its first
worker joined would never be delivered. So both commands first set the group's share.auto.offset.reset to
earliest (IncrementalAlterConfigs on the group, as `kafka-configs.sh --alter --entity-type groups
--entity-name workers --add-config share.auto.offset.reset=earliest` does); `--from latest` skips that.

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

from groupcoord.membership.connection import Connection
from groupcoord.protocol.messages.incremental_alter_configs import (
    IncrementalAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from groupcoord.share import AcknowledgeType, ShareConsumer

GROUP_RESOURCE, SET = 32, 0  # Kafka's ConfigResource.Type.GROUP and AlterConfigOp.OpType.SET


async def start_from(bootstrap: str, group: str, where: str) -> None:
    """Set the share group's share.auto.offset.reset (before its first member joins, it decides where the
    group starts reading: latest, Kafka's default, skips what is already on the topic)."""
    host, port = bootstrap.rsplit(":", 1)
    conn = await Connection.open(host, int(port), "work-queue-example")
    try:
        config = IncrementalAlterableConfig("share.auto.offset.reset", SET, where)
        req = IncrementalAlterConfigsRequest(
            (IncrementalAlterConfigsResource(GROUP_RESOURCE, group, (config,)),), False
        )
        resp = await conn.request(44, 1, req, timeout=30)
        for r in resp.responses:  # type: ignore[attr-defined]
            if r.error_code:
                raise SystemExit(
                    f"could not set share.auto.offset.reset on {group}: {r.error_code} {r.error_message}"
                )
    finally:
        await conn.close()


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
    parser.add_argument(
        "--from",
        dest="start",
        choices=("earliest", "latest"),
        default="earliest",
        help="the group's share.auto.offset.reset, set first (default earliest: jobs put before any worker)",
    )
    args = parser.parse_args()
    if args.start == "earliest":
        asyncio.run(start_from(args.bootstrap, args.group, "earliest"))
    if args.command == "put":
        asyncio.run(put(args.bootstrap, args.topic, args.jobs))
    else:
        asyncio.run(work(args.bootstrap, args.topic, args.group, args.name, args.flaky))


if __name__ == "__main__":
    main()
